"""Terminal-first text: a compiled report's text/plain holds what its HTML folds away (Tile IR
with line numbers, resources, remarks, SASS, lowered Python; long parts cut with a hint to
``--show``); the HTML stays legible with every ``style`` attribute stripped; the CLI ends
quietly, with a closed pipe's status, when its reader goes away."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from cutile_lab.kernel import kernels_from_source
from cutile_lab.notebook.report import TEXT_LINES, compile_report_bundle, report_sections_text

ADD = '''def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    tx = load_tile_like(x, z)
    ty = load_tile_like(y, z)
    z.store(tx + ty)
'''


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    os.environ["CUTILE_LAB_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    try:
        k = kernels_from_source(ADD, "<tilekernel-cell-3>")["add"]
        return k, k.compile("sm_90", B=128)
    finally:
        os.environ.pop("CUTILE_LAB_CACHE_DIR", None)


def test_text_report_shows_tileir_resources_and_remarks(compiled):
    k, c = compiled
    text = compile_report_bundle(c, k)["text/plain"]
    assert text.splitlines()[0].startswith("add [sm_90] B=128")
    ir = c.tileir.rstrip("\n").splitlines()
    assert f"Tile IR ({len(ir)} lines)" in text
    width = len(str(len(ir)))
    for i, line in enumerate(ir, 1):               # every line, numbered (it is short)
        assert f"{i:>{width}} | {line.rstrip()}" in text
    assert re.search(r"// line 4$", text, re.M)     # the store came from the cell's line 4
    assert "\nResources\n" in text and re.search(r"^  registers +\d+$", text, re.M)
    if c.remarks:
        assert f"Compiler remarks ({len(c.remarks)})" in text
    assert "Lowered cuTile Python" in text


def test_long_sections_are_cut_with_a_hint_unless_asked_for_alone(compiled):
    k, c = compiled
    report = compile_report_bundle(c, k)["application/vnd.cutile-lab.report+json"]
    long_ir = "\n".join(f"  %{i} = addf %a, %b : tile<128xf32>" for i in range(97)) + "\n"
    report = dict(report, tileir={"text": long_ir, "line_map": []})
    text = "\n".join(report_sections_text(report))
    assert f"... {97 - TEXT_LINES} more lines (--show tileir shows it whole)" in text
    assert "%39 = addf" in text and "%40 = addf" not in text
    alone = dict(report, sass=None, lowered=None)        # what `--show tileir` leaves
    text = "\n".join(report_sections_text(alone))
    assert "%96 = addf" in text and "more lines" not in text


class _Unstyled(HTMLParser):
    """The text a viewer that drops every style attribute (and <style>) shows, by <pre>."""

    def __init__(self):
        super().__init__()
        self.pres: list[str] = []
        self._depth = 0
        self._skip = False

    def handle_starttag(self, tag, attrs):
        if tag == "pre":
            self._depth += 1
            if self._depth == 1:
                self.pres.append("")
        self._skip = tag == "style"

    def handle_endtag(self, tag):
        if tag == "pre":
            self._depth -= 1
        self._skip = False

    def handle_data(self, data):
        if self._depth and not self._skip:
            self.pres[-1] += data


def test_html_panes_are_preformatted_and_numbered_without_styles(compiled):
    k, c = compiled
    html = compile_report_bundle(c, k)["text/html"]
    stripped = re.sub(r'\sstyle="[^"]*"', "", html)
    assert "style=" not in stripped
    parser = _Unstyled()
    parser.feed(stripped)
    source_pane = next(p for p in parser.pres if "def add" in p)
    src = ADD.splitlines()
    ir_pane = next(p for p in parser.pres if "make_token" in p)
    ir = c.tileir.rstrip("\n").splitlines()
    for pane, lines in ((source_pane, src), (ir_pane, ir)):
        rows = pane.rstrip("\n").split("\n")
        assert len(rows) == len(lines)
        for i, (row, line) in enumerate(zip(rows, lines), 1):
            # the line number, a space, then the line as written (indentation kept)
            m = re.fullmatch(r" *(\d+) (.*)", row)
            assert m and int(m.group(1)) == i and m.group(2).rstrip() == line.rstrip(), row


@pytest.mark.parametrize("args", [["info"], ["explain", "TL010"], ["explain", "--list"]])
def test_cli_ends_quietly_on_a_closed_pipe(args):
    """``cutile-lab info | head -2``: the reader is gone; no traceback, the status of SIGPIPE."""
    read, write = os.pipe()
    os.close(read)                         # every write now fails with EPIPE
    try:
        proc = subprocess.run([sys.executable, "-m", "cutile_lab", *args], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert proc.stderr == "" and proc.returncode == 141


def test_cli_through_head_prints_its_first_lines():
    proc = subprocess.run(f"'{sys.executable}' -m cutile_lab info | head -2", shell=True,
                          capture_output=True, text=True, timeout=120)
    assert proc.stdout.splitlines()[0].startswith("cutile_lab ")
    assert len(proc.stdout.splitlines()) == 2 and "Traceback" not in proc.stderr
