import cuda.tile as ct


def row_stats(t):
    m = ct.max(t, axis=1, keepdims=True)
    e = ct.exp(t - m)
    return e, ct.sum(e, axis=1, keepdims=True)


def k(out: Mut[Tensor[f32, "BR, BN"]], x: Tensor[f32, "?, ?"]):
    e, s = row_stats(load_tile_like(x, out))
    out.store(e / s)
