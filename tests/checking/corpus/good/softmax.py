def softmax(out: Mut[Tensor[f32, "1, N"]], x: Tensor[f32, "?, N"]):
    t = load_tile_like(x, out)
    m = max(t, axis=1, keepdims=True)
    e = exp(t - m)
    out.store(e / sum(e, axis=1, keepdims=True))
