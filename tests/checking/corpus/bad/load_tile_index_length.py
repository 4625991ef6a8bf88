# expect: TL023 3:22
def k(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"]):
    t = load_tile(x, (tile_id(0),), (BM, BN))
    z.store(t)
