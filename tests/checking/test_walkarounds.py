"""Every way around the old name-based rules that issue 14 lists is now caught, exactly as a new
user would write it, and the alias rustc accepts is accepted (the corpus has each of these with
its expected line and column; this file keeps the list in one place)."""
from __future__ import annotations

import pytest

from cutile_lab.checking import check_source

H = 'def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'

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
