def layernorm(out: Mut[Tensor[f32, "1, N"]], x: Tensor[f32, "?, N"], w: Tensor[f32, "N"],
              b: Tensor[f32, "N"], eps: f32):
    t = load_tile_like(x, out)
    mean = sum(t, axis=1, keepdims=True) / N
    d = t - mean
    var = sum(d * d, axis=1, keepdims=True) / N
    tw = reshape(load_tile(w, (0,), (N,)), (1, N))
    tb = reshape(load_tile(b, (0,), (N,)), (1, N))
    out.store(d * rsqrt(var + eps) * tw + tb)
