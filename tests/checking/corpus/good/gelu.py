def gelu(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    inner = 0.7978845608 * (t + 0.044715 * t * t * t)
    z.store(0.5 * t * (1.0 + tanh(inner)))
