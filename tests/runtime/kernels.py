"""Kernels of the runtime tests (a real file: kernels are read from their source)."""
import cutile_lab as cl
from cutile_lab.lang import *


@cl.kernel
def vadd(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


@cl.kernel
def saxpy(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"], alpha: f32):
    z.store(alpha * load_tile_like(x, z) + load_tile_like(y, z))


@cl.kernel
def accumulate(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(z.load() + load_tile_like(x, z))


@cl.kernel
def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], alpha: f32):
    z.store(alpha * load_tile_like(x, z))


@cl.kernel
def add2d(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"], y: Tensor[f32, "?, ?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


@cl.kernel
def softmax_rows(out: Mut[Tensor[f32, "1, N"]], x: Tensor[f32, "?, N"]):
    t = load_tile_like(x, out)
    m = max(t, axis=1, keepdims=True)
    e = exp(t - m)
    out.store(e / sum(e, axis=1, keepdims=True))


@cl.kernel
def gemm16(c: Mut[Tensor[f16, "BM, BN"]], a: Tensor[f16, "?, ?"], b: Tensor[f16, "?, ?"],
           BK: Const[int] = 32):
    acc = full((BM, BN), 0, dtype=f32)
    for k in range(num_tiles(a, 1, (BM, BK))):
        ta = load_tile(a, (tile_id(0), k), (BM, BK))
        tb = load_tile(b, (k, tile_id(1)), (BK, BN))
        acc = mma(ta, tb, acc)
    c.store(acc.astype(f16))


@cl.kernel
def fixed128(z: Mut[Tensor[f32, "128"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z))


@cl.kernel
def two_outputs(a: Mut[Tensor[f32, "B"]], b: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, a)
    a.store(t)
    b.store(t + 1.0)


@cl.kernel
def copy_i32(z: Mut[Tensor[i32, "B"]], x: Tensor[i32, "?"]):
    z.store(load_tile_like(x, z))

