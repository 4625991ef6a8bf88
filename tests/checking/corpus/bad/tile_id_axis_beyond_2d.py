# expect: TL043 3:43
def k(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"]):
    t = load_tile(x, (tile_id(0), tile_id(2)), (BM, BN))
    z.store(t)
