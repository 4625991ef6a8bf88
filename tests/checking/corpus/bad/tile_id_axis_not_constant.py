# expect: TL043 3:31
def k(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"], a: i32):
    t = load_tile(x, (tile_id(a), tile_id(1)), (BM, BN))
    z.store(t)
