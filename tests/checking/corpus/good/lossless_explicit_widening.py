def k(z: Mut[Tensor[f32, "B"]], x: Tensor[i16, "?"]):
    z.store(load_tile_like(x, z).astype(f32))
