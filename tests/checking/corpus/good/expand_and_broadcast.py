def k(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"], b: Tensor[f32, "?"]):
    bias = expand_dims(load_tile(b, (tile_id(1),), (BN,)), 0)
    z.store(load_tile_like(x, z) + broadcast_to(bias, (BM, BN)))
