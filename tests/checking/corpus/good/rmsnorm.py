def rmsnorm(out: Mut[Tensor[bf16, "1, N"]], x: Tensor[bf16, "?, N"], w: Tensor[bf16, "N"],
            eps: f32):
    t = load_tile_like(x, out).astype(f32)
    ms = sum(t * t, axis=1, keepdims=True) / N
    tw = reshape(load_tile(w, (0,), (N,)), (1, N)).astype(f32)
    y = t * rsqrt(ms + eps) * tw
    out.store(y.astype(bf16))
