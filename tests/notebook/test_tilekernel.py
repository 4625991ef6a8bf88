"""``%load_ext cutile_lab`` and ``%%tilekernel`` end to end, in a real InteractiveShell."""
from __future__ import annotations

import json

import numpy as np
import pytest
from IPython.core.error import UsageError

from cutile_lab.kernel import Kernel
from cutile_lab.errors import TileCellError
from cutile_lab.notebook.report import REPORT_MIME

ADD = '''def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    tx = load_tile_like(x, z)
    ty = load_tile_like(y, z)
    z.store(tx + ty)
'''

REPORT_KEYS = {"version", "kind", "kernel", "arch", "cell_id", "source", "diagnostics",
               "tileir", "resources", "sass", "remarks", "timings", "benchmark"}


def _check_diag_shape(d: dict) -> None:
    assert {"code", "severity", "message", "span", "labels", "help", "url"} <= set(d)
    assert set(d["span"]) == {"line", "col", "end_line", "end_col"}
    for lab in d["labels"]:
        assert set(lab) == {"span", "message"}


def test_load_ext_injects_language_names(shell):
    shell.ip.user_ns.clear()
    cell = shell.run("%reload_ext cutile_lab")
    assert cell.ok, cell.error
    import cutile_lab
    from cutile_lab import lang
    for name in lang.__all__:
        assert shell.ns[name] is getattr(lang, name)
    assert shell.ns["cl"] is cutile_lab
    # cuTile's op names would shadow Python's builtins: they are not injected
    for name in ("sum", "max", "min", "exp", "abs"):
        assert name not in shell.ns
    assert "tilekernel" in shell.ip.magics_manager.magics["cell"]
    for name in ("tile_time", "tile_device", "tile_roofline", "tile_bandwidth"):
        assert name in shell.ip.magics_manager.magics["line"]


def test_good_kernel_compiles_and_is_defined(shell):
    cell = shell.run("%%tilekernel --spec B=128 --arch sm_90\n" + ADD)
    assert cell.ok, cell.error
    assert isinstance(shell.ns["add"], Kernel)
    assert len(cell.bundles) == 1
    bundle = cell.bundles[0]
    assert set(bundle) == {REPORT_MIME, "text/html", "text/plain"}
    report = bundle[REPORT_MIME]
    json.dumps(report)                      # the contract is plain JSON
    assert REPORT_KEYS <= set(report)
    assert report["version"] == 1 and report["kind"] == "compile"
    assert report["kernel"] == "add" and report["arch"] == "sm_90"
    assert report["status"] == "compiled" and report["consts"] == {"B": 128}
    src = report["source"]
    # the text starts on the cell's line 2, under the magic line
    assert src["filename"].startswith("<tilekernel-cell-") and src["first_line"] == 2
    assert src["text"] == ADD
    ir = report["tileir"]["text"]
    for op in ("load_view_tko", "addf", "store_view_tko", "tile<128xf32>"):
        assert op in ir
    # every Tile IR line maps into the cell; the loads come from lines 2 and 3, the add and
    # store from line 4
    line_map = report["tileir"]["line_map"]
    ir_lines = ir.splitlines()
    assert all(1 <= s <= 4 and 1 <= i <= len(ir_lines) for i, s in line_map)
    by_src = {}
    for i, s in line_map:
        by_src.setdefault(s, []).append(ir_lines[i - 1])
    assert any("load_view_tko" in x for x in by_src[2])
    assert any("load_view_tko" in x for x in by_src[3])
    assert any("addf" in x for x in by_src[4]) and any("store_view_tko" in x for x in by_src[4])
    res = report["resources"]
    assert set(res) >= {"registers", "shared_bytes", "local_bytes", "max_threads_per_block",
                        "spill_stores", "spill_loads"}
    assert res["registers"] > 0 and res["max_threads_per_block"] == 128
    t = report["timings"]
    assert {"check", "lower", "bytecode", "disasm", "tileiras", "total", "cache"} <= set(t)
    assert t["cache"] == "miss" and t["total"] > 0
    assert report["diagnostics"] == []
    assert "ct.load" in report["lowered"]
    # HTML: compact (folded sections), highlighted, linked to the source lines
    html = bundle["text/html"]
    assert html.count("<details") >= 4 and "<details open" not in html
    assert "Tile IR" in html and "Resources" in html and "cache miss" in html
    assert 'class="cl-ir-op"' in html and ">addf</span>" in html
    assert 'class="cl-s4"' in html and ":has(.cl-s4:hover)" in html
    assert "from line 4: z.store(tx + ty)" in html
    # plain text: one summary line
    assert bundle["text/plain"].startswith("add [sm_90] B=128")
    assert "registers" in bundle["text/plain"]


def test_second_run_hits_the_cache(shell):
    assert shell.run("%%tilekernel --spec B=128\n" + ADD).ok
    cell = shell.run("%%tilekernel --spec B=128\n" + ADD)
    assert cell.ok
    assert cell.report["timings"]["cache"] in ("memory", "disk")
    assert "cache memory" in cell.html or "cache disk" in cell.html
    cell = shell.run("%%tilekernel --spec B=128 --no-cache\n" + ADD)
    assert cell.report["timings"]["cache"] == "miss"


def test_distinct_filename_per_cell(shell):
    a = shell.run("%%tilekernel\n" + ADD).report["source"]["filename"]
    b = shell.run("%%tilekernel\n" + ADD).report["source"]["filename"]
    assert a != b
    import linecache
    assert linecache.getline(b, 4).strip() == "z.store(tx + ty)"


def test_unbound_generics_compile_at_launch(shell):
    cell = shell.run("%%tilekernel\n" + ADD)
    assert cell.ok, cell.error
    r = cell.report
    assert r["status"] == "checked" and r["tileir"] is None and r["timings"] is None
    assert any("will compile at launch" in n and "B" in n for n in r["notes"])
    assert "will compile at launch" in cell.text and "will compile at launch" in cell.html
    assert isinstance(shell.ns["add"], Kernel)


def test_kernel_without_generics_compiles_eagerly(shell):
    cell = shell.run('%%tilekernel\n'
                     'def neg(z: Mut[Tensor[f16, "64"]], x: Tensor[f16, "?"]):\n'
                     '    z.store(-load_tile_like(x, z))\n')
    assert cell.ok, cell.error
    assert cell.report["status"] == "compiled"
    assert "negf" in cell.report["tileir"]["text"]


def test_default_generic_compiles_eagerly(shell):
    cell = shell.run('%%tilekernel\n'
                     'def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], '
                     'B: Const[int] = 256):\n'
                     '    z.store(load_tile_like(x, z) * 2.0)\n')
    assert cell.ok, cell.error
    assert cell.report["status"] == "compiled" and cell.report["consts"] == {"B": 256}
    assert "tile<256xf32>" in cell.report["tileir"]["text"]


BAD = '''def good(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z))

def bad(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    x.store(t)
'''


def test_bad_kernel_shows_diagnostic_and_is_not_defined(shell):
    shell.ns["keep_me"] = 42
    cell = shell.run("%%tilekernel\n" + BAD)
    assert not cell.ok
    assert isinstance(cell.error, TileCellError)
    assert "bad" in str(cell.error) and "not defined" in str(cell.error)
    assert "bad" not in shell.ns
    assert isinstance(shell.ns["good"], Kernel)       # the good kernel of the cell is defined
    assert shell.ns["keep_me"] == 42                  # and nothing of the user's is lost
    reports = {r["kernel"]: r for r in cell.reports}
    assert reports["good"]["status"] == "checked"
    bad = reports["bad"]
    assert bad["status"] == "error" and bad["tileir"] is None
    [d] = [d for d in bad["diagnostics"] if d["code"] == "TL010"]
    _check_diag_shape(d)
    assert d["severity"] == "error" and "`x`" in d["message"]
    assert d["span"] == {"line": 6, "col": 4, "end_line": 6, "end_col": 14}   # the cell's line
    [label] = d["labels"]
    assert label["span"]["line"] == 4 and "shared" in label["message"]
    assert d["help"] and d["url"] is None     # never a path into the source tree
    bundle = [b for b in cell.bundles if b[REPORT_MIME]["kernel"] == "bad"][0]
    html, text = bundle["text/html"], bundle["text/plain"]
    assert "TL010" in html and 'data-line="6"' in html
    assert html.index("TL010") < html.index("note:")           # diagnostics first
    assert "error[TL010]" in text and "6 |     x.store(t)" in text
    assert "^^^^^^^^^^" in text
    assert "Traceback" not in cell.stdout + cell.stderr


def test_untyped_parameter_is_reported_at_its_line(shell):
    cell = shell.run('%%tilekernel\n'
                     'def bad(z: Mut[Tensor[f32, "B"]],\n'
                     '        x):\n'
                     '    z.store(load_tile_like(x, z))\n')
    assert not cell.ok and "bad" not in shell.ns
    [d] = [d for d in cell.report["diagnostics"] if d["code"] == "TL001"]
    assert d["span"]["line"] == 2 and d["span"]["col"] == 8


def test_warnings_do_not_stop_a_kernel(shell):
    from cutile_lab.diagnostics import Diagnostic, Span
    from cutile_lab.notebook.report import compile_report_bundle
    from cutile_lab.kernel import kernels_from_source
    k = kernels_from_source(ADD, "<w>")["add"]
    w = Diagnostic("TL999", "warning", "just so you know", Span("<w>", 4, 4, 4, 20))
    b = compile_report_bundle(None, k, [w], status="checked")
    assert b[REPORT_MIME]["diagnostics"][0]["severity"] == "warning"
    assert "warning[TL999]" in b["text/plain"] and "1 warning" in b["text/plain"]


def test_bad_redefinition_makes_the_name_unusable_until_it_compiles(shell):
    from cutile_lab.notebook.tilecell import FailedKernel
    assert shell.run("%%tilekernel\n" + ADD).ok
    first = shell.ns["add"]
    cell = shell.run('%%tilekernel\n'
                     'def add(z: Mut[Tensor[f32, "B"]], x):\n'
                     '    z.store(load_tile_like(x, z))\n')
    assert not cell.ok
    stale = shell.ns["add"]
    assert isinstance(stale, FailedKernel) and stale is not first
    assert any("is unusable until this cell compiles" in n for n in cell.report["notes"])
    with pytest.raises(TileCellError, match="`add` is unusable: its last %%tilekernel cell"):
        stale(None)
    # a cell that does not even parse as kernels does the same to the names it defines
    assert shell.run("%%tilekernel\n" + ADD).ok
    assert not shell.run('%%tilekernel\ndef add(z: Mut[Tensor[f32, "B"]]:\n    pass\n').ok
    assert isinstance(shell.ns["add"], FailedKernel)
    # and compiling again defines it again
    assert shell.run("%%tilekernel\n" + ADD).ok
    assert hasattr(shell.ns["add"], "definition")


def test_compiler_error_is_located_in_the_cell(shell):
    # the ownership checker accepts this (the shape of `mma`'s result is its accumulator's);
    # cuTile's compiler rejects a matrix product of 1-D tiles
    cell = shell.run('%%tilekernel --spec B=128\n'
                     'def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'
                     '    tx = load_tile_like(x, z)\n'
                     '    z.store(mma(tx, tx, tx))\n')
    assert not cell.ok and isinstance(cell.error, TileCellError)
    assert "add" not in shell.ns
    [d] = cell.report["diagnostics"]
    _check_diag_shape(d)
    assert d["code"] == "CL030" and "2D" in d["message"]
    assert d["span"]["line"] == 3 and d["span"]["col"] == 12
    text = cell.text
    assert "3 |     z.store(mma(tx, tx, tx))" in text
    # never the generated code or a traceback from inside the lab or the compiler
    for leak in ("<lowered", "ct.store", "ct.mma", "Traceback", "cutile_lab/",
                 "cuda/tile"):
        assert leak not in text and leak not in cell.html and leak not in cell.stdout


def test_compiler_error_power_of_two(shell):
    cell = shell.run("%%tilekernel --spec B=100\n" + ADD)
    assert not cell.ok
    [d] = cell.report["diagnostics"]
    assert "power of two" in d["message"] and d["span"]["line"] == 2


def test_syntax_error_is_located(shell):
    cell = shell.run('%%tilekernel\n'
                     'def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'
                     '    z.store(load_tile_like(x, z)\n')
    assert not cell.ok and isinstance(cell.error, TileCellError)
    r = cell.report
    assert r["kernel"] is None and r["status"] == "error"
    [d] = r["diagnostics"]
    assert "syntax" in d["message"] and d["span"]["line"] in (2, 3)


def test_cell_without_kernels(shell):
    cell = shell.run("%%tilekernel\nx = 1\n")
    assert not cell.ok
    assert "no kernel" in cell.report["diagnostics"][0]["message"]


@pytest.mark.parametrize("line, words", [
    ("--show foo", ["--show", "foo", "tileir"]),
    ("--spec B", ["--spec", "NAME=VALUE"]),
    ("--spec B=x", ["--spec", "integer"]),
    ("--spec Q=64", ["--spec", "Q", "const generic", "B"]),
    ("--arch sm_1", ["--arch", "sm_90"]),
    ("--bogus", ["unrecognized", "--bogus"]),
    ("--kernel nope", ["--kernel", "nope", "add"]),
    ("--arch 'sm_90", ["No closing quotation", "close the quote"]),   # shlex's ValueError before
])
def test_bad_options_raise_usage_error(shell, line, words):
    cell = shell.run(f"%%tilekernel {line}\n" + ADD)
    assert not cell.ok
    assert isinstance(cell.error, UsageError), cell.error
    for w in words:
        assert w in str(cell.error)
    assert "add" not in shell.ns


def test_show_limits_sections(shell):
    cell = shell.run("%%tilekernel --spec B=128 --show resources,timings\n" + ADD)
    r = cell.report
    assert r["tileir"] is None and r["lowered"] is None and r["remarks"] == []
    assert r["resources"]["registers"] and r["timings"]["total"]
    assert "Tile IR" not in cell.html and "Resources" in cell.html


def test_several_kernels_and_kernel_option(shell):
    two = ADD + '\ndef copy(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n' \
                '    z.store(load_tile_like(x, z))\n'
    cell = shell.run("%%tilekernel --spec B=64\n" + two)
    assert cell.ok
    assert sorted(r["kernel"] for r in cell.reports) == ["add", "copy"]
    cell = shell.run("%%tilekernel --spec B=64 --kernel copy\n" + two)
    assert [r["kernel"] for r in cell.reports] == ["copy"]
    assert isinstance(shell.ns["add"], Kernel) and isinstance(shell.ns["copy"], Kernel)


def test_cell_constants_and_helpers_run_before_the_kernels(shell):
    cell = shell.run('%%tilekernel --spec B=64\n'
                     'SCALE = 3.0\n'
                     'def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'
                     '    z.store(load_tile_like(x, z) * SCALE)\n')
    assert cell.ok, cell.report["diagnostics"]
    assert shell.ns["SCALE"] == 3.0
    assert "mulf" in cell.report["tileir"]["text"]


def test_cell_top_level_error_is_located(shell):
    cell = shell.run('%%tilekernel\n'
                     'A = 1\n'
                     'B2 = undefined_thing + 1\n' + ADD)
    assert not cell.ok and isinstance(cell.error, TileCellError)
    [d] = cell.report["diagnostics"]
    assert d["code"] == "CL011" and "undefined_thing" in d["message"]
    assert d["span"]["line"] == 2
    assert "add" not in shell.ns


def test_names_from_earlier_cells_are_known_to_the_checker(shell):
    shell.run("SCALE = 3.0")
    cell = shell.run('%%tilekernel\n'
                     'def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'
                     '    z.store(load_tile_like(x, z) * SCALE)\n')
    assert cell.ok, cell.report["diagnostics"]


def test_names_from_earlier_cells_compile(shell):
    shell.run("SCALE = 3.0")
    cell = shell.run('%%tilekernel --spec B=64\n'
                     'def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'
                     '    z.store(load_tile_like(x, z) * SCALE)\n')
    assert cell.ok, cell.report["diagnostics"]
    assert "mulf" in cell.report["tileir"]["text"]


def test_help_lists_every_option(shell):
    doc = shell.ip.find_cell_magic("tilekernel").__doc__
    for opt in ("--arch", "--spec", "--show", "--sim", "--no-cache", "--kernel"):
        assert opt in doc
    cell = shell.run("%%tilekernel?")
    assert cell.ok
    assert "--spec" in cell.stdout and "--sim" in cell.stdout


def test_line_magic_help(shell):
    doc = shell.ip.find_line_magic("tile_time").__doc__
    for opt in ("-n", "-w", "--flops", "--bytes"):
        assert opt in doc


def test_a_kernel_named_like_a_builtin_says_what_it_hides(shell):
    """`def print(...)` as a kernel silently turned every later `print(...)` of the notebook
    into a launch; the report now says so and how to get the builtin back."""
    cell = shell.run('%%tilekernel\ndef print(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'
                     '    z.store(load_tile_like(x, z))\n')
    assert cell.ok, cell.error
    assert any("hiding Python's builtin `print`" in n and "`del print`" in n
               for n in cell.report["notes"])
    assert shell.run("del print").ok
    assert shell.run("print('back')").stdout == "back\n"
    plain = shell.run("%%tilekernel\n" + ADD)
    assert not any("builtin" in n for n in plain.report["notes"])
@pytest.mark.parametrize("line", ["%%tilekernel --arch 'sm_90", '%%tilekernel --spec "B=64',
                                  "%%cuda --std 'c++17"])
def test_an_unclosed_quote_in_the_options_is_a_usage_error(shell, line):
    """Was shlex's ValueError with a traceback through IPython's argument parser; the kernels
    and data the notebook holds stay as they were."""
    from IPython.core.error import UsageError
    assert shell.run("%%tilekernel\n" + ADD).ok
    assert shell.run("import numpy as np\nkept = np.random.default_rng().standard_normal(5)").ok
    before = (shell.ns["add"], shell.ns["kept"].copy())
    body = ADD if "tilekernel" in line else "__global__ void k(float* x) { x[0] = 1; }\n"
    cell = shell.run(line + "\n" + body)
    assert isinstance(cell.error, UsageError) and "No closing quotation" in str(cell.error)
    assert str(cell.error).startswith(line.split()[0] + " ") and "close the quote" in str(cell.error)
    assert "Traceback" not in cell.stdout + cell.stderr
    assert shell.ns["add"] is before[0] and (shell.ns["kept"] == before[1]).all()


@pytest.mark.parametrize("bad", ['def add(z: Mut[Tensor[f32, "B"]], x):\n    z.store(load_tile_like(x, z))\n',
                                 'def add(z: Mut[Tensor[f32, "B"]]:\n    pass\n'])
def test_a_failed_cell_leaves_the_users_own_data_of_that_name(shell, bad):
    """A failed %%tilekernel cell defining `add` replaced whatever `add` held with a
    FailedKernel, the user's array or function included: their data was lost. Only a kernel
    of that name is marked unusable now."""
    assert shell.run("import numpy as np\nadd = np.random.default_rng().standard_normal(4)\n"
                     "def helper(v):\n    return v + 1\n").ok
    mine = shell.ns["add"].copy()
    cell = shell.run("%%tilekernel\n" + bad)
    assert not cell.ok
    assert isinstance(shell.ns["add"], np.ndarray) and (shell.ns["add"] == mine).all()
    if "x):" in bad:
        assert any("still holds your ndarray" in n for n in cell.report["notes"])
    assert not shell.run("%%tilekernel\n" + bad.replace("def add", "def helper")).ok
    assert shell.ns["helper"](1) == 2
