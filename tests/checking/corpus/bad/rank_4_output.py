# expect: TL040 2:7
def k(z: Mut[Tensor[f32, "1, 1, BM, BN"]], x: Tensor[f32, "?, ?, ?, ?"]):
    z.store(load_tile_like(x, z))
