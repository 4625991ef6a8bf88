"""Flops and bytes derived from a kernel's own syntax tree and its launch's arguments."""
from __future__ import annotations

import pytest

from cutile_lab.kernel import kernels_from_source
from cutile_lab.lang import f16, f32
from cutile_lab.notebook.workcount import ArgInfo, count_launch

SRC = '''
def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))

def mm(c: Mut[Tensor[f16, "BM, BN"]], a: Tensor[f16, "?, ?"], b: Tensor[f16, "?, ?"],
       BK: Const[int] = 64):
    acc = full((BM, BN), 0.0, dtype=f32)
    for k in range(num_tiles(a, 1, (BM, BK))):
        ta = load_tile(a, (tile_id(0), k), (BM, BK))
        tb = load_tile(b, (k, tile_id(1)), (BK, BN))
        acc = mma(ta, tb, acc)
    c.store(acc.astype(f16))

def softmax(o: Mut[Tensor[f32, "1, N"]], x: Tensor[f32, "?, ?"]):
    t = load_tile_like(x, o)
    m = max(t, axis=1, keepdims=True)
    e = exp(t - m)
    s = sum(e, axis=1, keepdims=True)
    o.store(e / s)

def loop(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], n: i32):
    acc = load_tile_like(x, z)
    for i in range(n):
        acc = acc * 2.0
    z.store(acc)
'''


@pytest.fixture(scope="module")
def kernels():
    return {k: v.definition for k, v in kernels_from_source(SRC, "<workcount>").items()}


def test_elementwise(kernels):
    n = 1 << 20
    w = count_launch(kernels["add"], {"z": ArgInfo((n,), f32), "x": ArgInfo((n,), f32),
                                      "y": ArgInfo((n,), f32)}, {"B": 1024})
    assert w.exact and w.tiles == 1024
    assert w.flops == n and w.bytes_read == 8 * n and w.bytes_written == 4 * n
    assert w.precision == "f32"


def test_gemm_counts_mma_times_trips_and_compulsory_bytes(kernels):
    M = N = K = 4096
    w = count_launch(kernels["mm"], {"c": ArgInfo((M, N), f16), "a": ArgInfo((M, K), f16),
                                     "b": ArgInfo((K, N), f16)}, {"BM": 128, "BN": 128})
    assert w.exact, w.reasons
    assert w.flops == 2 * M * N * K
    assert w.bytes == (M * K + K * N + M * N) * 2          # each matrix once
    assert w.tile_bytes > w.bytes                           # tiles re-read A and B
    assert w.precision == "f16"


def test_rowwise_reductions(kernels):
    rows, cols = 4096, 1024
    w = count_launch(kernels["softmax"], {"o": ArgInfo((rows, cols), f32),
                                          "x": ArgInfo((rows, cols), f32)}, {"N": cols})
    assert w.exact and w.flops == 5 * rows * cols
    assert w.bytes == 2 * 4 * rows * cols


def test_scalar_trip_count_from_the_launch(kernels):
    n = 4096
    args = {"z": ArgInfo((n,), f32), "x": ArgInfo((n,), f32), "n": 10}
    w = count_launch(kernels["loop"], args, {"B": 256})
    assert w.exact and w.flops == 10 * n


def test_unknown_trip_count_is_approximate(kernels):
    n = 4096
    w = count_launch(kernels["loop"], {"z": ArgInfo((n,), f32), "x": ArgInfo((n,), f32)},
                     {"B": 256})
    assert not w.exact and any("trip count" in r for r in w.reasons)


def test_partition_like_arguments_bind_generics(kernels):
    class FakePartition:
        shape = (2048,)
        dtype = f32
        tile_shape = (256,)
    n = 2048
    w = count_launch(kernels["add"], {"z": FakePartition(), "x": ArgInfo((n,), f32),
                                      "y": ArgInfo((n,), f32)})
    assert w.exact and w.tiles == 8 and w.bytes == 12 * n
