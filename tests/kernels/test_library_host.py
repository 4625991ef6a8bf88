"""The library's host functions end to end on the simulator backend (CI) and the GPU (marked)."""
import numpy as np

import cutile_lab as cl
import cutile_lab.kernels as K

RNG = np.random.default_rng()


def _np(t):
    return t.to_numpy() if hasattr(t, "to_numpy") else np.asarray(t)


def test_host_functions_on_the_simulator(sim):
    x = RNG.standard_normal(1000).astype(np.float32)
    y = RNG.standard_normal(1000).astype(np.float32)
    np.testing.assert_allclose(_np(K.add(x, y, B=256).sync()), x + y, rtol=1e-6)
    np.testing.assert_allclose(_np(K.saxpy(0.5, x, y, B=256).sync()), 0.5 * x + y, rtol=1e-5)
    m = RNG.standard_normal((8, 300)).astype(np.float16)
    sm = _np(K.softmax(m).sync()).astype(np.float64)
    ref = np.exp(m - m.max(1, keepdims=True).astype(np.float64))
    np.testing.assert_allclose(sm, ref / ref.sum(1, keepdims=True), atol=2e-3)
    a = RNG.standard_normal((96, 64)).astype(np.float16)
    b = RNG.standard_normal((64, 80)).astype(np.float16)
    c = _np(K.gemm(a, b, BM=32, BN=32, BK=32).sync()).astype(np.float64)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, atol=0.1, rtol=1e-2)
    c = _np(K.gemm(a, b, BM=32, BN=16, BK=32, schedule="persistent").sync()).astype(np.float64)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, atol=0.1, rtol=1e-2)


def test_persistent_schedule_loops_over_disjoint_tiles():
    """A persistent launch has a few instances; each writes a disjoint set of whole tiles."""
    from cutile_lab.kernels import matmul
    from cutile_lab.simulation import simulate
    a = RNG.standard_normal((100, 64)).astype(np.float16)
    b = RNG.standard_normal((64, 96)).astype(np.float16)
    c = np.zeros((100, 96), np.float16)
    kernel = matmul.GEMM.kernel(dt="f16", hints=', schedule="persistent"')
    res = simulate(kernel, [c, a, b], (3,), {"BM": 32, "BN": 32, "BK": 32})
    assert res.ok, res.summary()
    owners = res.ownership["c"]
    assert set(np.unique(owners)) == {0, 1, 2}
    for i in range(0, 100, 32):                      # each tile has exactly one owner
        for j in range(0, 96, 32):
            assert len(np.unique(owners[i:i + 32, j:j + 32])) == 1
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b, atol=0.1)
