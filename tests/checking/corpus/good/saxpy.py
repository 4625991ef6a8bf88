def saxpy(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"], alpha: f32):
    z.store(alpha * load_tile_like(x, z) + load_tile_like(y, z))
