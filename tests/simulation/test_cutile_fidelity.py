"""The simulator runs plain cuTile Python kernels as cuTile Python 1.7 defines them: names
resolved as Python resolves them (closures before module globals), ``ct.kernel(fn)`` in every
form, ``ct.static_eval`` over tables of device functions, implicit conversions exactly where
cuTile's stores and atomics make them, cuTile's own type errors, raw memory, every dtype."""
import numpy as np
import pytest

import cuda.tile as ct
import cutile_lab as cl
from cutile_lab.errors import SimulationError
from cutile_lab.simulation import simulate
from tests.simulation import cutile_helpers

ConstInt = ct.Constant[int]
OPS = {"exp": ct.exp, "helper": cutile_helpers.TABLE[0], "twice": cutile_helpers.TABLE[1]}


@pytest.fixture
def tile():  # noqa: F811
    """A fixture whose name matches a kernel's free variable: the closure must win."""
    return "not a function"


@pytest.fixture
def rng():
    return np.random.default_rng()


def _apply_kernel(op):
    def apply(x, out, T: ConstInt):
        t = ct.load(x, index=(ct.bid(0),), shape=(T,), padding_mode=ct.PaddingMode.ZERO)
        ct.store(out, index=(ct.bid(0),), tile=op(t))
    return apply


def test_free_variables_resolve_as_python_does_closures_first(rng):
    reduce_op = ct.sum

    def tile(t):              # the module's global `tile` (a fixture) must not be seen
        return t * 3.0

    def closure_kernel(x, out, total, T: ConstInt):
        t = ct.load(x, index=(ct.bid(0),), shape=(T,), padding_mode=ct.PaddingMode.ZERO)
        ct.store(out, index=(ct.bid(0),), tile=tile(t))
        ct.atomic_add(total, 0, reduce_op(t))
    x = rng.standard_normal(100).astype(np.float32)
    out, total = np.zeros_like(x), np.zeros(1, np.float32)
    r = simulate(ct.kernel(closure_kernel), [x, out, total], grid=(4,), consts={"T": 32})
    assert not r.errors
    np.testing.assert_allclose(out, 3 * x, rtol=1e-6)
    # a float32 sum in another order: close to the magnitude of the terms, not of a sum near 0
    np.testing.assert_allclose(total[0], x.sum(), rtol=1e-5, atol=1e-5 * np.abs(x).sum())
    k = ct.kernel(_apply_kernel(tile))          # a free variable of a factory's function
    out[:] = 0
    assert not simulate(k, [x, out], grid=(4,), consts={"T": 32}).errors
    np.testing.assert_allclose(out, 3 * x, rtol=1e-6)


@pytest.mark.parametrize("form", ["call", "call_with_hints", "decorator_factory", "cl_kernel"])
def test_ct_kernel_in_every_form(form, rng):
    def scale(x, out, T: ConstInt):
        t = ct.load(x, index=(ct.bid(0),), shape=(T,), padding_mode=ct.PaddingMode.ZERO)
        ct.store(out, index=(ct.bid(0),), tile=t * 2.0)
    k = {"call": lambda: ct.kernel(scale),
         "call_with_hints": lambda: ct.kernel(scale, occupancy=2),
         "decorator_factory": lambda: ct.kernel(occupancy=1)(scale),
         "cl_kernel": lambda: cl.kernel(ct.kernel(scale, occupancy=2))}[form]()
    x = rng.standard_normal(70).astype(np.float32)
    out = np.zeros_like(x)
    r = simulate(k, [x, out], grid=(3,), consts={"T": 32})
    assert not r.errors
    np.testing.assert_allclose(out, 2 * x, rtol=1e-6)
    if form in ("call_with_hints", "cl_kernel"):
        assert cl.kernel(k).definition.options.get("occupancy") == 2


@pytest.mark.parametrize("name", ["exp", "helper", "twice"])
def test_static_eval_picks_a_device_function_from_a_module_table(name, rng):
    def pick(x, out, T: ConstInt, OP: ct.Constant[str]):
        t = ct.load(x, index=(ct.bid(0),), shape=(T,), padding_mode=ct.PaddingMode.ZERO)
        f = ct.static_eval(OPS[OP])
        ct.store(out, index=(ct.bid(0),), tile=f(t))
    x = rng.standard_normal(64).astype(np.float32)
    out = np.zeros_like(x)
    r = simulate(ct.kernel(pick), [x, out], grid=(2,), consts={"T": 32, "OP": name})
    assert not r.errors
    want = {"exp": np.exp(x), "twice": 2 * x,
            "helper": np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))}[name]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


def test_implicit_conversions_where_cutile_makes_them(rng):
    def convert(x, idx, out_f32, out_f16, flags, T: ConstInt):
        i = ct.bid(0) * T + ct.arange(T, dtype=ct.int32)
        t = ct.load(x, index=(ct.bid(0),), shape=(T,), padding_mode=ct.PaddingMode.ZERO)
        ct.scatter(out_f32, i, t.astype(ct.int32))          # int32 -> float32: implicit
        ct.scatter(out_f16, i, 0.5)                          # a Python float: loosely typed
        ct.atomic_cas(flags, ct.bid(0), 0, 1)                # constants into int64
    x = (rng.standard_normal(64) * 10).astype(np.float32)
    out32, out16 = np.zeros(64, np.float32), np.zeros(64, np.float16)
    flags = np.zeros(2, np.int64)
    r = simulate(ct.kernel(convert), [x, np.arange(64, dtype=np.int32), out32, out16, flags],
                 grid=(2,), consts={"T": 32})
    assert not r.errors
    np.testing.assert_array_equal(out32, np.trunc(x))
    assert (out16 == 0.5).all() and (flags == 1).all()


def _reject_message(fn, args, consts, layouts):
    """cuTile's own message for ``fn`` (its front end, through the compile driver)."""
    k = cl.kernel(ct.kernel(fn))
    with pytest.raises(cl.CompileError) as e:
        k.compile("sm_90", layouts=layouts, use_cache=False, **consts)
    return e.value.message


def test_a_kernel_cutile_rejects_is_rejected_with_the_same_error(rng):
    from cutile_lab.compiling.specialization import ArrayLayout

    def narrowing(x, out, T: ConstInt):
        t = ct.load(x, index=(ct.bid(0),), shape=(T,))
        ct.scatter(out, ct.arange(T, dtype=ct.int32), t)     # float32 -> float16: refused
    message = _reject_message(narrowing, None, {"T": 32},
                              {"x": ArrayLayout("f32", 1), "out": ArrayLayout("f16", 1)})
    assert "cannot implicitly cast float32 to float16" in message
    with pytest.raises(SimulationError) as e:
        simulate(ct.kernel(narrowing), [rng.standard_normal(32).astype(np.float32),
                                        np.zeros(32, np.float16)], grid=(1,), consts={"T": 32})
    assert message in e.value.message
    assert e.value.span is not None and e.value.span.line > 0

    def not_pow2(x, out):
        t = ct.load(x, index=(0,), shape=(3,))
        ct.store(out, index=(0,), tile=t)
    message = _reject_message(not_pow2, None, {}, {"x": ArrayLayout("f32", 1),
                                                   "out": ArrayLayout("f32", 1)})
    with pytest.raises(SimulationError) as e:
        simulate(ct.kernel(not_pow2), [np.ones(8, np.float32), np.zeros(8, np.float32)],
                 grid=(1,))
    assert message in e.value.message


def test_raw_memory_loads_stores_and_atomics_by_offset(rng):
    def raw(x, y, counter, T: ConstInt):
        offs = ct.bid(0) * T + ct.arange(T, dtype=ct.int32)
        ok = offs < x.shape[0] * x.shape[1]
        v = x.get_raw_memory().load_offset(offs, mask=ok, padding_value=0.0)
        y.get_raw_memory().store_offset(offs, v + 1.0, mask=ok)
        counter.get_raw_memory().atomic_add_offset(0, ct.sum(ct.where(ok, 1, 0)))
    x = rng.standard_normal((10, 13)).astype(np.float32)
    y = np.zeros_like(x)
    counter = np.zeros(1, np.int32)
    r = simulate(ct.kernel(raw), [x, y, counter], grid=(5,), consts={"T": 32})
    assert not r.errors
    np.testing.assert_array_equal(y, x + 1)
    assert counter[0] == x.size
    assert r.ownership["y"].min() >= 0           # every element written, by a known tile


def test_raw_memory_offset_outside_the_array_is_reported():
    def past_the_end(x, T: ConstInt):
        offs = ct.arange(T, dtype=ct.int32) + 4
        x.get_raw_memory().store_offset(offs, 1.0)
    r = simulate(ct.kernel(past_the_end), [np.zeros(8, np.float32)], grid=(1,),
                 consts={"T": 8})
    assert "SIM003" in [d.code for d in r.errors]


def test_spin_lock_across_tiles_orders_their_updates(rng):
    def locked_add(x, total, lock, T: ConstInt):
        t = ct.load(x, index=(ct.bid(0),), shape=(T,), padding_mode=ct.PaddingMode.ZERO)
        while ct.atomic_cas(lock, 0, 0, 1) == 1:
            pass
        cur = ct.load(total, index=(0,), shape=(1,))
        ct.store(total, index=(0,), tile=cur + ct.sum(t))
        ct.atomic_xchg(lock, 0, 0)
    x = rng.standard_normal(256).astype(np.float32)
    total, lock = np.zeros(1, np.float32), np.zeros(1, np.int32)
    r = simulate(ct.kernel(locked_add), [x, total, lock], grid=(8,), consts={"T": 32})
    assert r.diagnostics == [] and lock[0] == 0
    np.testing.assert_allclose(total[0], x.sum(), rtol=1e-5)


def test_a_tile_waiting_for_a_later_tile_makes_progress():
    def handoff(flag, out):
        b = ct.bid(0)
        if b == 0:
            while ct.atomic_add(flag, 0, 0) == 0:         # waits for the last tile
                pass
        else:
            ct.atomic_xchg(flag, 0, 1)
        ct.store(out, index=(b,), tile=ct.full((1,), b + 1, dtype=ct.int32))
    flag, out = np.zeros(1, np.int32), np.zeros(2, np.int32)
    r = simulate(ct.kernel(handoff), [flag, out], grid=(2,))
    assert not r.errors
    np.testing.assert_array_equal(out, [1, 2])


def test_tiles_that_wait_for_each_other_forever_are_a_deadlock():
    def stuck(flag, out):
        while ct.atomic_add(flag, 0, 0) == 0:
            pass
        ct.store(out, index=(ct.bid(0),), tile=ct.full((1,), 1, dtype=ct.int32))
    r = simulate(ct.kernel(stuck), [np.zeros(1, np.int32), np.zeros(3, np.int32)], grid=(3,))
    [d] = r.errors
    assert d.code == "SIM022" and d.span.line > 0


def test_unlocked_read_modify_write_is_still_a_race(rng):
    def unlocked(x, total, T: ConstInt):
        t = ct.load(x, index=(ct.bid(0),), shape=(T,))
        cur = ct.load(total, index=(0,), shape=(1,))
        ct.store(total, index=(0,), tile=cur + ct.sum(t))
    r = simulate(ct.kernel(unlocked), [rng.standard_normal(64).astype(np.float32),
                                       np.zeros(1, np.float32)], grid=(2,), consts={"T": 32})
    assert {"SIM010", "SIM011"} <= {d.code for d in r.errors}


DTYPES = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
          "float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2",
          "float8_e8m0fnu", "float4_e2m1fn"]


@pytest.mark.parametrize("name", DTYPES)
def test_every_dtype_of_cuda_tile_loads_converts_and_stores(name, rng):
    import ml_dtypes
    np_dtype = np.dtype(getattr(ml_dtypes, name, None) or name)

    def roundtrip(x, y, wide, T: ConstInt):
        t = ct.load(x, index=(ct.bid(0),), shape=(T,), padding_mode=ct.PaddingMode.ZERO)
        ct.store(y, index=(ct.bid(0),), tile=t)
        ct.store(wide, index=(ct.bid(0),), tile=t.astype(ct.float32))
    raw = rng.integers(0, 4, 64) if np_dtype.kind in "biu" else rng.random(64) * 3
    x = raw.astype(np_dtype)
    y, wide = np.zeros_like(x), np.zeros(64, np.float32)
    r = simulate(ct.kernel(roundtrip), [x, y, wide], grid=(2,), consts={"T": 32})
    assert not r.errors
    assert (y.view(np.uint8) == x.view(np.uint8)).all()
    np.testing.assert_array_equal(wide, x.astype(np.float32))
