def batched_add(z: Mut[Tensor[f32, "1, BM, BN"]], x: Tensor[f32, "?, ?, ?"],
                y: Tensor[f32, "?, ?, ?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))
