"""Kernels of the compile tests, written in the tile language in an ordinary .py file."""
import cutile_lab as cl
from cutile_lab.lang import *


@cl.kernel
def vector_add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    tx = load_tile_like(x, z)
    ty = load_tile_like(y, z)
    z.store(tx + ty)


@cl.kernel
def add_2d(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"], y: Tensor[f32, "?, ?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


@cl.kernel
def row_softmax(out: Mut[Tensor[f32, "1, N"]], x: Tensor[f32, "?, N"]):
    t = load_tile_like(x, out)
    m = max(t, axis=1, keepdims=True)
    e = exp(t - m)
    out.store(e / sum(e, axis=1, keepdims=True))


@cl.kernel
def gemm(c: Mut[Tensor[f32, "BM, BN"]], a: Tensor[f16, "?, ?"], b: Tensor[f16, "?, ?"],
         BK: Const[int] = 32):
    acc = full((BM, BN), 0, dtype=f32)
    for k in range(num_tiles(a, 1, (BM, BK))):
        ta = load_tile(a, (tile_id(0), k), (BM, BK))
        tb = load_tile(b, (k, tile_id(1)), (BK, BN))
        acc = mma(ta, tb, acc)
    c.store(acc)


@cl.kernel
def saxpy(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"], alpha: f32):
    z.store(alpha * load_tile_like(x, z) + load_tile_like(y, z))
