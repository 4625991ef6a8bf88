"""Row-wise fused kernels: softmax, layernorm and rmsnorm over the last axis.

Each kernel instance owns ``BR`` whole rows (``BN`` is the row length rounded up to a power of
two; the padding columns are masked out of every reduction and never stored). Statistics are
computed in f32 whatever the storage dtype, except softmax's row maximum: the maximum of
storage-dtype values is exact in that dtype, and taking it there keeps a long row's f32 copy out
of the registers for one pass (rows of 32768 f16: 1.15x -> 1.18x PyTorch on an H100). Softmax
pads ragged rows with -inf (``pad="neg_inf"``); rows of a power-of-two length need no padding
(``pad="zero"``), which lets the loads vectorise; likewise layernorm masks the padding columns
out of its variance (``centered``) only when rows are ragged. Each row takes one reciprocal and
multiplies, rather than dividing every element (a division is a multi-instruction sequence on the
GPU).
"""
from cutile_lab.kernels.library import template

CENTERED_EXACT = "t - mean"
CENTERED_RAGGED = "where(reshape(arange(BN, dtype=i32) < n, (1, BN)), t - mean, 0.0)"


def substitutions(family: str, dt: str, cols: int, hints: str = "") -> dict:
    """What a row-wise template needs for rows of ``cols`` columns."""
    exact = cols == 1 << max(0, (cols - 1).bit_length())
    subs = {"dt": dt, "hints": hints}
    if family == "softmax":
        subs["pad"] = "zero" if exact else "neg_inf"
    if family == "layernorm":
        subs["centered"] = CENTERED_EXACT if exact else CENTERED_RAGGED
    return subs

SOFTMAX = template('''
@kernel(opt_level=3{hints})
def softmax_{dt}(out: Mut[Tensor[{dt}, "BR, BN"]], x: Tensor[{dt}, "?, ?"]):
    t = load_tile_like(x, out, padding="{pad}")
    e = exp2((t.astype(f32) - max(t, axis=1, keepdims=True).astype(f32)) * 1.4426950408889634,
             flush_to_zero=True)
    out.store((e * (1.0 / sum(e, axis=1, keepdims=True))).astype({dt}))
''')

LAYERNORM = template('''
@kernel(opt_level=3{hints})
def layernorm_{dt}(out: Mut[Tensor[{dt}, "BR, BN"]], x: Tensor[{dt}, "?, ?"],
                   w: Tensor[{dt}, "?"], b: Tensor[{dt}, "?"], n: i32, eps: f32):
    t = load_tile_like(x, out).astype(f32)
    mean = sum(t, axis=1, keepdims=True) / n
    d = {centered}
    rstd = rsqrt(sum(d * d, axis=1, keepdims=True) / n + eps)
    tw = reshape(load_tile(w, (0,), (BN,)).astype(f32), (1, BN))
    tb = reshape(load_tile(b, (0,), (BN,)).astype(f32), (1, BN))
    out.store((d * rstd * tw + tb).astype({dt}))
''')

RMSNORM = template('''
@kernel(opt_level=3{hints})
def rmsnorm_{dt}(out: Mut[Tensor[{dt}, "BR, BN"]], x: Tensor[{dt}, "?, ?"],
                 w: Tensor[{dt}, "?"], n: i32, eps: f32):
    t = load_tile_like(x, out).astype(f32)
    rstd = rsqrt(sum(t * t, axis=1, keepdims=True) / n + eps)
    tw = reshape(load_tile(w, (0,), (BN,)).astype(f32), (1, BN))
    out.store((t * rstd * tw).astype({dt}))
''')
