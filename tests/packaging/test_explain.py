"""Explanations that travel: the catalog is read from the package (a checkout falls back to
docs/), ``cutile-lab explain CODE`` prints an entry, ``%tile_explain CODE`` shows it inline,
and a rendered diagnostic's code links to its explanation carried in the same HTML, never to a
path inside the source tree."""
from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from cutile_lab.cli import main
from cutile_lab.diagnostics import CODES, Diagnostic, Label, Span
from cutile_lab.diagnostics import explain as ex
from cutile_lab.diagnostics.render import render_html, to_json

ROOT = Path(__file__).resolve().parents[2]


def test_every_code_has_an_entry_with_its_title():
    entries = ex.entries()
    assert set(CODES) <= set(entries)
    for code, info in CODES.items():
        head = entries[code].splitlines()[0]
        assert head.startswith(f"## {code} ")
        assert f"*{info.severity} · {info.level} level" in entries[code]
        # one entry each: the next code's heading is not swallowed
        assert entries[code].count("\n## ") == 0


def test_the_shipped_catalog_is_preferred_and_the_checkout_is_the_fallback(tmp_path,
                                                                            monkeypatch):
    assert ex.catalog_path() == ex.CHECKOUT_CATALOG    # a checkout has no shipped copy
    shipped = tmp_path / "diagnostics.md"
    shipped.write_text('<a id="tl010"></a>\n## TL010 — shipped title\n\nshipped body\n'
                       '```text\n## TL011 in a fence is text\n```\n'
                       '## About the catalog\n\nnot part of TL010\n', encoding="utf-8")
    monkeypatch.setattr(ex, "SHIPPED_CATALOG", shipped)
    assert ex.catalog_path() == shipped
    text = ex.explain_text("tl010")
    assert "shipped body" in text and "## TL011 in a fence" in text
    assert "not part of TL010" not in text and set(ex.entries()) == {"TL010"}
    monkeypatch.setattr(ex, "SHIPPED_CATALOG", tmp_path / "missing.md")
    monkeypatch.setattr(ex, "CHECKOUT_CATALOG", tmp_path / "missing-too.md")
    with pytest.raises(ex.CatalogLookupError, match="catalog of diagnostics is missing"):
        ex.explain("TL010")


def test_cli_explain_prints_the_entry(capsys):
    assert main(["explain", "TL010"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("TL010 — store into a shared (read-only) input\n=====")
    assert "```python fix" in out and "error[TL010]" in out and "**Fix:**" in out
    assert "TL011" not in out.split("```python fix")[0].splitlines()[0]
    assert main(["explain", "tl013"]) == 0 and "TL013" in capsys.readouterr().out


def test_cli_explain_of_an_unknown_code_says_what_exists(capsys):
    assert main(["explain", "TL998"]) == 1
    err = capsys.readouterr().err
    assert "no diagnostic code TL998 is documented" in err and "explain --list" in err
    assert main(["explain", "add.py"]) == 1
    assert "is not a diagnostic code" in capsys.readouterr().err
    assert main(["explain", "--list"]) == 0
    listed = capsys.readouterr().out.split()
    assert set(CODES) <= set(listed)


def test_tile_explain_magic_shows_the_entry_inline():
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "cutile_lab")
    with capture_output() as cap:
        ip.run_line_magic("tile_explain", "TL010")
    [out] = cap.outputs
    assert out.data["text/markdown"].startswith("## TL010 — store into a shared")
    assert out.data["text/plain"].startswith("TL010 — store into a shared")
    with capture_output() as cap:
        ip.run_line_magic("tile_explain", "")
    assert "| `TL010` | error |" in cap.outputs[0].data["text/markdown"]
    from IPython.core.error import UsageError
    with pytest.raises(UsageError, match="no diagnostic code TL998"):
        ip.run_line_magic("tile_explain", "TL998")


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "a" and "href" in attrs:
            self.hrefs.append(attrs["href"])
        if "id" in attrs:
            self.ids.add(attrs["id"])


def test_rendered_codes_link_to_an_explanation_in_the_same_html():
    span = Span("k.py", 2, 4, 2, 14)
    diags = [Diagnostic(code, CODES[code].severity, "message", span,
                        labels=(Label(span, "here"),)) for code in ("TL010", "TL013", "TL010")]
    html = render_html(diags, lambda f, n: "    x.store(t)" if n == 2 else "")
    links = _Links()
    links.feed(html)
    assert sorted(set(links.hrefs)) == ["#cl-explain-tl010", "#cl-explain-tl013"]
    for href in links.hrefs:            # each one resolves inside the HTML itself
        assert href[1:] in links.ids
    assert html.count('id="cl-explain-tl010"') == 1          # once per code, not per diagnostic
    assert "docs/" not in html and "diagnostics.md" not in html
    # inside, the entry as preformatted text: legible without any stylesheet
    block = html[html.index('<details id="cl-explain-tl013"'):]
    assert re.search(r"<pre>TL013 — ", block)
    for item in to_json(diags):          # no published catalog: JSON names no URL at all
        assert item["url"] is None
        # ... and carries the entry itself, for the JupyterLab extension to show on a click
        assert item["explanation"] == ex.entry_markdown(item["code"])


def test_report_json_carries_the_explanation_for_the_extension():
    from cutile_lab.kernel import kernels_from_source
    from cutile_lab.notebook.report import REPORT_MIME, compile_report_bundle
    src = ('def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'
           '    z.store(load_tile_like(x, z))\n    x.store(load_tile_like(x, z))\n')
    k = kernels_from_source(src, "<cell>")["add"]
    d = Diagnostic("TL010", "error", "`x` is shared", Span("<cell>", 3, 4, 3, 33))
    [item] = compile_report_bundle(None, k, [d])[REPORT_MIME]["diagnostics"]
    assert item["url"] is None
    assert item["explanation"].startswith("## TL010 — store into a shared")


def _lab_error_codes() -> dict[str, list[str]]:
    import cutile_lab  # noqa: F401  (every stage's error classes)
    from cutile_lab.errors import CutileLabError, TileCellError
    codes: dict[str, list[str]] = {}
    todo = [CutileLabError, TileCellError]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        codes.setdefault(cls.code, []).append(cls.__name__)
    return codes


def test_every_error_class_code_the_lab_prints_is_explained(capsys):
    """`error[CL050]: ...` is printed by the lab; `explain CL050` said "no diagnostic code
    CL050 is documented". Each CL code now names its classes and what they are for."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    codes = _lab_error_codes()
    assert {"CL000", "CL010", "CL050", "CL052", "CL070"} <= set(codes)
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "cutile_lab")
    capsys.readouterr()
    for code, names in codes.items():
        assert main(["explain", code.lower()]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"{code}: an error of the lab") and "not a checker diagnostic" in out
        assert all(f"- {n}: " in out for n in names), (code, out)
        with capture_output() as cap:
            ip.run_line_magic("tile_explain", code)
        assert cap.outputs[0].data["text/plain"] == out
    assert main(["explain", "CL999"]) == 1
    assert "no diagnostic code CL999 is documented" in capsys.readouterr().err
