"""The same kernels on the simulator and on the GPU, same inputs, results within dtype
tolerance: the simulator's semantics are the compiled code's."""
import numpy as np
import pytest

import cutile_lab as cl
from tests.simulation.kernels import kernel

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng()


def _f(shape, dtype=np.float32, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(dtype)


# name, outputs [(shape, dtype, tile)], inputs (arrays or scalars), consts, tolerance
CASES = [
    ("add", [((1000,), np.float32, (128,))], [_f(1000), _f(1000)], {}, 1e-6),
    ("add2d", [((100, 70), np.float32, (32, 32))], [_f((100, 70)), _f((100, 70))], {}, 1e-6),
    ("axpy", [((1000,), np.float16, (256,))], [_f(1000, np.float16), _f(1000, np.float16), 1.5],
     {}, 2e-3),
    ("softmax", [((12, 256), np.float32, (1, 256))], [_f((12, 256), scale=3)], {}, 1e-5),
    ("layernorm", [((12, 256), np.float32, (1, 256))], [_f((12, 256)), _f(256), _f(256), 1e-5],
     {}, 1e-4),
    ("rmsnorm", [((12, 256), np.float16, (1, 256))], [_f((12, 256), np.float16),
                                                      _f(256, np.float16), 1e-6], {}, 4e-3),
    ("gemm_f16", [((96, 80), np.float32, (32, 16))], [_f((96, 64), np.float16),
                                                     _f((64, 80), np.float16)], {"BK": 32}, 1e-3),
    ("gemm_f32", [((96, 80), np.float32, (32, 16))], [_f((96, 64)), _f((64, 80))], {"BK": 32},
     3e-2),
    ("row_stats", [((64,), np.float32, (16,)), ((64,), np.int32, (16,))], [_f((64, 128))], {},
     1e-4),
    ("row_cumsum", [((8, 128), np.float32, (1, 128))], [_f((8, 128))], {}, 1e-4),
]


def _run(backend: str, name, outputs, inputs, consts):
    cl.set_backend(backend)
    try:
        outs = [cl.zeros(shape, np.dtype(dt).name).sync() for shape, dt, _ in outputs]
        args = [cl.from_numpy(a).sync() if isinstance(a, np.ndarray) else a for a in inputs]
        parts = [o.partition(tile) for o, (_, _, tile) in zip(outs, outputs)]
        handed_back = kernel(name)(*parts, *args, **consts).sync()
        return [p.unpartition().to_numpy() for p in handed_back[:len(outputs)]]
    finally:
        cl.set_backend(None)


@pytest.mark.parametrize("name,outputs,inputs,consts,tol", CASES, ids=[c[0] for c in CASES])
def test_simulator_matches_the_gpu(name, outputs, inputs, consts, tol):
    if not cl.gpu_available():
        pytest.skip("no GPU found")
    on_gpu = _run("gpu", name, outputs, inputs, consts)
    on_sim = _run("sim", name, outputs, inputs, consts)
    for g, s in zip(on_gpu, on_sim):
        assert g.dtype == s.dtype and g.shape == s.shape
        if g.dtype.kind in "iu":
            np.testing.assert_array_equal(g, s)
        else:
            scale = max(1.0, float(np.abs(s.astype(np.float64)).max()))
            np.testing.assert_allclose(g.astype(np.float64), s.astype(np.float64),
                                       atol=tol * scale, rtol=tol)
