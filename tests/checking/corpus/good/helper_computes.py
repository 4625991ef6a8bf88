import cuda.tile as ct


def gelu(t):
    return 0.5 * t * (1.0 + ct.tanh(0.7978845608 * (t + 0.044715 * t * t * t)))


def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(gelu(load_tile_like(x, z)))
