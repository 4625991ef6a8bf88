def clamp_store(dst, t, lo):
    if lo > 0.0:
        dst.store(maximum(t, lo))
    else:
        dst.store(t)


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], lo: f32):
    clamp_store(z, load_tile_like(x, z), lo)
