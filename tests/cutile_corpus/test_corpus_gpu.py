"""The corpus on the GPU: each kernel launched through the lab (``cl.launch``) on fresh random
data, compared with PyTorch's result of the same work and, element for element, with the
simulator's result of the very same launch. Marked gpu: skipped without one."""
import numpy as np
import pytest

import cutile_lab as cl
from tests.cutile_corpus.cases import CASES
from tests.cutile_corpus.conftest import load, runtime_args

pytestmark = pytest.mark.gpu


def _launch(backend, case, inputs):
    kernel = load(str(case.path))[case.kernel]
    cl.set_backend(backend)
    try:
        tensors = {k: cl.from_numpy(np.ascontiguousarray(v)).sync()
                   if isinstance(v, np.ndarray) else v for k, v in inputs.items()}
        cl.launch(kernel, *runtime_args(kernel, tensors), grid=case.grid(inputs),
                  **case.consts).sync()
        return {name: tensors[name].to_numpy() for name in case.outputs}
    finally:
        cl.set_backend(None)


def _close(got, want, tol, what):
    rtol, atol = tol
    if got.dtype.kind in "iub" and rtol == 0 and atol == 0:
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        np.testing.assert_allclose(got.astype(np.float64), np.asarray(want, np.float64),
                                   rtol=max(rtol, 1e-6), atol=max(atol, 1e-6), err_msg=what)


@pytest.mark.parametrize("case", [c for c in CASES if c.ref is not None], ids=lambda c: c.id)
def test_gpu_matches_pytorch_and_the_simulator(case, rng):
    if not cl.gpu_available():
        pytest.skip("no GPU found")
    torch = pytest.importorskip("torch")
    inputs = case.make(rng)
    on_gpu = _launch("gpu", case, {k: (v.copy() if isinstance(v, np.ndarray) else v)
                                   for k, v in inputs.items()})
    on_sim = _launch("sim", case, {k: (v.copy() if isinstance(v, np.ndarray) else v)
                                   for k, v in inputs.items()})
    if case.torch_ref is not None:
        t_in = {k: torch.from_numpy(np.ascontiguousarray(v)).cuda()
                if isinstance(v, np.ndarray) else v for k, v in inputs.items()}
        want = {k: v.cpu().numpy() for k, v in case.torch_ref(torch, t_in).items()}
    else:                       # no PyTorch op does this (hash dropout): NumPy's reference
        want = case.ref({k: (v.copy() if isinstance(v, np.ndarray) else v)
                         for k, v in inputs.items()})
    # the GPU may order float sums differently from the simulator: a loose element-wise bound
    loose = (max(case.tol[0], 1e-5), max(case.tol[1], 1e-5))
    for name in case.outputs:
        _close(on_gpu[name], want[name], case.tol if case.torch_ref else loose,
               f"{case.id}: {name} (GPU vs PyTorch)")
        _close(on_gpu[name], on_sim[name], loose if on_gpu[name].dtype.kind == "f" else (0, 0),
               f"{case.id}: {name} (GPU vs simulator)")
