"""Memory ops of plain cuTile kernels: tile-space loads/stores, views, gather/scatter, atomics."""
import numpy as np
import pytest

from cutile_lab.kernel import kernels_from_source
from cutile_lab.simulation import simulate

HEADER = "import cuda.tile as ct\n\n"


def run(body: str, name: str, args, grid, consts=None):
    k = kernels_from_source(HEADER + body, f"<mem {name}>")[name]
    return simulate(k, args, grid, consts or {})


def test_padding_modes(rng):
    src = '''
@ct.kernel
def pads(out, x):
    a = ct.load(x, index=(1,), shape=(8,), padding_mode=ct.PaddingMode.ZERO)
    b = ct.load(x, index=(1,), shape=(8,), padding_mode=ct.PaddingMode.NEG_INF)
    c = ct.load(x, index=(1,), shape=(8,), padding_mode=ct.PaddingMode.NAN)
    d = ct.load(x, index=(1,), shape=(8,))
    ct.store(out, index=(0, 0), tile=ct.reshape(ct.cat((ct.cat((a, b), 0), ct.cat((c, d), 0)), 0), (4, 8)))
'''
    x = rng.standard_normal(10).astype(np.float32)
    out = np.zeros((4, 8), np.float32)
    r = run(src, "pads", [out, x], (1,))
    assert r.ok
    np.testing.assert_array_equal(out[:, :2], np.tile(x[8:], (4, 1)))
    assert (out[0, 2:] == 0).all() and (out[1, 2:] == -np.inf).all()
    assert np.isnan(out[2, 2:]).all() and (out[3, 2:] == 0).all()   # UNDETERMINED: zero here


def test_order_f_load(rng):
    src = '''
@ct.kernel
def transpose(out, x, B: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0), ct.bid(1)), shape=(B, B), order="F")
    ct.store(out, index=(ct.bid(0), ct.bid(1)), tile=t)
'''
    x = rng.standard_normal((8, 12)).astype(np.float32)
    out = np.zeros((12, 8), np.float32)
    r = run(src, "transpose", [out, x], (3, 2), {"B": 4})
    assert r.ok
    np.testing.assert_array_equal(out, x.T)


def test_scalar_load_and_store_and_num_tiles(rng):
    src = '''
@ct.kernel
def rev(out, x):
    n = x.shape[0]
    for i in range(n):
        v = ct.load(x, index=(i,), shape=())
        ct.store(out, index=(n - 1 - i,), tile=v)
    ct.store(out, index=(0,), tile=ct.num_tiles(x, 0, (4,)).astype(out.dtype))
'''
    x = rng.standard_normal(10).astype(np.float32)
    out = np.zeros(10, np.float32)
    r = run(src, "rev", [out, x], (1,))
    assert r.ok
    np.testing.assert_array_equal(out[1:], x[::-1][1:])
    assert out[0] == 3.0


def test_gather_with_mask_and_padding(rng):
    src = '''
@ct.kernel
def g(out, x):
    idx = ct.arange(16, dtype=ct.int32) * 2 - 4
    keep = idx != 6
    ct.store(out, index=(0,), tile=ct.gather(x, idx, mask=keep, padding_value=-1.0))
'''
    x = rng.standard_normal(20).astype(np.float32)
    out = np.zeros(16, np.float32)
    r = run(src, "g", [out, x], (1,))
    idx = np.arange(16) * 2 - 4
    expect = np.where((idx >= 0) & (idx < 20) & (idx != 6), x[np.clip(idx, 0, 19)], -1.0)
    np.testing.assert_array_equal(out, expect.astype(np.float32))
    [d] = r.diagnostics                     # 2 negative + 4 past the end, bounds-checked
    assert d.code == "SIM004" and d.severity == "warning" and r.ok
    assert any("6 index(es)" in n for n in d.notes)


def test_gather_scatter_2d(rng):
    src = '''
@ct.kernel
def shuffle(out, x, rows):
    r = ct.load(rows, index=(0,), shape=(4,))
    cols = ct.arange(8, dtype=ct.int32)
    t = ct.gather(x, (r[:, None], cols[None, :]))
    ct.scatter(out, (r[:, None], cols[None, :]), t * 2.0)
'''
    x = rng.standard_normal((6, 8)).astype(np.float32)
    rows = np.array([5, 0, 3, 2], np.int32)
    out = np.zeros_like(x)
    r = run(src, "shuffle", [out, x, rows], (1,))
    assert r.ok
    np.testing.assert_array_equal(out[rows], 2 * x[rows])
    assert (out[[1, 4]] == 0).all()
    assert set(np.unique(r.ownership["out"])) == {-1, 0}


def test_atomics_return_old_values(rng):
    src = '''
@ct.kernel
def at(old, counter, x):
    i = ct.arange(4, dtype=ct.int32)
    a = ct.atomic_add(counter, i % 2, ct.full((4,), 1, dtype=ct.int32))
    b = ct.atomic_max(x, i, ct.full((4,), 5, dtype=ct.int32))
    c = ct.atomic_cas(x, i, ct.full((4,), 5, dtype=ct.int32), ct.full((4,), 9, dtype=ct.int32))
    d = ct.atomic_xchg(x, i, ct.full((4,), 1, dtype=ct.int32))
    ct.store(old, index=(0, 0), tile=ct.reshape(ct.cat((ct.cat((a, b), 0), ct.cat((c, d), 0)), 0), (4, 4)))
'''
    old = np.zeros((4, 4), np.int32)
    counter = np.array([10, 20], np.int32)
    x = np.array([7, 3, 5, 1], np.int32)
    r = run(src, "at", [old, counter, x], (1,))
    assert r.ok, r.summary()
    np.testing.assert_array_equal(old[0], [10, 20, 11, 21])    # serialised duplicate indices
    np.testing.assert_array_equal(old[1], [7, 3, 5, 1])
    np.testing.assert_array_equal(old[2], [7, 5, 5, 5])
    np.testing.assert_array_equal(old[3], [7, 9, 9, 9])
    np.testing.assert_array_equal(counter, [12, 22])
    np.testing.assert_array_equal(x, [1, 1, 1, 1])


def test_float_atomic_add_from_all_tiles(rng):
    src = '''
@ct.kernel
def total(acc, x, B: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(B,), padding_mode=ct.PaddingMode.ZERO)
    ct.atomic_add(acc, 0, ct.sum(t))
'''
    x = rng.standard_normal(1000).astype(np.float32)
    acc = np.zeros(1, np.float32)
    r = run(src, "total", [acc, x], (8,), {"B": 128})
    assert r.ok and r.diagnostics == []
    np.testing.assert_allclose(acc[0], x.astype(np.float64).sum(), rtol=1e-5, atol=1e-4)


def test_array_slice_and_tiled_view(rng):
    src = '''
@ct.kernel
def views(out, x):
    mid = x.slice(0, 2, 6)
    tv = mid.tiled_view((2, 4), padding_mode=ct.PaddingMode.ZERO)
    a = tv.load((0, 0))
    b = tv.load((1, 1))
    ot = out.tiled_view((2, 4))
    ot.store((0, 0), a)
    ot.store((1, 1), b)
'''
    x = rng.standard_normal((8, 8)).astype(np.float32)
    out = np.zeros((4, 8), np.float32)
    r = run(src, "views", [out, x], (1,))
    assert r.ok
    np.testing.assert_array_equal(out[:2, :4], x[2:4, :4])
    np.testing.assert_array_equal(out[2:, 4:], x[4:6, 4:])
    assert (r.ownership["out"][:2, 4:] == -1).all()


def test_slice_of_output_records_in_the_right_place(rng):
    src = '''
@ct.kernel
def half(out, x, B: ct.Constant[int]):
    tail = out.slice(0, 4, 12)
    ct.store(tail, index=(ct.bid(0),), tile=ct.load(x, index=(ct.bid(0),), shape=(B,)))
'''
    x = rng.standard_normal(8).astype(np.float32)
    out = np.zeros(12, np.float32)
    r = run(src, "half", [out, x], (2,), {"B": 4})
    np.testing.assert_array_equal(out[4:], x)
    np.testing.assert_array_equal(r.ownership["out"], [-1] * 4 + [0] * 4 + [1] * 4)


def test_load_advanced_indexing(rng):
    src = '''
@ct.kernel
def adv(out, x, col):
    rows = ct.arange(4, dtype=ct.int32) * 2
    t = ct.load_advanced_indexing(x, (rows, ct.Slice(col, 4)), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(0, 0), tile=t)
'''
    x = rng.standard_normal((8, 8)).astype(np.float32)
    out = np.zeros((4, 4), np.float32)
    r = run(src, "adv", [out, x, 2], (1,))
    assert r.ok
    np.testing.assert_array_equal(out, x[::2, 2:6])


def test_partial_store_with_check_bounds_false_is_reported(rng):
    src = '''
@ct.kernel
def unchecked(z, x, B: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(B,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(z, index=(ct.bid(0),), tile=t, check_bounds=False)
'''
    x = rng.standard_normal(100).astype(np.float32)
    r = run(src, "unchecked", [np.zeros(100, np.float32), x], (2,), {"B": 64})
    [d] = r.diagnostics
    assert d.code == "SIM005" and d.span.line == 7 and "tile 1" in d.message


def test_ct_kernel_object_with_helper_functions(tmp_path, monkeypatch, rng):
    """A @ct.kernel from a module runs as is, helpers (@ct.function or plain) included."""
    pytest.importorskip("cuda.tile")
    (tmp_path / "sim_helper_mod.py").write_text('''
import cuda.tile as ct


@ct.function
def scaled(t, s):
    return t * s


def twice(t):
    return scaled(t, 2.0)


@ct.kernel
def k2(z, x, B: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(B,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(z, index=(ct.bid(0),), tile=twice(t) + 1.0)
''')
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib
    mod = importlib.import_module("sim_helper_mod")
    x = rng.standard_normal(10).astype(np.float32)
    z = np.zeros(10, np.float32)
    r = simulate(mod.k2, [z, x], (3,), {"B": 4})
    assert r.ok
    np.testing.assert_allclose(z, 2 * x.astype(np.float64) + 1, rtol=1e-6)
