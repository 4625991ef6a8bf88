"""Tile-language kernels as source text, shared by the simulator's tests (and any other suite).

Each entry is a cell's worth of source; ``kernel(name)`` parses the one that defines ``name``.
Lines marked ``# <-`` are where tests expect diagnostics to point.
"""
from __future__ import annotations

import functools

ADD = '''
def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    tx = load_tile_like(x, z)
    ty = load_tile_like(y, z)
    z.store(tx + ty)
'''

ADD_2D = '''
def add2d(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"], y: Tensor[f32, "?, ?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))
'''

AXPY_F16 = '''
def axpy(z: Mut[Tensor[f16, "B"]], x: Tensor[f16, "?"], y: Tensor[f16, "?"], alpha: f32):
    tx = load_tile_like(x, z)
    ty = load_tile_like(y, z)
    z.store((alpha * tx.astype(f32) + ty.astype(f32)).astype(f16))
'''

SOFTMAX = '''
def softmax(out: Mut[Tensor[f32, "1, N"]], x: Tensor[f32, "?, N"]):
    t = load_tile_like(x, out)
    m = max(t, axis=1, keepdims=True)
    e = exp(t - m)
    out.store(e / sum(e, axis=1, keepdims=True))
'''

# rows of any width: the tile is a power of two wide and the load pads with -inf
SOFTMAX_RAGGED = '''
def softmax_ragged(out: Mut[Tensor[f32, "1, BN"]], x: Tensor[f32, "?, ?"]):
    t = load_tile(x, (tile_id(0), 0), (1, BN), padding_mode=ct.PaddingMode.NEG_INF)
    e = exp(t - max(t, axis=1, keepdims=True))
    out.store(e / sum(e, axis=1, keepdims=True))
'''

LAYERNORM = '''
def layernorm(out: Mut[Tensor[f32, "1, N"]], x: Tensor[f32, "?, N"], w: Tensor[f32, "N"],
              b: Tensor[f32, "N"], eps: f32):
    t = load_tile_like(x, out)
    mean = sum(t, axis=1, keepdims=True) / N
    xc = t - mean
    var = sum(xc * xc, axis=1, keepdims=True) / N
    tw = load_tile(w, (0,), (N,)).reshape((1, N))
    tb = load_tile(b, (0,), (N,)).reshape((1, N))
    out.store(xc * rsqrt(var + eps) * tw + tb)
'''

RMSNORM_F16 = '''
def rmsnorm(out: Mut[Tensor[f16, "1, N"]], x: Tensor[f16, "?, N"], w: Tensor[f16, "N"],
            eps: f32):
    t = load_tile_like(x, out).astype(f32)
    ms = sum(t * t, axis=1, keepdims=True) / N
    tw = load_tile(w, (0,), (N,)).astype(f32).reshape((1, N))
    out.store((t * rsqrt(ms + eps) * tw).astype(f16))
'''

GEMM_F16 = '''
def gemm_f16(c: Mut[Tensor[f32, "BM, BN"]], a: Tensor[f16, "?, ?"], b: Tensor[f16, "?, ?"],
             BK: Const[int]):
    acc = full((BM, BN), 0, dtype=f32)
    for k in range(num_tiles(a, 1, (BM, BK))):
        ta = load_tile(a, (tile_id(0), k), (BM, BK))
        tb = load_tile(b, (k, tile_id(1)), (BK, BN))
        acc = mma(ta, tb, acc)
    c.store(acc)
'''

GEMM_F32 = '''
def gemm_f32(c: Mut[Tensor[f32, "BM, BN"]], a: Tensor[f32, "?, ?"], b: Tensor[f32, "?, ?"],
             BK: Const[int]):
    acc = zeros((BM, BN), dtype=f32)
    for k in range(num_tiles(a, 1, (BM, BK))):
        acc = mma(load_tile(a, (tile_id(0), k), (BM, BK)),
                  load_tile(b, (k, tile_id(1)), (BK, BN)), acc)
    c.store(acc)
'''

ROW_STATS = '''
def row_stats(total: Mut[Tensor[f32, "BM"]], best: Mut[Tensor[i32, "BM"]],
              x: Tensor[f32, "?, N"]):
    t = load_tile(x, (tile_id(0), 0), (BM, N))
    total.store(sum(t, axis=1))
    best.store(argmax(t, axis=1))
'''

CUMSUM = '''
def row_cumsum(out: Mut[Tensor[f32, "1, N"]], x: Tensor[f32, "?, N"]):
    out.store(cumsum(load_tile_like(x, out), axis=1))
'''

# Plain cuTile Python: explicit indices, a scalar argument, a ct.Constant tile size.
CUTILE_SCALE_ADD = '''
import cuda.tile as ct

@ct.kernel
def scale_add(z, x, y, alpha, B: ct.Constant[int]):
    tx = ct.load(x, index=(ct.bid(0),), shape=(B,), padding_mode=ct.PaddingMode.ZERO)
    ty = ct.load(y, index=(ct.bid(0),), shape=(B,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(z, index=(ct.bid(0),), tile=alpha * tx + ty)
'''

# Every tile also writes its right-hand neighbour's tile: a write-write race.
RACY = '''
def racy(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    z.store(t)  # <- own store
    with unsafe():
        store(z, ((tile_id(0) + 1) % num_tiles(0),), t * 2.0)  # <- neighbour store
'''

# The last tile stores one tile past the end of `z`: wholly out of range.
OOB_STORE = '''
def shifted(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    with unsafe():
        store(z, (tile_id(0) + 1,), t)  # <- store
'''

# A histogram with atomics (shared updates are fine) and a scatter with a bad index.
HISTOGRAM = '''
def histogram(out: Mut[Tensor[i32, "B"]], x: Tensor[i32, "?"], counts: Tensor[i32, "?"]):
    t = load_tile_like(x, out)
    with unsafe():
        atomic_add(counts, t, 1)  # <- atomics
    out.store(t)
'''

# Each tile scatters its tile three elements further on: the last one runs off the end.
SCATTER_OOB = '''
def scatter_oob(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], dst: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    z.store(t)
    with unsafe():
        idx = arange(B, dtype=i32) + tile_id(0) * B + 3
        scatter(dst, idx, t, check_bounds=False)  # <- scatter
'''

ALL = {
    "add": ADD, "add2d": ADD_2D, "axpy": AXPY_F16, "softmax": SOFTMAX,
    "softmax_ragged": SOFTMAX_RAGGED, "layernorm": LAYERNORM, "rmsnorm": RMSNORM_F16,
    "gemm_f16": GEMM_F16, "gemm_f32": GEMM_F32, "row_stats": ROW_STATS,
    "row_cumsum": CUMSUM, "scale_add": CUTILE_SCALE_ADD, "racy": RACY, "shifted": OOB_STORE,
    "histogram": HISTOGRAM, "scatter_oob": SCATTER_OOB,
}


@functools.lru_cache(maxsize=None)
def kernel(name: str):
    """The ``cutile_lab.Kernel`` called ``name`` (parsed from its source, once)."""
    from cutile_lab.kernel import kernels_from_source
    return kernels_from_source(ALL[name], f"<sim-test {name}>")[name]


def marked_line(name: str, marker: str) -> int:
    """The 1-based line of ``name``'s source that carries ``# <- marker``."""
    for i, line in enumerate(ALL[name].splitlines(), 1):
        if line.rstrip().endswith(f"# <- {marker}"):
            return i
    raise KeyError(marker)
