def clamp_or_copy(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], lo: f32):
    t = load_tile_like(x, z)
    if lo < 0:
        z.store(t)
        return
    z.store(maximum(t, lo))
