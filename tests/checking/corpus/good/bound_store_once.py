def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    put = z.store
    put(exp(load_tile_like(x, z)))
