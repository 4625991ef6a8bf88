SCALE = 0.5

def halve(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) * SCALE)
