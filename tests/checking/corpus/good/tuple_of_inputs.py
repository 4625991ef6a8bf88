def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    a, b = x, y
    ta, tb = load_tile_like(a, z), load_tile_like(b, z)
    z.store(ta * tb)
