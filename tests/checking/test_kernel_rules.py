"""Kernel-level rules: a corpus of good kernels (no error, no warning) and bad ones (exactly the
expected code, at the expected line and column)."""
from __future__ import annotations

import ast

import pytest

from cutile_lab.checking import check_kernel, check_source
from cutile_lab.checking import kernel_rules
from cutile_lab.checking.tiletypes import (TileV, broadcast, dim_arith, implicit_cast_ok,
                                           promote, reduce_shape)
from cutile_lab.diagnostics import CODES, Diagnostic, sort_diagnostics
from cutile_lab.language.dtypes import DTYPES
from cutile_lab.language.frontend import KernelSource, parse_kernels

from tests.checking.corpus import BAD, GOOD, GOOD_EXPECT


def _kernel(text: str, filename: str = "<test>"):
    source = KernelSource(text, filename)
    source.register()
    [k] = parse_kernels(source, all_functions=True)
    return k


def test_corpus_sizes():
    assert len(GOOD) >= 45
    assert len(BAD) >= 70


def _where(diags) -> str:
    return "\n".join(f"{d.code} {d.span}: {d.message}" for d in diags)


@pytest.mark.parametrize("name", sorted(GOOD))
def test_good_kernels_are_clean(name):
    """No error, no warning; exactly the notes the file's header lists (an unchecked block)."""
    diags = check_source(GOOD[name], f"<{name}>")
    got = {(d.code, d.span.line, d.span.col + 1) for d in diags}
    assert got == set(GOOD_EXPECT[name]), _where(diags)
    assert all(d.severity == "note" for d in diags), _where(diags)


@pytest.mark.parametrize("case", BAD, ids=[b.name for b in BAD])
def test_bad_kernels_report_exactly_their_codes(case):
    diags = check_source(case.text, f"<{case.name}>")
    codes = sorted({d.code for d in diags})
    assert codes == sorted({c for c, _, _ in case.expect}), _where(diags)
    got = {(d.code, d.span.line, d.span.col + 1) for d in diags}
    for want in case.expect:
        assert want in got, f"missing {want}:\n{_where(diags)}"
    for d in diags:
        assert d.severity == CODES[d.code].severity
        assert d.message and (d.help or d.notes or d.severity == "note")


def test_every_kernel_code_has_a_bad_example():
    kernel_codes = {c for c, info in CODES.items() if info.level == "kernel"} - {"TL099"}
    assert kernel_codes <= {c for b in BAD for c, _, _ in b.expect}


def test_errors_come_first_in_source_order():
    text = '''
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    with unsafe():
        u = t
    z.store(t)
    x.store(t)
    zz = undefined_thing
'''
    diags = check_source(text, "<order>")
    sev = [d.severity for d in diags]
    assert sev == sorted(sev, key=["error", "warning", "note"].index)
    errors = [d for d in diags if d.is_error]
    assert [d.span.line for d in errors] == sorted(d.span.line for d in errors)
    assert sort_diagnostics(list(reversed(diags))) == diags


def test_module_level_names_are_known():
    text = '''
import math
SCALE = 2.0

def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) * SCALE * math.pi)
'''
    assert check_source(text, "<mod>") == []


def test_globals_make_names_known():
    k = _kernel('''def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) * FACTOR)
''', "<globals>")
    assert [d.code for d in check_kernel(k)] == ["TL030"]
    assert check_kernel(k, {"FACTOR": 3.0}) == []


def test_did_you_mean_uses_locals_and_params():
    diags = check_source('''def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    tile = load_tile_like(x, z)
    z.store(tiel * 2.0)
''', "<dym>")
    assert [d.code for d in diags] == ["TL030"]
    assert "`tile`" in diags[0].help


def test_unknown_name_reported_once_per_name():
    diags = check_source('''def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z) * nope
    z.store(t * nope)
''', "<once>")
    assert [d.code for d in diags] == ["TL030"]


def test_no_kernel_and_bad_syntax_become_tl000():
    [d] = check_source("x = 1\n", "<empty>")
    assert d.code == "TL000" and d.is_error
    [d] = check_source("def k(:\n", "<syntax>")
    assert d.code == "TL000" and d.span.line == 1


def test_a_failing_rule_becomes_a_tl099_note(monkeypatch):
    def broken(ctx):
        raise RuntimeError("boom")
        yield
    monkeypatch.setattr(kernel_rules, "TILE_RULES", kernel_rules.TILE_RULES + [broken])
    import cutile_lab.checking.kernel_rules as kr
    assert broken in kr.TILE_RULES
    diags = check_source(GOOD["vector_add"], "<boom>")
    assert [d.code for d in diags] == ["TL099"]
    assert diags[0].severity == "error" and "broken" in diags[0].message


def test_store_in_both_branches_and_after_early_return_is_once():
    assert check_source(GOOD["branches"], "<b>") == []
    assert check_source(GOOD["early_return"], "<r>") == []


def test_stored_twice_labels_the_first_store():
    case = next(b for b in BAD if b.name == "stored_twice")
    [d] = check_source(case.text, "<twice>")
    assert d.labels and d.labels[0].span.line == 4 and "first" in d.labels[0].message


def test_unstored_output_suggests_the_matching_tile():
    case = next(b for b in BAD if b.name == "never_stored")
    [d] = check_source(case.text, "<never>")
    assert "`z.store(t)`" in d.help


def test_dtype_mismatch_explains_the_promotion():
    case = next(b for b in BAD if b.name == "store_narrowing_dtype")
    [d] = check_source(case.text, "<dt>")
    assert ".astype(f16)" in d.help
    assert any("`alpha` is f32" in n for n in d.notes)


def test_shape_mismatch_suggests_keepdims_and_transpose():
    reduced = next(b for b in BAD if b.name == "store_shape_reduced")
    [d] = check_source(reduced.text, "<red>")
    assert "keepdims=True" in d.help
    transposed = next(b for b in BAD if b.name == "store_shape_transposed")
    [d] = check_source(transposed.text, "<tr>")
    assert "transpose(t)" in d.help


def test_shared_store_help_names_the_output():
    case = next(b for b in BAD if b.name == "store_into_shared")
    [d] = check_source(case.text, "<sh>")
    assert "`z.store(t)`" in d.help
    assert d.labels and d.labels[0].span.line == 2


# --- the abstract interpretation of tile types ------------------------------------------------

def test_promotion_follows_cutiles_table():
    f16, bf16, f32, f64 = (DTYPES[n] for n in ("f16", "bf16", "f32", "f64"))
    i8, i32, u8, b = (DTYPES[n] for n in ("i8", "i32", "u8", "bool"))
    assert promote(f16, f32) is f32 and promote(bf16, f32) is f32
    assert promote(f16, bf16) is None
    assert promote(i8, i32) is i32 and promote(u8, i8) is None
    assert promote(i32, f16) is f16 and promote(b, i8) is i8
    assert promote(DTYPES["tf32"], f32) is None
    assert implicit_cast_ok(f16, f32) and not implicit_cast_ok(f32, f16)
    assert implicit_cast_ok(i8, i32) and not implicit_cast_ok(f32, i32)
    assert promote(f64, f32) is f64


def test_broadcast_and_reduce_shapes():
    assert broadcast(("BM", 1), (1, "BN")) == ("BM", "BN")
    assert broadcast((4,), ("B", 4)) == ("B", 4)
    assert broadcast(("BM",), ("BN",)) == (None,)
    from cutile_lab.checking.tiletypes import TupleV, loose_const
    assert reduce_shape(("BM", "BN"), loose_const(1), False) == ("BM",)
    assert reduce_shape(("BM", "BN"), loose_const(-1), True) == ("BM", 1)
    assert reduce_shape(("BM", "BN"), "all", False) == ()
    assert reduce_shape(("BM", "BN"), TupleV((loose_const(0), loose_const(1))), True) == (1, 1)


def _types_of(text: str) -> dict[str, object]:
    k = _kernel(text)
    from cutile_lab.checking.context import KernelContext
    ctx = KernelContext(k)
    t = ctx.types
    out = {}
    for n in ast.walk(k.node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out[n.id] = t.of(n)
    return out


def test_types_of_common_forms():
    types = _types_of('''def k(z: Mut[Tensor[f16, "BM, BN"]], x: Tensor[f16, "?, ?"], alpha: f32,
      BK: Const[int] = 32):
    a = load_tile_like(x, z)
    b = a * alpha
    c = a * 2.0
    d = load_tile(x, (0, 0), (BK, BN))
    e = mma(a, d, zeros((BM, BN), dtype=f32))
    f = a @ d
    g = sum(a, axis=0, keepdims=True)
    h = transpose(a)
    i = a.astype(f32).reshape((BM * BN,))
    j = where(a > 0, a, 0.0)
    l = permute(reshape(a, (1, BM, BN)), (2, 1, 0))
    m = z.load()
    n = arange(16, dtype=i32)
    z.store(a)
''')
    f16, f32, i32 = DTYPES["f16"], DTYPES["f32"], DTYPES["i32"]
    assert types["a"] == TileV(("BM", "BN"), f16)
    assert types["b"] == TileV(("BM", "BN"), f32)
    assert types["c"] == TileV(("BM", "BN"), f16)
    assert types["d"] == TileV(("BK", "BN"), f16)
    assert types["e"] == TileV(("BM", "BN"), f32)
    assert types["f"] == TileV(("BM", "BN"), f16)
    assert types["g"] == TileV((1, "BN"), f16)
    assert types["h"] == TileV(("BN", "BM"), f16)
    assert types["i"] == TileV((dim_arith(ast.Mult, "BM", "BN"),), f32)
    assert types["j"] == TileV(("BM", "BN"), f16)
    assert types["l"] == TileV(("BN", "BM", 1), f16)
    assert types["m"] == TileV(("BM", "BN"), f16)
    assert types["n"] == TileV((16,), i32)


def test_loop_carried_types_reach_a_fixpoint():
    types = _types_of('''def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    acc = zeros((B,), dtype=f32)
    s = 0
    for i in range(8):
        acc = acc + load_tile_like(x, z)
        s = s + 1
    z.store(acc)
''')
    assert types["acc"] == TileV(("B",), DTYPES["f32"])


def test_branches_join_types():
    types = _types_of('''def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], flag: i32):
    if flag > 0:
        t = load_tile_like(x, z)
    else:
        t = load_tile_like(x, z).astype(f16)
    z.store(t.astype(f32))
''')
    assert types["t"].shape == ("B",)


def test_diagnostic_values_are_complete():
    for case in BAD:
        for d in check_source(case.text, f"<{case.name}>"):
            assert isinstance(d, Diagnostic)
            assert d.code in CODES and d.severity in ("error", "warning", "note")
            assert d.span is not None and d.span.line >= 1
            assert not d.message.endswith(".")


def test_kernels_cut_out_of_a_file_keep_the_files_lines(tmp_path):
    """``@cl.kernel`` parses the function's own block with a line offset: diagnostics point at
    the file's lines, and the file's module-level names are known."""
    from cutile_lab.diagnostics.render import render_text
    path = tmp_path / "kernels.py"
    path.write_text('''import cutile_lab as cl
from cutile_lab.lang import *

FACTOR = 3.0


@cl.kernel
def scaled(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z) * FACTOR
    x.store(t)
    z.store(t)
''')
    lines = path.read_text().splitlines(keepends=True)
    block = "".join(lines[6:])
    source = KernelSource(block, str(path), line_offset=6)
    [k] = parse_kernels(source, only="scaled", all_functions=True)
    diags = check_kernel(k)
    assert [d.code for d in diags] == ["TL010"]
    assert diags[0].span.line == 10
    text = render_text(diags)
    assert "10 |     x.store(t)" in text


def test_load_kernels_and_render_for_the_cli(tmp_path):
    """What ``cutile-lab check FILE.py`` does: load_kernels + check_kernel + render_text."""
    import cutile_lab as cl
    from cutile_lab.diagnostics.render import render_text
    path = tmp_path / "bad.py"
    path.write_text(next(b for b in BAD if b.name == "unknown_name").text)
    kernels = cl.load_kernels(str(path))
    diags = [d for k in kernels.values() for d in check_kernel(k.definition, k.globals)]
    assert any(d.is_error for d in diags)
    assert "lod_tile_like" in render_text(diags)
