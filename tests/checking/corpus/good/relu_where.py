def relu(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"]):
    t = load_tile_like(x, z)
    z.store(where(t > 0, t, 0.0))
