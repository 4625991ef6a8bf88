"""Rendering of diagnostics: rustc-style text, self-contained HTML, JSON."""
from __future__ import annotations

import json
import re

from cutile_lab.checking import check_source
from cutile_lab.diagnostics import Diagnostic, Label, Span
from cutile_lab.diagnostics.render import CATALOG_URL, render_html, render_text, to_json
from cutile_lab.errors import KernelDiagnosticsError

SRC = '''def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    x.store(t)
    z.store(t)
'''
LINES = SRC.splitlines()


def lookup(filename: str, line: int) -> str:
    return LINES[line - 1] if filename == "k.py" and 0 < line <= len(LINES) else ""


def _diag(**kw) -> Diagnostic:
    base = dict(code="TL010", severity="error", message="`x` is a shared input",
                span=Span("k.py", 3, 4, 3, 14),
                labels=(Label(Span("k.py", 1, 32, 1, 51), "declared here"),),
                help="store into `z` instead", notes=("a note",))
    base.update(kw)
    return Diagnostic(**base)


def test_text_layout_is_rustc_like():
    text = render_text([_diag()], lookup)
    lines = text.splitlines()
    assert lines[0] == "error[TL010]: `x` is a shared input"
    assert lines[1] == " --> k.py:3:5"
    assert lines[2] == "  |"
    assert lines[3] == "1 | " + LINES[0]
    assert lines[4] == "  |" + " " * 33 + "-" * 19 + " declared here"
    assert lines[5] == "2 | " + LINES[1]          # a one-line gap is shown, not elided
    assert lines[6] == "3 | " + LINES[2]
    assert lines[7] == "  |     " + "^" * 10
    assert lines[8] == "  |"
    assert lines[9] == "  = help: store into `z` instead"
    assert lines[10] == "  = note: a note"


def test_primary_label_and_elided_gap():
    d = _diag(span=Span("k.py", 4, 4, 4, 14), labels=(
        Label(Span("k.py", 4, 4, 4, 14), "stored here"),
        Label(Span("k.py", 1, 6, 1, 30), "declared here")))
    text = render_text([d], lookup)
    assert "  |     ^^^^^^^^^^ stored here" in text
    assert "\n...\n" in text


def test_several_labels_on_one_line_stack():
    line = "out = add(buf.partition((128,)), buf, y)"
    d = Diagnostic("TL100", "error", "overlap", Span("c.py", 1, 6, 1, 9), (
        Label(Span("c.py", 1, 10, 1, 31), "written as `z`"),
        Label(Span("c.py", 1, 33, 1, 36), "read as `x`")))
    text = render_text([d], lambda f, n: line)
    rows = text.splitlines()
    assert rows[4] == "  |       ^^^ ---------------------  --- read as `x`"
    assert rows[5] == "  |           |"
    assert rows[6] == "  |           written as `z`"


def test_labels_in_other_files_and_missing_source():
    d = _diag(labels=(Label(Span("other.py", 7, 0, 7, 3), "made here"),))
    text = render_text([d], lookup)
    assert " ::: other.py:7:1" in text
    assert "= note: made here (other.py:7:1)" in text
    bare = render_text([_diag(labels=())], lambda f, n: "")
    assert bare.splitlines() == ["error[TL010]: `x` is a shared input", " --> k.py:3:5",
                                 "  = help: store into `z` instead", "  = note: a note"]


def test_no_span_and_multiline_notes():
    d = Diagnostic("TL117", "error", "missing", None, help="pass it",
                   notes=("first line\nsecond line",))
    text = render_text([d])
    assert text.splitlines()[0] == "error[TL117]: missing"
    assert "= note: first line" in text
    assert "\n          second line" in text


def test_long_help_wraps_without_breaking_code():
    d = _diag(help="word " * 30 + "`z.store(load_tile_like(x, z) * alpha)` and more words " * 2)
    text = render_text([d], lookup)
    for row in text.splitlines():
        assert len(row) <= 100
    assert "`z.store(load_tile_like(x, z) * alpha)`" in text


def test_unicode_columns_count_characters():
    src = 'def k(z: Mut[Tensor[f32, "B"]]):  # é\n    zé = 1\n'
    line = src.splitlines()[1]
    col = len(line[:line.index("1")].encode("utf-8"))      # ast columns are UTF-8 bytes
    d = Diagnostic("TL030", "error", "m", Span("u.py", 2, col, 2, col + 1))
    text = render_text([d], lambda f, n: line)
    caret_row = text.splitlines()[4]
    assert caret_row.index("^") - 4 == line.index("1")


def test_color_uses_ansi_and_plain_does_not():
    plain = render_text([_diag()], lookup)
    colored = render_text([_diag()], lookup, color=True)
    assert "\x1b[" not in plain
    assert "\x1b[1;31m" in colored
    assert re.sub(r"\x1b\[[0-9;]*m", "", colored) == plain


def test_summary_line_for_several():
    text = render_text([_diag(), _diag(severity="warning", code="TL014")], lookup)
    assert text.rstrip().endswith("1 error, 1 warning")


def test_html_is_self_contained_and_links_to_the_catalog():
    html = render_html([_diag(message="<b>&")], lookup)
    assert "<script" not in html and "<link" not in html and "class=\"cl-diagnostics\"" in html
    # no published catalog yet: the code links to its explanation, carried in the HTML itself
    assert CATALOG_URL is None
    assert 'href="#cl-explain-tl010"' in html and '<details id="cl-explain-tl010"' in html
    assert "docs/" not in html
    assert "&lt;b&gt;&amp;" in html
    assert 'data-line="3"' in html and 'data-file="k.py"' in html
    assert "^^^^^^^^^^" in html
    assert "style=" in html


def test_json_shape():
    [item] = to_json([_diag()])
    assert set(item) >= {"code", "severity", "message", "span", "labels", "help", "notes", "url"}
    assert item["span"] == {"filename": "k.py", "line": 3, "col": 4, "end_line": 3, "end_col": 14}
    assert item["labels"][0]["message"] == "declared here"
    assert item["url"] is None      # no published catalog: `cutile-lab explain TL010`
    json.dumps(item)


def test_kernel_diagnostics_error_renders_text():
    diags = check_source(SRC, "k_err.py")
    err = KernelDiagnosticsError(diags)
    text = str(err)
    assert text.startswith("error[TL010]")
    assert "x.store(t)" in text and "^" in text


def test_default_lookup_reads_registered_sources():
    diags = check_source(SRC, "<cell-render>")
    text = render_text(diags)
    assert "    x.store(t)" in text
