"""End-to-end: tile-language and plain cuTile kernels simulated against float64 references."""
import numpy as np
import pytest

from cutile_lab.simulation import simulate
from tests.simulation.conftest import assert_close
from tests.simulation.kernels import kernel


def cdiv(a, b):
    return -(-a // b)


@pytest.mark.parametrize("n,tile", [(1000, 128), (127, 128), (1024, 128), (1, 64), (4097, 1024)])
def test_vector_add_ragged(rng, n, tile):
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    z = np.full(n, np.nan, dtype=np.float32)
    r = simulate(kernel("add"), [z, x, y], (cdiv(n, tile),), {"B": tile})
    assert r.ok, r.summary()
    assert r.diagnostics == []
    assert_close(z, x.astype(np.float64) + y)
    assert r.tiles_run == cdiv(n, tile)


def test_add_2d_ragged_edges(rng):
    m, n = 100, 70
    x = rng.standard_normal((m, n)).astype(np.float32)
    y = rng.standard_normal((m, n)).astype(np.float32)
    z = np.full((m, n), np.nan, dtype=np.float32)
    r = simulate(kernel("add2d"), [z, x, y], (cdiv(m, 32), cdiv(n, 32)), {"BM": 32, "BN": 32})
    assert r.ok
    assert_close(z, x.astype(np.float64) + y)


def test_axpy_f16_rounds_to_storage(rng):
    n = 1000
    x = rng.standard_normal(n).astype(np.float16)
    y = rng.standard_normal(n).astype(np.float16)
    z = np.zeros(n, np.float16)
    alpha = float(rng.uniform(-2, 2))
    simulate(kernel("axpy"), [z, x, y, alpha], (8,), {"B": 128})
    # f32 arithmetic, then one rounding to f16: exactly what NumPy does in f32
    expect = (np.float32(alpha) * x.astype(np.float32) + y.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(z, expect)
    assert_close(z, alpha * x.astype(np.float64) + y)


def test_plain_cutile_kernel(rng):
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    z = np.zeros(n, np.float32)
    r = simulate(kernel("scale_add"), [z, x, y, 2.5], (8,), {"B": 128})
    assert r.ok
    assert_close(z, 2.5 * x.astype(np.float64) + y)
    # a plain kernel's outputs are the arrays it wrote
    assert list(r.ownership) == ["z"]
    np.testing.assert_array_equal(r.ownership["z"], np.arange(n) // 128)


def test_plain_cutile_kernel_consts_positionally(rng):
    x = rng.standard_normal(300).astype(np.float32)
    y = rng.standard_normal(300).astype(np.float32)
    z = np.zeros(300, np.float32)
    simulate(kernel("scale_add"), [z, x, y, -1.0, 64], (5,))
    assert_close(z, -x.astype(np.float64) + y)


@pytest.mark.parametrize("rows", [1, 7])
def test_softmax(rng, rows):
    n = 256
    x = (rng.standard_normal((rows, n)) * 4).astype(np.float32)
    out = np.zeros_like(x)
    r = simulate(kernel("softmax"), [out, x], (rows, 1), {"N": n})
    assert r.ok
    x64 = x.astype(np.float64)
    ref = np.exp(x64 - x64.max(1, keepdims=True))
    ref /= ref.sum(1, keepdims=True)
    assert_close(out, ref)


def test_softmax_ragged_rows_pad_with_neg_inf(rng):
    m, w = 5, 200                     # 200 columns in a 256-wide tile
    x = (rng.standard_normal((m, w)) * 3).astype(np.float32)
    out = np.zeros_like(x)
    r = simulate(kernel("softmax_ragged"), [out, x], (m, 1), {"BN": 256})
    assert r.ok
    x64 = x.astype(np.float64)
    ref = np.exp(x64 - x64.max(1, keepdims=True))
    ref /= ref.sum(1, keepdims=True)
    assert_close(out, ref)


def test_layernorm(rng):
    n = 128
    x = (rng.standard_normal((9, n)) * 2 + 1).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    out = np.zeros_like(x)
    r = simulate(kernel("layernorm"), [out, x, w, b, 1e-5], (9, 1), {"N": n})
    assert r.ok
    x64 = x.astype(np.float64)
    ref = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-5) * w + b
    assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_rmsnorm_f16(rng):
    n = 128
    x = rng.standard_normal((6, n)).astype(np.float16)
    w = rng.standard_normal(n).astype(np.float16)
    out = np.zeros_like(x)
    r = simulate(kernel("rmsnorm"), [out, x, w, 1e-6], (6, 1), {"N": n})
    assert r.ok
    x64 = x.astype(np.float64)
    ref = x64 / np.sqrt((x64 ** 2).mean(1, keepdims=True) + 1e-6) * w
    assert out.dtype == np.float16
    assert_close(out, ref)


@pytest.mark.parametrize("m,n,k", [(128, 128, 64), (100, 70, 90), (64, 192, 256)])
def test_gemm_f16_mma_over_k_tiles(rng, m, n, k):
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    r = simulate(kernel("gemm_f16"), [c, a, b], (cdiv(m, 64), cdiv(n, 64)),
                 {"BM": 64, "BN": 64, "BK": 32})
    assert r.ok
    ref = a.astype(np.float64) @ b.astype(np.float64)
    # products of f16 are exact in f32; only the f32 sum order differs
    assert_close(c, ref, rtol=1e-5, atol=1e-5 * np.sqrt(k))


@pytest.mark.parametrize("m,n,k", [(256, 256, 256), (50, 130, 70)])
def test_gemm_f32(rng, m, n, k):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    r = simulate(kernel("gemm_f32"), [c, a, b], (cdiv(m, 64), cdiv(n, 64)),
                 {"BM": 64, "BN": 64, "BK": 32})
    assert r.ok
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5,
                 atol=2e-6 * np.sqrt(k))


def test_reduction_sum_and_argmax(rng):
    m, n = 40, 64
    x = rng.standard_normal((m, n)).astype(np.float32)
    total = np.zeros(m, np.float32)
    best = np.full(m, -7, np.int32)
    r = simulate(kernel("row_stats"), [total, best, x], (cdiv(m, 16),), {"BM": 16, "N": n})
    assert r.ok
    assert_close(total, x.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(best, x.argmax(1))
    assert set(r.ownership) == {"total", "best"}


def test_scan_cumsum(rng):
    x = rng.standard_normal((3, 64)).astype(np.float32)
    out = np.zeros_like(x)
    r = simulate(kernel("row_cumsum"), [out, x], (3, 1), {"N": 64})
    assert r.ok
    assert_close(out, np.cumsum(x.astype(np.float64), axis=1), rtol=1e-5, atol=1e-5)


def test_outputs_written_in_place_and_inputs_untouched(rng):
    x = rng.standard_normal(300).astype(np.float32)
    y = rng.standard_normal(300).astype(np.float32)
    x0, y0 = x.copy(), y.copy()
    z = np.zeros(300, np.float32)
    simulate(kernel("add"), [z, x, y], (3,), {"B": 128})
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(y, y0)
    assert np.all(z != 0)


def test_record_false_gives_same_values_without_maps(rng):
    x = rng.standard_normal(1000).astype(np.float32)
    y = rng.standard_normal(1000).astype(np.float32)
    z1, z2 = np.zeros(1000, np.float32), np.zeros(1000, np.float32)
    r1 = simulate(kernel("add"), [z1, x, y], (8,), {"B": 128})
    r2 = simulate(kernel("add"), [z2, x, y], (8,), {"B": 128}, record=False)
    np.testing.assert_array_equal(z1, z2)
    assert r2.ownership == {} and r2.writes_by_tile == {}
    assert r1.ownership


def test_kernel_def_accepted(rng):
    x = rng.standard_normal(10).astype(np.float32)
    z = np.zeros(10, np.float32)
    simulate(kernel("add").definition, [z, x, x], (1,), {"B": 16})
    assert_close(z, 2 * x.astype(np.float64))
