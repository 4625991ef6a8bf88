"""Code the checker does not check is visible wherever results are shown: every
``with unsafe():`` block is an "unchecked" note (TL050) with its span, in ``Kernel.check()``,
``cutile-lab check`` (text and ``--json``) and the notebook report (its JSON's ``unchecked``
key, its header's badge and its summary line); a kernel holding one is never summarised as
having no problems."""
from __future__ import annotations

import json

from cutile_lab.checking import check_source, unchecked_spans
from cutile_lab.cli import main
from cutile_lab.kernel import kernels_from_source
from cutile_lab.notebook.report import compile_report_html, compile_report_json

SHIFT = '''def shift(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    with unsafe():
        store(z, (tile_id(0) + 1,), t)
'''

TWO = '''def two(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    with unsafe():
        store(z, (tile_id(0),), t)
    with unsafe():
        atomic_add(z, (tile_id(0) * B,), t)
'''


def test_kernel_check_reports_the_block_as_unchecked():
    [k] = kernels_from_source(SHIFT, "<shift>").values()
    diags = k.check()
    assert [d.code for d in diags] == ["TL050"]
    [d] = diags
    assert d.severity == "note" and "unchecked" in d.message
    assert (d.span.line, d.span.end_line) == (3, 4)
    assert [s.line for s in unchecked_spans(diags)] == [3]


def test_cli_check_says_unchecked_and_names_the_line(tmp_path, capsys):
    f = tmp_path / "shift.py"
    f.write_text(SHIFT)
    assert main(["check", str(f)]) == 0
    out = capsys.readouterr()
    assert "unchecked" in out.out and "shift.py:3:5" in out.out
    assert "1 unchecked block(s) (line 3)" in out.err
    assert main(["check", "--json", str(f)]) == 0
    items = json.loads(capsys.readouterr().out)
    items = items.get("diagnostics", items) if isinstance(items, dict) else items
    [d] = items
    assert d["code"] == "TL050" and d["span"]["line"] == 3 and d["span"]["end_line"] == 4


def test_the_note_names_the_files_lines_below_a_module_header(tmp_path, capsys):
    # a kernel that does not start on line 1 (imports and a decorator above it): the message
    # names the same lines as its span and the summary line
    f = tmp_path / "shifted.py"
    f.write_text("import cutile_lab as cl\nfrom cutile_lab.lang import *\n\n@cl.kernel\n" + SHIFT)
    main(["check", str(f)])
    captured = capsys.readouterr()
    assert "the `with unsafe():` block (lines 7-8)" in captured.out
    assert "shifted.py:7:5" in captured.out and "(line 7)" in captured.err


def test_cli_counts_every_block(tmp_path, capsys):
    f = tmp_path / "two.py"
    f.write_text(TWO)
    main(["check", str(f)])
    assert "2 unchecked block(s) (line 3, line 5)" in capsys.readouterr().err


def test_notebook_report_shows_the_blocks_in_its_header():
    [k] = kernels_from_source(TWO, "<two>").values()
    diags = k.check()
    report = compile_report_json(None, k, diags, status="checked")
    assert report["unchecked"] == [{"line": 3, "col": 4, "end_line": 4},
                                   {"line": 5, "col": 4, "end_line": 6}]
    assert "2 unchecked blocks" in report["summary"]
    assert "no problems" not in report["summary"]
    html = compile_report_html(report, diags)
    header = html.split("</div>")[0]
    assert "cl-unchecked" in header and "2 unchecked blocks" in header


def test_a_safe_kernel_has_no_badge():
    src = SHIFT.replace("    with unsafe():\n        store(z, (tile_id(0) + 1,), t)\n",
                        "    z.store(t)\n")
    assert check_source(src, "<safe>") == []
    [k] = kernels_from_source(src, "<safe>").values()
    report = compile_report_json(None, k, k.check(), status="checked")
    assert report["unchecked"] == [] and "no problems" in report["summary"]
    assert "cl-unchecked" not in compile_report_html(report, [])
