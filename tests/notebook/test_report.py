"""The report bundle on its own: JSON contract, HTML fallback, text fallback (Tile IR tokens:
``test_highlight``)."""
from __future__ import annotations

import json

import pytest

from cutile_lab.diagnostics import Diagnostic, Label, Span
from cutile_lab.kernel import kernels_from_source
from cutile_lab.notebook.report import REPORT_MIME, compile_report_bundle

ADD = '''def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    tx = load_tile_like(x, z)
    ty = load_tile_like(y, z)
    z.store(tx + ty)
'''


def test_bundle_without_a_compile():
    k = kernels_from_source(ADD, "<tilekernel-cell-9>")["add"]
    d = Diagnostic("TL010", "error", "`x` is a shared input", Span("<tilekernel-cell-9>", 4, 4,
                                                                     4, 20),
                   labels=(Label(Span("<tilekernel-cell-9>", 1, 34, 1, 53), "declared"),),
                   help="store into `z`")
    b = compile_report_bundle(None, k, [d], notes=["`add` was not defined"],
                              cell_first_line=2)
    r = b[REPORT_MIME]
    json.dumps(r)
    assert r["status"] == "error" and r["tileir"] is None and r["resources"] is None
    assert r["source"] == {"filename": "<tilekernel-cell-9>", "first_line": 2, "text": ADD}
    [dj] = r["diagnostics"]
    assert dj["span"] == {"line": 4, "col": 4, "end_line": 4, "end_col": 20}
    assert dj["labels"] == [{"span": {"line": 1, "col": 34, "end_line": 1, "end_col": 53},
                             "message": "declared"}]
    assert b["text/plain"].startswith("error[TL010]")
    assert "add: 1 error — `add` was not defined" in b["text/plain"]
    # nothing to fold without a compile but the code's explanation, carried inline
    assert b["text/html"].count("<details") == b["text/html"].count('class="cl-explain"') == 1


def test_line_numbers_are_relative_to_the_text():
    # a kernel cut out of a larger file (line_offset 10): the report counts from its text
    k = kernels_from_source(ADD, "big.py", line_offset=10)["add"]
    d = Diagnostic("TL999", "warning", "w", Span("big.py", 14, 4, 14, 9))
    b = compile_report_bundle(None, k, [d])
    r = b[REPORT_MIME]
    assert r["source"]["first_line"] == 11
    assert r["diagnostics"][0]["span"]["line"] == 4
    assert "14 |     z.store(tx + ty)" in b["text/plain"]        # quoted from the text


def test_compiled_bundle_html_sections(tmp_path, monkeypatch):
    monkeypatch.setenv("CUTILE_LAB_CACHE_DIR", str(tmp_path))
    k = kernels_from_source(ADD, "<tilekernel-cell-10>")["add"]
    c = k.compile("sm_90", B=256)
    b = compile_report_bundle(c, k, [], show=("tileir", "timings"))
    r = b[REPORT_MIME]
    assert r["resources"] is None and r["timings"]["cache"] == "miss"
    html = b["text/html"]
    assert "Tile IR (" in html and "Compile timings" in html and "Resources" not in html
    # every mapped source line has a tint and a hover rule, scoped to this report
    rid = html.split('id="', 1)[1].split('"', 1)[0]
    for _, src in r["tileir"]["line_map"]:
        assert f"#{rid}:has(.cl-s{src}:hover)" in html
    assert b["text/plain"].startswith("add [sm_90] B=256")
