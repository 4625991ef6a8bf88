"""Row-wise fused kernels: softmax, layernorm and rmsnorm over the last axis.

Each kernel instance owns ``BR`` whole rows (``BN`` is the row length rounded up to a power of
two; the padding columns are masked out of every reduction and never stored). Statistics are
computed in f32 whatever the storage dtype. Softmax pads ragged rows with -inf
(``pad="neg_inf"``); rows of a power-of-two length need no padding (``pad="zero"``), which lets
the loads vectorise.
"""
from cutile_lab.kernels.library import template

SOFTMAX = template('''
def softmax_{dt}(out: Mut[Tensor[{dt}, "BR, BN"]], x: Tensor[{dt}, "?, ?"]):
    t = load_tile_like(x, out, padding="{pad}").astype(f32)
    e = exp(t - max(t, axis=1, keepdims=True))
    out.store((e / sum(e, axis=1, keepdims=True)).astype({dt}))
''')

LAYERNORM = template('''
def layernorm_{dt}(out: Mut[Tensor[{dt}, "BR, BN"]], x: Tensor[{dt}, "?, ?"],
                   w: Tensor[{dt}, "?"], b: Tensor[{dt}, "?"], n: i32, eps: f32):
    t = load_tile_like(x, out).astype(f32)
    mean = sum(t, axis=1, keepdims=True) / n
    inside = reshape(arange(BN, dtype=i32) < n, (1, BN))
    d = where(inside, t - mean, 0.0)
    rstd = rsqrt(sum(d * d, axis=1, keepdims=True) / n + eps)
    tw = reshape(load_tile(w, (0,), (BN,)).astype(f32), (1, BN))
    tb = reshape(load_tile(b, (0,), (BN,)).astype(f32), (1, BN))
    out.store((d * rstd * tw + tb).astype({dt}))
''')

RMSNORM = template('''
def rmsnorm_{dt}(out: Mut[Tensor[{dt}, "BR, BN"]], x: Tensor[{dt}, "?, ?"],
                 w: Tensor[{dt}, "?"], n: i32, eps: f32):
    t = load_tile_like(x, out).astype(f32)
    rstd = rsqrt(sum(t * t, axis=1, keepdims=True) / n + eps)
    tw = reshape(load_tile(w, (0,), (BN,)).astype(f32), (1, BN))
    out.store((t * rstd * tw).astype({dt}))
''')
