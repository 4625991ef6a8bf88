"""Every library kernel on the GPU against a float64 reference, on fresh random data."""
import math

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng()


@pytest.fixture(scope="module")
def gpu():
    import cutile_lab as cl
    if not cl.gpu_available():
        pytest.skip("no GPU found")
    cl.set_backend("gpu")
    yield cl
    cl.set_backend(None)


def _dev(cl, a):
    return cl.from_numpy(a).sync()


def test_add_saxpy_ragged(gpu):
    import cutile_lab.kernels as K
    for n in (1000, 127, (1 << 20) + 3):
        x, y = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
        z = K.add(_dev(gpu, x), _dev(gpu, y), B=128).sync().to_numpy()
        np.testing.assert_allclose(z, x.astype(np.float64) + y, rtol=1e-6)
        z = K.saxpy(1.5, _dev(gpu, x), _dev(gpu, y)).sync().to_numpy()
        np.testing.assert_allclose(z, 1.5 * x.astype(np.float64) + y, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cols", [1024, 1000, 8192, 32768])
def test_rowwise(gpu, cols):
    """With the tuned configuration of each row length (persistent ones included); 67 rows: the
    last block of rows is ragged for every block height."""
    import cutile_lab.kernels as K
    rows, eps = 67, 1e-5
    x = (RNG.standard_normal((rows, cols)) * 2).astype(np.float16)
    w, b = RNG.standard_normal(cols).astype(np.float16), RNG.standard_normal(cols).astype(np.float16)
    xd = x.astype(np.float64)
    sm = K.softmax(_dev(gpu, x)).sync().to_numpy().astype(np.float64)
    e = np.exp(xd - xd.max(1, keepdims=True))
    np.testing.assert_allclose(sm, e / e.sum(1, keepdims=True), atol=2e-3)
    ln = K.layernorm(_dev(gpu, x), _dev(gpu, w), _dev(gpu, b), eps).sync().to_numpy()
    ref = (xd - xd.mean(1, keepdims=True)) / np.sqrt(xd.var(1, keepdims=True) + eps) * w + b
    np.testing.assert_allclose(ln.astype(np.float64), ref, atol=3e-2, rtol=1e-2)
    rn = K.rmsnorm(_dev(gpu, x), _dev(gpu, w), eps).sync().to_numpy()
    ref = xd / np.sqrt((xd * xd).mean(1, keepdims=True) + eps) * w
    np.testing.assert_allclose(rn.astype(np.float64), ref, atol=3e-2, rtol=1e-2)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_gemm(gpu, dtype):
    import cutile_lab.kernels as K
    M, N, K_ = 1000, 768, 512
    a = RNG.standard_normal((M, K_)).astype(np.float32)
    b = RNG.standard_normal((K_, N)).astype(np.float32)
    ta = gpu.from_numpy(a, dtype=dtype).sync()
    tb = gpu.from_numpy(b, dtype=dtype).sync()
    c = K.gemm(ta, tb).sync().to_numpy().astype(np.float64)
    ref = ta.to_numpy().astype(np.float64) @ tb.to_numpy().astype(np.float64)
    tol = 0.05 if dtype == "f16" else 0.3
    np.testing.assert_allclose(c, ref, atol=tol * math.sqrt(K_) / 8, rtol=2e-2)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_gemm_persistent_clusters(gpu, dtype):
    """The persistent GEMM on two-CTA clusters launches one instance per cluster (SMs / 2, not
    one per SM, which ran the instances in two rounds) and, with more tiles than instances, each
    instance loops over several tiles: every tile is written, right."""
    from cutile_lab.kernels import matmul
    from cutile_lab.kernels.tuning import hints_text
    from cutile_lab.runtime.device import device_info
    from cutile_lab.runtime.launch import kernel_info
    from cutile_lab.runtime.launch.binding import grid_of
    M, N, K_ = 2300, 2560, 320                      # 9 x 10 tiles of 256 x 256, ragged M
    a = RNG.standard_normal((M, K_)).astype(np.float32)
    b = RNG.standard_normal((K_, N)).astype(np.float32)
    ta = gpu.from_numpy(a, dtype=dtype).sync()
    tb = gpu.from_numpy(b, dtype=dtype).sync()
    kernel = matmul.GEMM.kernel(dt=dtype, hints=hints_text(
        {"num_ctas": 2, "num_worker_warps": 8, "schedule": "persistent"}))
    c = gpu.full((M, N), float("nan"), dtype).sync()
    part = c.partition_mut((256, 256))
    sms = device_info().sm_count
    assert grid_of({"c": part}, kernel_info(kernel)) == (min(90, sms // 2),)
    kernel(part, ta, tb, BK=64).sync()
    got = c.to_numpy().astype(np.float64)
    ref = ta.to_numpy().astype(np.float64) @ tb.to_numpy().astype(np.float64)
    tol = 0.05 if dtype == "f16" else 0.3
    np.testing.assert_allclose(got, ref, atol=tol * math.sqrt(K_) / 8, rtol=2e-2)


@pytest.mark.parametrize("causal", [False, True])
def test_attention(gpu, causal):
    import cutile_lab.kernels as K
    BH, S, D = 4, 512, 64
    q, k, v = (RNG.standard_normal((BH, S, D)).astype(np.float16) for _ in range(3))
    out = K.attention(_dev(gpu, q), _dev(gpu, k), _dev(gpu, v), causal=causal).sync().to_numpy()
    s = np.einsum("bqd,bkd->bqk", q.astype(np.float64), k.astype(np.float64)) / math.sqrt(D)
    if causal:
        s = np.where(np.tril(np.ones((S, S), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    ref = np.einsum("bqk,bkd->bqd", p / p.sum(-1, keepdims=True), v.astype(np.float64))
    np.testing.assert_allclose(out.astype(np.float64), ref, atol=2e-2, rtol=2e-2)


def test_simulator_and_gpu_agree(gpu):
    """The same kernel gives the same results on the simulator and on the GPU."""
    import cutile_lab.kernels as K
    x = (RNG.standard_normal((16, 512)) * 3).astype(np.float16)
    on_gpu = K.softmax(_dev(gpu, x)).sync().to_numpy()
    gpu.set_backend("sim")
    try:
        on_sim = K.softmax(x).sync().to_numpy()
    finally:
        gpu.set_backend("gpu")
    np.testing.assert_allclose(on_gpu.astype(np.float32), on_sim.astype(np.float32), atol=2e-3)
