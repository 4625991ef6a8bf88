"""Bad use of a kernel or an op: a SimulationError (or diagnostic) at the user's own line."""
import numpy as np
import pytest

from cutile_lab.errors import SimulationError
from cutile_lab.kernel import kernels_from_source
from cutile_lab.simulation import simulate
from tests.simulation.kernels import kernel


def one(src: str, name: str, filename: str = "<cell>"):
    return kernels_from_source(src, filename)[name]


def test_wrong_number_of_arguments(rng):
    x = rng.standard_normal(8).astype(np.float32)
    with pytest.raises(SimulationError, match=r"takes 3 argument\(s\) \(z, x, y\), got 2") as e:
        simulate(kernel("add"), [x, x], (1,), {"B": 8})
    assert e.value.span.line == 2 and e.value.code == "CL060"


def test_missing_and_unknown_consts(rng):
    x = rng.standard_normal(8).astype(np.float32)
    with pytest.raises(SimulationError, match="needs a value for `B`") as e:
        simulate(kernel("add"), [x, x, x], (1,))
    assert "consts=" in e.value.help
    with pytest.raises(SimulationError, match="no const generic named `C`"):
        simulate(kernel("add"), [x, x, x], (1,), {"B": 8, "C": 2})
    with pytest.raises(SimulationError, match="must be an integer"):
        simulate(kernel("add"), [x, x, x], (1,), {"B": 8.0})


def test_non_power_of_two_tile_shape(rng):
    x = rng.standard_normal(100).astype(np.float32)
    with pytest.raises(SimulationError, match="not a power of two") as e:
        simulate(kernel("add"), [x.copy(), x, x], (1,), {"B": 100})
    assert e.value.span.line == 2          # the parameter whose tile shape it is


def test_non_power_of_two_load_points_at_the_load(rng):
    src = '''
def bad(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile(x, (tile_id(0),), (B * 3,))
    z.store(t)
'''
    x = rng.standard_normal(64).astype(np.float32)
    with pytest.raises(SimulationError, match="not a power of two") as e:
        simulate(one(src, "bad"), [x.copy(), x], (1,), {"B": 64})
    assert e.value.span.line == 3 and e.value.span.filename == "<cell>"
    assert "tile 0" in str(e.value)
    assert e.value.__cause__ is None and e.value.__suppress_context__


def test_shape_mismatch_in_an_op_points_at_the_expression(rng):
    src = '''
def bad(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    u = load_tile(x, (0,), (2 * B,))
    z.store(t + u)
'''
    x = rng.standard_normal(64).astype(np.float32)
    with pytest.raises(SimulationError, match="cannot be broadcast") as e:
        simulate(one(src, "bad"), [x.copy(), x], (2,), {"B": 32})
    span = e.value.span
    assert span.line == 5 and (span.col, span.end_col) == (12, 17)   # `t + u`


def test_store_needs_an_explicit_conversion(rng):
    src = '''
def bad(z: Mut[Tensor[f16, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z))
'''
    x = rng.standard_normal(64).astype(np.float32)
    with pytest.raises(SimulationError, match="float32 to float16") as e:
        simulate(one(src, "bad"), [np.zeros(64, np.float16), x], (1,), {"B": 64})
    assert e.value.span.line == 3 and "astype(f16)" in e.value.help


def test_argument_dtype_and_rank_checked(rng):
    x = rng.standard_normal(8).astype(np.float64)
    with pytest.raises(SimulationError, match="dtype float64, but the kernel declares f32"):
        simulate(kernel("add"), [x, x, x], (1,), {"B": 8})
    x2 = rng.standard_normal((2, 4)).astype(np.float32)
    with pytest.raises(SimulationError, match="2 dimension"):
        simulate(kernel("add"), [x2, x2, x2], (1,), {"B": 8})
    with pytest.raises(SimulationError, match="output"):
        simulate(kernel("add"), [[0.0] * 8, x2[0], x2[0]], (1,), {"B": 8})


def test_bad_grid():
    x = np.zeros(8, np.float32)
    with pytest.raises(SimulationError, match="grid"):
        simulate(kernel("add"), [x, x, x], (0,), {"B": 8})
    with pytest.raises(SimulationError, match="grid"):
        simulate(kernel("add"), [x, x, x], (1, 1, 1, 1), {"B": 8})


def test_python_errors_in_the_body_are_located(rng):
    src = '''
def bad(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    z.store(t * undefined_name)
'''
    x = rng.standard_normal(8).astype(np.float32)
    with pytest.raises(SimulationError, match="undefined_name") as e:
        simulate(one(src, "bad"), [x.copy(), x], (1,), {"B": 8})
    assert e.value.span.line == 4


def test_frontend_errors_refuse_to_run():
    src = '''
def bad(z: Mut[Tensor[f32, "B"]], x):
    pass
'''
    with pytest.raises(SimulationError, match="has no type"):
        simulate(one(src, "bad"), [np.zeros(8, np.float32), 1], (1,), {"B": 8})


def test_printf_and_print(rng, capsys):
    src = '''
import cuda.tile as ct

@ct.kernel
def show(x, B: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(B,))
    ct.printf("tile %d: %.1f\\n", ct.bid(0), t)
    print(f"sum={ct.sum(t):.2f}")
'''
    x = np.arange(4, dtype=np.float32)
    simulate(one(src, "show"), [x], (2,), {"B": 2})
    out = capsys.readouterr().out.splitlines()
    assert out == ["tile 0: [0.0, 1.0]", "sum=1.00", "tile 1: [2.0, 3.0]", "sum=5.00"]


def test_failed_assert_stops_the_launch(rng):
    src = '''
import cuda.tile as ct

@ct.kernel
def check(z, x, B: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(B,))
    ct.assert_(t >= 0, "negative input")
    ct.store(z, index=(ct.bid(0),), tile=t)
'''
    x = np.abs(rng.standard_normal(16)).astype(np.float32)
    x[9] = -1.0
    z = np.zeros(16, np.float32)
    r = simulate(one(src, "check"), [z, x], (4,), {"B": 4})
    assert r.aborted and not r.ok and r.tiles_run == 2
    [d] = r.diagnostics
    assert d.code == "SIM020" and "negative input" in d.message and "tile 2" in d.message
    assert d.span.line == 7
    assert (z[:8] == x[:8]).all() and (z[8:] == 0).all()


def test_cutile_kernel_with_loops_2d_grid_and_builtins(rng):
    src = '''
import cuda.tile as ct

@ct.kernel
def colmax(out, x, BM: ct.Constant[int], BN: ct.Constant[int]):
    acc = ct.full((1, BN), -float("inf"), dtype=ct.float32)
    for i in range(ct.num_tiles(x, 0, (BM, BN))):
        t = ct.load(x, index=(i, ct.bid(0)), shape=(BM, BN), padding_mode=ct.PaddingMode.NEG_INF)
        acc = max(acc, ct.max(t, axis=0, keepdims=True))
    ct.store(out, index=(0, ct.bid(0)), tile=acc)
'''
    x = rng.standard_normal((100, 48)).astype(np.float32)
    out = np.zeros((1, 48), np.float32)
    r = simulate(one(src, "colmax"), [out, x], (3,), {"BM": 32, "BN": 16})
    assert r.ok
    np.testing.assert_array_equal(out[0], x.max(0))


def test_overlapping_arguments_get_a_note(rng):
    buf = rng.standard_normal(300).astype(np.float32)
    r = simulate(kernel("add"), [buf[:256], buf[44:], buf[44:]], (2,), {"B": 128})
    assert "SIM040" in r.codes()
