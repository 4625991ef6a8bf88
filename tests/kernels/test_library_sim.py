"""Library kernels against float64 NumPy references, run in the CPU simulator on fresh data."""
import numpy as np
import pytest

from cutile_lab.kernels import elementwise as E, flash_attention as A, matmul as G, rowwise as R
from cutile_lab.simulation import simulate

RNG = np.random.default_rng()


def _f16(a):
    return a.astype(np.float16)


def test_add_and_saxpy_ragged():
    n, B = 1000, 128
    x, y = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    z = np.full(n, np.nan, np.float32)
    res = simulate(E.ADD.kernel(dt="f32"), [z, x, y], ((n + B - 1) // B,), {"B": B})
    assert res.ok, res.summary()
    np.testing.assert_allclose(z, x.astype(np.float64) + y, rtol=1e-6)
    simulate(E.SAXPY.kernel(dt="f32"), [z, x, y, 2.5], ((n + B - 1) // B,), {"B": B})
    np.testing.assert_allclose(z, 2.5 * x.astype(np.float64) + y, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("rows,cols", [(6, 256), (5, 200)])
def test_softmax_f16(rows, cols):
    x = _f16(RNG.standard_normal((rows, cols)) * 3)
    out = np.zeros_like(x)
    BN = 1 << (cols - 1).bit_length()
    simulate(R.SOFTMAX.kernel(**R.substitutions("softmax", "f16", cols)), [out, x], (rows, 1), {"BR": 1, "BN": BN})
    ref = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(out.astype(np.float64), ref, atol=2e-3, rtol=1e-2)


@pytest.mark.parametrize("cols", [256, 200])
def test_layernorm_and_rmsnorm_f16(cols):
    rows, eps = 4, 1e-5
    x = _f16(RNG.standard_normal((rows, cols)))
    w, b = _f16(RNG.standard_normal(cols)), _f16(RNG.standard_normal(cols))
    BN = 1 << (cols - 1).bit_length()
    out = np.zeros_like(x)
    simulate(R.LAYERNORM.kernel(**R.substitutions("layernorm", "f16", cols)), [out, x, w, b, cols, eps], (rows, 1),
             {"BR": 1, "BN": BN})
    xd = x.astype(np.float64)
    mu, var = xd.mean(1, keepdims=True), xd.var(1, keepdims=True)
    ref = (xd - mu) / np.sqrt(var + eps) * w.astype(np.float64) + b
    np.testing.assert_allclose(out.astype(np.float64), ref, atol=2e-2, rtol=1e-2)
    simulate(R.RMSNORM.kernel(**R.substitutions("rmsnorm", "f16", cols)), [out, x, w, cols, eps], (rows, 1), {"BR": 1, "BN": BN})
    ref = xd / np.sqrt((xd * xd).mean(1, keepdims=True) + eps) * w.astype(np.float64)
    np.testing.assert_allclose(out.astype(np.float64), ref, atol=2e-2, rtol=1e-2)


def test_gemm_f16_grouped_order():
    M, N, K, BM, BN, BK = 200, 96, 128, 64, 32, 32
    a, b = _f16(RNG.standard_normal((M, K))), _f16(RNG.standard_normal((K, N)))
    c = np.zeros((M, N), np.float16)
    tiles = ((M + BM - 1) // BM) * ((N + BN - 1) // BN)
    res = simulate(G.GEMM.kernel(dt="f16", hints=""), [c, a, b], (tiles,), {"BM": BM, "BN": BN, "BK": BK})
    assert res.ok, res.summary()
    assert (res.ownership["c"] >= 0).all()          # every tile written exactly once
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), ref, atol=0.1, rtol=1e-2)


@pytest.mark.parametrize("causal", [0, 1])
def test_attention_f16(causal):
    BH, S, D, BQ, BKV = 2, 128, 32, 32, 32
    q, k, v = (_f16(RNG.standard_normal((BH, S, D))) for _ in range(3))
    out = np.zeros_like(q)
    scale = 1 / np.sqrt(D)
    simulate(A.ATTENTION.kernel(dt="f16", hints=""), [out, q, k, v, scale * np.log2(np.e)],
             (BH, S // BQ, 1),
             {"BQ": BQ, "D": D, "BKV": BKV, "CAUSAL": causal})
    s = np.einsum("bqd,bkd->bqk", q.astype(np.float64), k.astype(np.float64)) * scale
    if causal:
        s = np.where(np.tril(np.ones((S, S), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    ref = np.einsum("bqk,bkd->bqd", p, v.astype(np.float64))
    np.testing.assert_allclose(out.astype(np.float64), ref, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("family", ["softmax", "layernorm", "rmsnorm"])
def test_rowwise_persistent_schedule_ragged(family):
    """The persistent schedule the tuning sweep picks for long rows: 3 instances loop over 4
    blocks of 2 rows (the last one ragged) and each block is written by exactly one of them."""
    rows, cols, BR, eps = 7, 200, 2, 1e-5
    x = _f16(RNG.standard_normal((rows, cols)) * 2)
    w, b = _f16(RNG.standard_normal(cols)), _f16(RNG.standard_normal(cols))
    out = np.full_like(x, np.nan)
    args = {"softmax": [out, x], "layernorm": [out, x, w, b, cols, eps],
            "rmsnorm": [out, x, w, cols, eps]}[family]
    template = {"softmax": R.SOFTMAX, "layernorm": R.LAYERNORM, "rmsnorm": R.RMSNORM}[family]
    kernel = template.kernel(**R.substitutions(family, "f16", cols, ', schedule="persistent"'))
    res = simulate(kernel, args, (3,), {"BR": BR, "BN": 256})
    assert res.ok, res.summary()
    owners = res.ownership["out"]
    assert set(np.unique(owners)) == {0, 1, 2}
    for i in range(0, rows, BR):
        assert len(np.unique(owners[i:i + BR])) == 1
    xd = x.astype(np.float64)
    if family == "softmax":
        e = np.exp(xd - xd.max(1, keepdims=True))
        ref = e / e.sum(1, keepdims=True)
    elif family == "layernorm":
        ref = (xd - xd.mean(1, keepdims=True)) / np.sqrt(xd.var(1, keepdims=True) + eps) * w + b
    else:
        ref = xd / np.sqrt((xd * xd).mean(1, keepdims=True) + eps) * w
    np.testing.assert_allclose(out.astype(np.float64), ref, atol=3e-2, rtol=1e-2)
