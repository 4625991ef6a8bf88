def accumulate(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(z.load() + load_tile_like(x, z))
