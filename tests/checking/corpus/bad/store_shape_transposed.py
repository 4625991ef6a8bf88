# expect: TL016 4:13
def k(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"]):
    t = load_tile(x, (tile_id(0), tile_id(1)), (BN, BM))
    z.store(t)
