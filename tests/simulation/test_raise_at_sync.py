"""A launch on the simulator backend whose simulation found an error (a race, a store wholly
out of bounds) raises from ``.sync()`` with the located report; ``set_on_error("warn")`` warns
instead and ``"ignore"`` keeps it in ``op.sim_result``."""
import numpy as np
import pytest

import cuda.tile as ct
import cutile_lab as cl
from cutile_lab.simulation import (SimulationProblemError, SimulationWarning, on_error,
                                   set_on_error)

ConstInt = ct.Constant[int]


@ct.kernel
def racy_total(x, out, T: ConstInt):
    t = ct.load(x, index=(ct.bid(0),), shape=(T,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(0,), tile=ct.reshape(ct.sum(t), (1,)))


@ct.kernel
def off_the_end(x, out, T: ConstInt):
    t = ct.load(x, index=(ct.bid(0),), shape=(T,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(ct.bid(0) + 100,), tile=t)


@pytest.fixture
def sim():
    cl.set_backend("sim")
    before = on_error()
    yield
    set_on_error(before)
    cl.set_backend(None)


def _args(n=128):
    x = cl.from_numpy(np.random.default_rng().standard_normal(n).astype(np.float32)).sync()
    return x, cl.zeros(n).sync()


@pytest.mark.parametrize("kernel,code,line", [
    (racy_total, "SIM010", "ct.store(out, index=(0,)"),
    (off_the_end, "SIM002", "ct.store(out, index=(ct.bid(0) + 100,)")])
def test_sync_raises_with_the_located_report(sim, kernel, code, line):
    x, out = _args()
    with pytest.raises(SimulationProblemError) as e:
        cl.launch(kernel, x, out, T=32, grid=(4,)).sync()
    err = e.value
    assert err.code == "CL061" and code in [d.code for d in err.diagnostics]
    d = next(d for d in err.diagnostics if d.code == code)
    src = open(__file__).read().splitlines()
    assert line in src[d.span.line - 1] and d.span.filename == __file__
    assert f"{__file__}:{d.span.line}" in str(err)     # the rendered report is in the message


def test_warn_and_ignore_settings(sim):
    x, out = _args()
    set_on_error("warn")
    with pytest.warns(SimulationWarning, match="SIM010"):
        op = cl.launch(racy_total, x, out, T=32, grid=(4,))
        op.sync()
    set_on_error("ignore")
    op = cl.launch(racy_total, x, out, T=32, grid=(4,))
    op.sync()
    assert "SIM010" in [d.code for d in op.sim_result.errors]
    with pytest.raises(ValueError):
        set_on_error("loud")


def test_a_clean_launch_does_not_raise(sim):
    @ct.kernel
    def copy(x, out, T: ConstInt):
        t = ct.load(x, index=(ct.bid(0),), shape=(T,), padding_mode=ct.PaddingMode.ZERO)
        ct.store(out, index=(ct.bid(0),), tile=t)
    x, out = _args(100)
    cl.launch(copy, x, out, T=32, grid=(4,)).sync()
    np.testing.assert_array_equal(out.to_numpy(), x.to_numpy())
