def k(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"]):
    flat = reshape(load_tile_like(x, z), (BN * BM,))
    z.store(reshape(flat, (BM, BN)))
