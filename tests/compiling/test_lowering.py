"""Lowering keeps every statement on the user's line and maps columns back."""
import ast

import pytest

import cutile_lab as cl
from cutile_lab.compiling.lowering import lower

SRC = '''# a comment
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"],
      alpha: f32):
    t = load_tile_like(x, z)
    if alpha > 0:
        t = t * alpha
    elif alpha < 0:
        t = exp(t)
    else:
        t = t.astype(f32)
    for i in range(2):
        t = t + 1
    with unsafe():
        atomic_add(x, (tile_id(0),), t)
    z.store(t)
'''


def _lowered():
    [k] = cl.kernels_from_source(SRC, "<cell-9>").values()
    return k, lower(k.definition)


def test_each_statement_stays_on_its_line():
    k, low = _lowered()
    lines = low.text.splitlines()
    user = SRC.splitlines()
    for n, text in enumerate(user, 1):
        stripped = text.strip()
        if stripped.startswith(("t =", "z.store", "for", "if", "elif", "else")):
            assert lines[n - 1].strip(), f"line {n} ({stripped}) vanished in the lowering"
    assert "ct.store(z, index=(ct.bid(0),), tile=t)" in lines[14]
    assert lines[12].strip() == "if True:"            # with unsafe():
    assert lines[13].strip().startswith("ct.atomic_add(x, (ct.bid(0),), t)")
    assert lines[6].strip().startswith("elif alpha < 0")
    ast.parse(low.text)


def test_columns_map_back_to_the_users_expression():
    k, low = _lowered()
    lowered_line = low.text.splitlines()[7]          # t = ct.exp(t)
    col = lowered_line.index("ct.exp")
    span = low.user_span(8, col)
    assert (span.filename, span.line) == ("<cell-9>", 8)
    assert SRC.splitlines()[7][span.col:].startswith("exp(t)")


def test_const_generics_become_constant_parameters():
    k, low = _lowered()
    assert low.param_names == ["z", "x", "alpha", "B"] and low.const_params == ["B"]
    assert "B: ct.Constant[int]" in low.text.splitlines()[1]


def test_plain_cutile_kernel_passes_through():
    src = ("import cuda.tile as ct\n@ct.kernel\ndef k(a, B: ct.Constant[int]):\n"
           "    ct.store(a, index=(ct.bid(0),), tile=ct.full((B,), 1.0, dtype=ct.float32))\n")
    [k] = cl.kernels_from_source(src, "f.py").values()
    low = lower(k.definition)
    assert low.text.splitlines()[3].strip().startswith("ct.store(a, index=(ct.bid(0),)")
    assert low.const_params == ["B"]


PERSISTENT = '''
@kernel(schedule="persistent")
def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    z.store(t * 2.0)
'''


def test_persistent_schedule_keeps_lines_and_loops_over_owned_tiles():
    [k] = cl.kernels_from_source(PERSISTENT, "<cell-p>").values()
    low = lower(k.definition)
    lines = low.text.splitlines()
    assert lines[1].startswith("def scale(")                     # moved up to the decorator
    assert lines[2].strip().startswith("for _tile in range(ct.bid(0), ")
    assert "ct.num_blocks(0)" in lines[2]
    assert "_t0 = _tile" in lines[3] and "ct.load(x, index=(_t0,)" in lines[3]
    assert lines[4].strip() == "ct.store(z, index=(_t0,), tile=t * 2.0)"
    span = low.user_span(5, lines[4].index("ct.store"))
    assert (span.line, span.col) == (5, 4)


def test_persistent_schedule_needs_the_decorator_line():
    src = 'def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n    z.store(load_tile_like(x, z))\n'
    [k] = cl.kernels_from_source(src, "<cell-q>").values()
    k.definition.options["schedule"] = "persistent"
    with pytest.raises(cl.CompileError, match="decorator"):
        lower(k.definition)


REVERSED = '''
@kernel(tile_order="reverse")
def tri(out: Mut[Tensor[f32, "1, B"]], x: Tensor[f32, "?, ?"]):
    r = tile_id(0)
    out.store(load_tile_like(x, out) + r)
'''


def test_reverse_tile_order_counts_tiles_from_the_last_one():
    import numpy as np
    from cutile_lab.simulation import simulate
    [k] = cl.kernels_from_source(REVERSED, "<cell-r>").values()
    lines = lower(k.definition).text.splitlines()
    assert lines[3].strip() == "r = ct.num_blocks(0) - 1 - ct.bid(0)"
    assert "index=(ct.num_blocks(0) - 1 - ct.bid(0), ct.num_blocks(1) - 1 - ct.bid(1))" \
        in lines[4]
    x = np.random.default_rng().standard_normal((5, 8)).astype(np.float32)
    out = np.full_like(x, np.nan)
    res = simulate(k, [out, x], (5, 2), {"B": 4})
    assert res.ok, res.summary()
    np.testing.assert_allclose(out, x + np.arange(5)[:, None])
    # instance 0 (launched first) owns the last tile; every tile has one owner
    owners = res.ownership["out"]
    assert owners[4, 4] == 0 and owners[0, 0] == 9
    assert sorted(np.unique(owners)) == list(range(10))


@pytest.mark.parametrize("decorator,message", [
    ('@kernel(schedul="persistent")', "no option `schedul`"),
    ('@kernel(schedule="persistant")', "`schedule='persistant'` is not one of"),
    ('@kernel(tile_order="column")', "`tile_order='column'` is not one of"),
    ("@kernel(occupancy=0)", "`occupancy=0`: a positive integer"),
    ('@kernel(tile_order="reverse", schedule="persistent")', "do not combine"),
])
def test_kernel_options_are_checked(decorator, message):
    src = decorator + '\ndef k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n' \
        '    z.store(load_tile_like(x, z))\n'
    [k] = cl.kernels_from_source(src, "<cell-o>").values()
    with pytest.raises(cl.CompileError, match=message) as e:
        lower(k.definition)
    assert e.value.help
