"""Every way around the old name-based rules that issue 14 lists is now caught, exactly as a new
user would write it, and the alias rustc accepts is accepted (the corpus has each of these with
its expected line and column; this file keeps the list in one place)."""
from __future__ import annotations

import pytest

from cutile_lab.checking import check_source

H = 'def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'

# a helper that stores the own tile, and one that stores at a raw index: which one does `put` run?
PUT_OR_RAW = '''\
import cuda.tile as ct


def put(d, t):
    d.store(t)


def other(d, t):
    ct.store(d, (0,), t)


'''

CAUGHT = {
    "a tile twice the own tile's size": (["TL016"], H + '''\
    t = load_tile(x, (tile_id(0),), (B * 2,))
    z.store(t)
'''),
    "two stores, through an alias": (["TL014", "TL029"], H + '''\
    w = z
    w.store(load_tile_like(x, z)); z.store(load_tile_like(x, z))
'''),
    "a store into a shared input through a local": (["TL010", "TL013"], '''\
def k(z: Mut[Tensor[f32, "B"]], b: Tensor[f32, "?"]):
    view = b
    view.store(load_tile_like(b, z))
'''),
    "unsafe is reported as unchecked": (["TL050"], '''\
def shift(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    with unsafe():
        store(z, (tile_id(0) + 1,), load_tile_like(x, z))
'''),
    "store = z.store called twice": (["TL014"], H + '''\
    store = z.store
    store(load_tile_like(x, z))
    store(load_tile_like(x, z))
'''),
    "a module-level helper that stores into a shared input": (["TL010"], '''\
def put(dst, t):
    dst.store(t)


''' + H + '''\
    put(x, load_tile_like(x, z))
    z.store(load_tile_like(x, z))
'''),
    "a renamed cuda.tile outside unsafe": (["TL011"], '''\
import cuda.tile as ctile


''' + H + '''\
    ctile.store(z, (tile_id(0),), load_tile_like(x, z))
'''),
    "tile_id(1) on a 1-D partition": (["TL043"], H + '''\
    z.store(load_tile(x, (tile_id(1),), (B,)))
'''),
    "an i32 tile stored into an f16 output": (["TL017"], '''\
def k(z: Mut[Tensor[f16, "B"]], x: Tensor[i32, "?"]):
    z.store(load_tile_like(x, z))
'''),
    "xa = x inside unsafe to dodge TL019": (["TL019", "TL050"], H + '''\
    t = load_tile_like(x, z)
    z.store(t)
    with unsafe():
        xa = x
        store(xa, (tile_id(0),), t)
'''),
    "two names for one tile by tuple unpacking": (["TL014", "TL029"], H + '''\
    a, b = z, z
    a.store(load_tile_like(x, z))
    b.store(load_tile_like(x, z))
'''),
    "the own tile handed back by a helper, then stored through both": (["TL014", "TL029"], '''\
def same(d):
    return d


''' + H + '''\
    w = same(z)
    w.store(load_tile_like(x, z))
    z.store(load_tile_like(x, z))
'''),
    "a helper that reads the neighbour's tile of the output": (["TL024"], '''\
def right(a):
    return load_tile(a, (tile_id(0) + 1,), a.shape)


''' + H + '''\
    z.store(right(z))
'''),
    "a helper that reads another output shaped like this one": (["TL024"], '''\
def like(a, b):
    return load_tile_like(a, b)


def k(z: Mut[Tensor[f32, "B"]], y: Mut[Tensor[f32, "C"]], x: Tensor[f32, "?"]):
    y.store(load_tile_like(x, y))
    z.store(like(y, z))
'''),
    "a store through a list inside a helper": (["TL031"], '''\
def put(d, t):
    [d][0].store(t)


''' + H + '''\
    put(x, load_tile_like(x, z))
    z.store(load_tile_like(x, z))
'''),
    "a store through := inside a helper": (["TL031"], '''\
def put(d, t):
    (w := d).store(t)


''' + H + '''\
    put(x, load_tile_like(x, z))
    z.store(load_tile_like(x, z))
'''),
    "a store in a comprehension inside a helper": (["TL031"], '''\
def put(d, t):
    [a.store(t) for a in (d,)]


''' + H + '''\
    put(x, load_tile_like(x, z))
    z.store(load_tile_like(x, z))
'''),
    "a helper storing a tile of twice the size by keyword": (["TL025"], '''\
def put(d, t):
    d.store(tile=t)


''' + H + '''\
    put(z, load_tile(x, (tile_id(0),), (B * 2,)))
'''),
    "a bound store given the tile by keyword": (["TL025"], H + '''\
    s = z.store
    s(tile=load_tile(x, (tile_id(0),), (B * 2,)))
'''),
    "a helper wrapped by a decorator that swaps its body": (["TL013", "TL037"], '''\
import cuda.tile as ct


def swap(f):
    def w(d, t):
        ct.store(d, (0,), t)
    return w


@swap
def put(d, t):
    d.store(t)


''' + H + '''\
    put(z, load_tile_like(x, z))
'''),
    "a helper defined again inside an if": (["TL013", "TL038"], '''\
import cuda.tile as ct


def put(d, t):
    d.store(t)


if True:
    def put(d, t):
        ct.store(d, (0,), t)


''' + H + '''\
    put(z, load_tile_like(x, z))
'''),
    "a helper rebound by a global statement in a function": (["TL013", "TL038"], PUT_OR_RAW + '''\
def swap():
    global put
    put = other


swap()


''' + H + '''\
    put(z, load_tile_like(x, z))
'''),
    "a helper rebound through globals()": (["TL013", "TL038"], PUT_OR_RAW + '''\
globals()["put"] = other


''' + H + '''\
    put(z, load_tile_like(x, z))
'''),
    # found by the adversarial hunt of session 7: calls whose callee the checker cannot tell
    "a module-level value that is not a tensor, stored into": (["TL038"], '''\
G = None


''' + H + '''\
    G.store(load_tile_like(x, z))
    z.store(load_tile_like(x, z))
'''),
    "Tensor.store called on a shared input": (["TL038"], H + '''\
    Tensor.store(x, load_tile_like(x, z))
    z.store(load_tile_like(x, z))
'''),
    "cuTile's store through the module's __dict__": (["TL038"], '''\
import cuda.tile as ct


''' + H + '''\
    ct.__dict__["store"](z, (tile_id(0) + 1,), load_tile_like(x, z))
    z.store(load_tile_like(x, z))
'''),
    "cuTile's store through __call__": (["TL038"], '''\
import cuda.tile as ct


''' + H + '''\
    ct.store.__call__(x, (tile_id(0),), load_tile_like(x, z))
    z.store(load_tile_like(x, z))
'''),
    "a shared input's bound store through __call__": (["TL038"], H + '''\
    x.store.__call__(load_tile_like(x, z))
    z.store(load_tile_like(x, z))
'''),
    "a class's static method that stores into a shared input": (["TL038"], '''\
class Put:
    @staticmethod
    def into(dst, t):
        dst.store(t)


''' + H + '''\
    Put.into(x, load_tile_like(x, z))
    z.store(load_tile_like(x, z))
'''),
    "raw memory of a value that is one tensor or another": (["TL038"], '''\
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], c: i32):
    w = z if c > 0 else x
    w.get_raw_memory().store_offset(0, load_tile_like(x, z))
    z.store(load_tile_like(x, z))
'''),
    "getattr inside a helper": (["TL038"], '''\
def put(dst, t):
    getattr(dst, "store")(t)


''' + H + '''\
    put(x, load_tile_like(x, z))
    z.store(load_tile_like(x, z))
'''),
    "a helper that calls the kernel back": (["TL037"], '''\
def again(z, x):
    k(z, x)


''' + H + '''\
    again(z, x)
    z.store(load_tile_like(x, z))
'''),
    "load_tile_like from another output whose tile is another shape": (["TL024"], '''\
def k(z: Mut[Tensor[f32, "B"]], y: Mut[Tensor[f32, "C"]], x: Tensor[f32, "?"]):
    y.store(load_tile_like(x, y))
    z.store(load_tile_like(y, z))
'''),
}


@pytest.mark.parametrize("what", sorted(CAUGHT))
def test_caught(what):
    codes, text = CAUGHT[what]
    diags = check_source(text, "<walkaround>")
    assert sorted({d.code for d in diags}) == sorted(codes), \
        [(d.code, d.message) for d in diags]


def test_out_equals_z_then_store_is_accepted():
    assert check_source(H + '''\
    t = load_tile_like(x, z)
    out = z
    out.store(t)
''', "<alias>") == []


def test_another_output_of_the_same_tile_is_read_like_its_own():
    assert check_source('''\
def k(z: Mut[Tensor[f32, "B"]], y: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    y.store(load_tile_like(x, y))
    z.store(load_tile_like(y, z))
''', "<same tile>") == []


class _Put:
    @staticmethod
    def into(dst, t):
        dst.store(t)


@pytest.mark.parametrize("name,value", [
    ("G", "an array"), ("G", None), ("G", _Put), ("G", _Put()), ("G", print)])
def test_notebook_values_that_are_not_tensors_or_helpers(name, value):
    """A name of the notebook's namespace bound to something the checker cannot read (a device
    array, None, a class or object, a builtin function) is never a silent way to a store."""
    if value == "an array":
        import numpy as np
        value = np.random.default_rng().standard_normal(64).astype(np.float32)
    for body in ("    G.store(load_tile_like(x, z))\n", "    G.into(x, load_tile_like(x, z))\n",
                 "    G(x, load_tile_like(x, z))\n"):
        diags = check_source(H + body + "    z.store(load_tile_like(x, z))\n", "<ns>",
                             globals_={name: value})
        assert any(d.is_error for d in diags), (body, value, [(d.code, d.message) for d in diags])


def test_the_own_tile_handed_back_by_a_helper_is_stored_through_its_new_name():
    assert check_source('''\
def same(d):
    return d


''' + H + '''\
    t = load_tile_like(x, z)
    w = same(z)
    w.store(t)
''', "<moved by a helper>") == []


def test_a_namespace_helper_wrapped_by_another_decorator_is_not_followed():
    """``functools.wraps`` points ``__wrapped__`` at the original, but the wrapper is what the
    name is: the checker does not read the original's body as if it ran."""
    import functools

    def put(d, t):
        d.store(t)

    @functools.wraps(put)
    def wrapper(d, t):
        return put(d, t)

    diags = check_source(H + "    put(z, load_tile_like(x, z))\n", "<wrapped>",
                         globals_={"put": wrapper})
    assert "TL037" in {d.code for d in diags}, [(d.code, d.message) for d in diags]
