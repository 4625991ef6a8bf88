"""Flops and bytes of a launch, read off the checker's typed kernel and the launch's arguments,
against hand-computed counts."""
from __future__ import annotations

import numpy as np
import pytest

from cutile_lab.kernel import kernels_from_source
from cutile_lab.lang import bf16, f16, f32
from cutile_lab.performance.counting import (ArgInfo, count_elementwise, count_gemm, count_launch,
                                             count_rowwise)

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


# --- counts from the typed kernel against hand-computed work -------------------------------------

HAND = '''
def scale_add(z: Mut[Tensor[bf16, "B"]], x: Tensor[bf16, "?"], y: Tensor[bf16, "?"], a: f32):
    z.store((load_tile_like(x, z) * a + load_tile_like(y, z)).astype(bf16))

def rms(o: Mut[Tensor[f32, "1, N"]], x: Tensor[f32, "?, ?"], w: Tensor[f32, "1, ?"], eps: f32):
    t = load_tile_like(x, o)
    ms = sum(t * t, axis=1, keepdims=True)
    r = rsqrt(ms / N + eps)
    o.store(t * r * load_tile(w, (0, 0), (1, N)))

def tiled_mm(c: Mut[Tensor[f16, "BM, BN"]], a: Tensor[f16, "?, ?"], b: Tensor[f16, "?, ?"],
             BK: Const[int] = 32):
    acc = full((BM, BN), 0.0, dtype=f32)
    for k in range(num_tiles(a, 1, (BM, BK))):
        acc = mma(load_tile(a, (tile_id(0), k), (BM, BK)),
                  load_tile(b, (k, tile_id(1)), (BK, BN)), acc)
    c.store(acc.astype(f16))

def attn(out: Mut[Tensor[f16, "1, BQ, D"]], q: Tensor[f16, "?, ?, ?"], k: Tensor[f16, "?, ?, ?"],
         v: Tensor[f16, "?, ?, ?"], BKV: Const[int] = 64):
    tq = reshape(load_tile_like(q, out), (BQ, D))
    m = full((BQ, 1), -1.0e30, dtype=f32)
    l = full((BQ, 1), 0.0, dtype=f32)
    acc = full((BQ, D), 0.0, dtype=f32)
    zero = full((BQ, BKV), 0.0, dtype=f32)
    for j in range(num_tiles(k, 1, (1, BKV, D))):
        tkt = reshape(load_tile(k, (tile_id(0), 0, j), (1, D, BKV), order=(0, 2, 1)), (D, BKV))
        s = mma(tq, tkt, zero)
        m_new = maximum(m, max(s, axis=1, keepdims=True))
        p = exp(s - m_new)
        alpha = exp(m - m_new)
        l = l * alpha + sum(p, axis=1, keepdims=True)
        tv = reshape(load_tile(v, (tile_id(0), j, 0), (1, BKV, D)), (BKV, D))
        acc = mma(p.astype(f16), tv, acc * alpha)
        m = m_new
    out.store(reshape((acc / l).astype(f16), (1, BQ, D)))

def twice(t):
    return t * 2.0

def via_helper(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(twice(twice(load_tile_like(x, z))))
'''


@pytest.fixture(scope="module")
def hand():
    return {k: v.definition for k, v in kernels_from_source(HAND, "<hand>").items()}


def _rand(lo, hi):
    return int(np.random.default_rng().integers(lo, hi))


def test_elementwise_matches_the_closed_form(hand):
    B = 256
    n = B * _rand(4, 64)
    w = count_launch(hand["scale_add"], {"z": ArgInfo((n,), bf16), "x": ArgInfo((n,), bf16),
                                         "y": ArgInfo((n,), bf16), "a": 1.5}, {"B": B})
    assert w.exact, w.reasons
    # x*a and + y: two flops per element; x and y read, z written, 2 bytes each
    assert w.count == count_elementwise(n, 2, n_inputs=2, flops_per_elem=2)
    assert w.precision == "bf16"


def test_rowwise_matches_the_closed_form_with_parameters(hand):
    rows, cols = _rand(8, 512), 128 * _rand(1, 16)
    w = count_launch(hand["rms"], {"o": ArgInfo((rows, cols), f32),
                                   "x": ArgInfo((rows, cols), f32),
                                   "w": ArgInfo((1, cols), f32), "eps": 1e-6}, {"N": cols})
    assert w.exact, w.reasons and w.tiles == rows
    # per row: t*t, sum, *r, *w over the row (4 per element) + /N, +eps, rsqrt on (1, 1)
    assert w.flops == rows * (4 * cols + 3)
    # the weight row is read by every tile, but its compulsory traffic is its size, once
    ref = count_rowwise(rows, cols, 4, 4, param_bytes=4 * cols)
    assert (w.bytes_read, w.bytes_written) == (ref.bytes_read, ref.bytes_written)
    assert w.tile_bytes == rows * 3 * 4 * cols


def test_gemm_matches_the_closed_form(hand):
    BM, BN, BK = 64, 128, 32
    M, N, K = BM * _rand(1, 9), BN * _rand(1, 9), BK * _rand(1, 17)
    w = count_launch(hand["tiled_mm"], {"c": ArgInfo((M, N), f16), "a": ArgInfo((M, K), f16),
                                        "b": ArgInfo((K, N), f16)}, {"BM": BM, "BN": BN})
    assert w.exact, w.reasons
    ref = count_gemm(M, N, K, 2, 2)
    # the cast of the accumulator is not a flop
    assert w.count == ref
    # the tile traffic re-reads A once per column of tiles and B once per row of tiles
    assert w.tile_bytes == (M * K * (N // BN) + K * N * (M // BM)) * 2 + M * N * 2


def test_attention_matches_hand_count(hand):
    BQ, D, BKV = 64, 64, 32
    BH, S = _rand(1, 5), BQ * _rand(1, 9)
    shape = (BH, S, D)
    w = count_launch(hand["attn"], {"out": ArgInfo(shape, f16), "q": ArgInfo(shape, f16),
                                    "k": ArgInfo(shape, f16), "v": ArgInfo(shape, f16)},
                     {"BQ": BQ, "D": D, "BKV": BKV})
    assert w.exact, w.reasons
    tiles, n = BH * (S // BQ), S // BKV
    # per key block: two mma (2·BQ·D·BKV each); max, s-m_new, exp, sum over (BQ, BKV);
    # maximum, m-m_new, exp, l*alpha, + over (BQ, 1); acc*alpha over (BQ, D); then acc / l
    per_block = 4 * BQ * D * BKV + 4 * BQ * BKV + 5 * BQ + BQ * D
    assert w.tiles == tiles
    assert w.flops == tiles * (n * per_block + BQ * D)
    assert w.flops - tiles * (n * (4 * BQ * BKV + 5 * BQ + BQ * D) + BQ * D) == 4 * BH * S * S * D
    # Q, K, V read once each (compulsory), out written once, f16
    assert (w.bytes_read, w.bytes_written) == (3 * BH * S * D * 2, BH * S * D * 2)
    assert w.precision == "f16"


def test_helpers_count_through_their_bodies(hand):
    n = 64 * _rand(2, 50)
    w = count_launch(hand["via_helper"], {"z": ArgInfo((n,), f32), "x": ArgInfo((n,), f32)},
                     {"B": 64})
    assert w.exact and w.flops == 2 * n and w.bytes == 8 * n


def test_plain_cutile_gemm_counts_from_load_and_store_shapes():
    src = '''import cuda.tile as ct
ConstInt = ct.Constant[int]

@ct.kernel
def mm(a, b, c, BM: ConstInt, BN: ConstInt, BK: ConstInt):
    acc = ct.full((BM, BN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(a, 1, (BM, BK))):
        ta = ct.load(a, index=(ct.bid(0), k), shape=(BM, BK))
        tb = ct.load(b, index=(k, ct.bid(1)), shape=(BK, BN))
        acc = ct.mma(ta, tb, acc)
    ct.store(c, index=(ct.bid(0), ct.bid(1)), tile=acc.astype(c.dtype))
'''
    kdef = kernels_from_source(src, "<plain>")["mm"].definition
    BM = BN = 64
    BK = 32
    M, N, K = BM * _rand(1, 5), BN * _rand(1, 5), BK * _rand(1, 9)
    w = count_launch(kdef, {"a": np.zeros((M, K), np.float16), "b": np.zeros((K, N), np.float16),
                            "c": np.zeros((M, N), np.float16)},
                     {"BM": BM, "BN": BN, "BK": BK}, grid=(M // BM, N // BN, 1))
    assert w.flops == 2 * M * N * K
    assert w.bytes == count_gemm(M, N, K, 2, 2).bytes
    assert not w.exact      # a plain cuTile kernel says its count is read off ct.load/ct.store


def test_an_untyped_tile_makes_the_count_approximate_not_short():
    src = '''
def masked(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    z.store(where(arange(B, dtype=i32) < x.shape[0], t * 2.0, 0.0))
'''
    kdef = kernels_from_source(src, "<masked>")["masked"].definition
    n = 128 * _rand(2, 20)
    w = count_launch(kdef, {"z": ArgInfo((n,), f32), "x": ArgInfo((n,), f32)}, {"B": 128})
    assert w.flops >= n                   # t * 2.0 is counted
    assert not w.exact and any("shape is unknown" in r for r in w.reasons)
