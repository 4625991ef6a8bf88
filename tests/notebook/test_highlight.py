"""The Tile IR lexer (Pygments): the same tokens as the extension's tokenizer
(``extension/src/__tests__/tileir.spec.ts`` holds these cases too), lossless on real
``tileirdisasm`` output, found through the ``pygments.lexers`` entry point, and usable by every
Pygments formatter (terminal, HTML) as well as by the report."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pygments import highlight as pygmentize
from pygments.formatters import HtmlFormatter, Terminal256Formatter
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.styles import get_style_by_name

from cutile_lab.notebook.highlight import (KINDS, TileIRLexer, TileIRStyle, highlight,
                                           highlight_line, tokenize_line)

SAMPLE = Path(__file__).resolve().parents[1] / "browser" / "sample_report.json"


def kinds(line: str) -> list[str]:
    """``kind:text`` of every token that is not whitespace (``kinds`` of tileir.spec.ts)."""
    return [f"{k}:{t}" for k, t in tokenize_line(line) if k != "space"]


@pytest.fixture(scope="module")
def real_ir() -> str:
    return json.loads(SAMPLE.read_text())["tileir"]["text"]


def test_an_operation_with_results_operands_and_a_tile_type():
    assert kinds("  %1 = addf %tile, %tile_8  : tile<128xf32>") == [
        "ssa:%1", "punct:=", "op:addf", "ssa:%tile", "punct:,", "ssa:%tile_8", "punct::",
        "type:tile", "punct:<", "type:128xf32", "punct:>"]


def test_entry_signatures_symbols_pointer_types_and_attribute_names():
    assert kinds("entry @add(%arg0: tile<ptr<f32>>) optimization_hints=<default = {}> {") == [
        "keyword:entry", "symbol:@add", "punct:(", "ssa:%arg0", "punct::", "type:tile",
        "punct:<", "type:ptr", "punct:<", "type:f32", "punct:>", "punct:>", "punct:)",
        "name:optimization_hints", "punct:=", "punct:<", "name:default", "punct:=", "punct:{",
        "punct:}", "punct:>", "punct:{"]


def test_multi_result_ops_keywords_inside_ops_and_tensor_views():
    k = kinds("%tile, %tok = load_view_tko weak %pview[%bid] token = %0 : partition_view<tile="
              "(128), tensor_view<?xf32, strides=[?]>>, tile<i32> -> tile<128xf32>, token "
              "loc(#loc9)")
    assert k[:5] == ["ssa:%tile", "punct:,", "ssa:%tok", "punct:=", "op:load_view_tko"]
    for want in ("keyword:weak", "name:token", "type:partition_view", "name:tile",
                 "number:128", "type:tensor_view", "type:?xf32", "name:strides", "punct:->",
                 "type:token"):
        assert want in k
    assert k[-4:] == ["keyword:loc", "punct:(", "attr:#loc9", "punct:)"]


def test_a_line_that_starts_with_a_bare_word_is_that_operation():
    assert kinds("  return") == ["keyword:return"]
    assert kinds('  print_tko "x"') == ["op:print_tko", 'string:"x"']
    assert kinds("%0 = make_token : token") == ["ssa:%0", "punct:=", "op:make_token",
                                                "punct::", "type:token"]


def test_attributes_location_lines_numbers_and_comments():
    assert kinds("%c = constant <i32: 1> : tile<i32>") == [
        "ssa:%c", "punct:=", "op:constant", "punct:<", "type:i32", "punct::", "number:1",
        "punct:>", "punct::", "type:tile", "punct:<", "type:i32", "punct:>"]
    assert kinds('#loc1 = loc("<cell-3>":7:10)') == [
        "attr:#loc1", "punct:=", "keyword:loc", "punct:(", 'string:"<cell-3>"', "punct::",
        "number:7", "punct::", "number:10", "punct:)"]
    assert "number:-1.5e3" in kinds("%f = constant <f32: -1.5e3> // note")
    assert "number:0x3F800000" in kinds("%h = constant <f32: 0x3F800000>")
    assert kinds("// a comment") == ["comment:// a comment"]
    assert "name:bounded" in kinds("%p = assume bounded<0, ?>, %a")


def test_lossless_on_real_tileirdisasm_output(real_ir):
    lines = [tokenize_line(line) for line in real_ir.split("\n")]
    assert "\n".join("".join(t for _, t in toks) for toks in lines) == real_ir
    ops = {t for toks in lines for k, t in toks if k == "op"}
    assert {"make_token", "assume", "make_tensor_view", "load_view_tko", "addf",
            "store_view_tko"} <= ops
    assert not [t for toks in lines for k, t in toks if k == "text"]
    # the lexer as Pygments sees it: offsets cover the text exactly, once
    pos = 0
    for start, _, text in TileIRLexer().get_tokens_unprocessed(real_ir):
        assert start == pos
        pos += len(text)
    assert pos == len(real_ir)


def test_found_through_the_entry_points():
    assert isinstance(get_lexer_by_name("tileir"), TileIRLexer)
    assert isinstance(get_lexer_for_filename("kernel.tileir"), TileIRLexer)
    assert get_style_by_name("cutile-lab") is TileIRStyle


def test_any_pygments_formatter(real_ir):
    term = pygmentize(real_ir, TileIRLexer(), Terminal256Formatter(style=TileIRStyle))
    assert "\x1b[" in term
    assert re.sub(r"\x1b\[[0-9;]*m", "", term).rstrip("\n") == real_ir.rstrip("\n")
    page = pygmentize(real_ir, TileIRLexer(), HtmlFormatter(style=TileIRStyle))
    css = HtmlFormatter(style=TileIRStyle).get_style_defs()
    assert '<span class="nf">addf</span>' in page and ".nf { color: #0b61a4" in css.lower()


def test_report_html_escapes_and_colours_each_kind():
    line = '  %x = foo "a<b>" : tile<4xf16>  // c'
    html = highlight_line(line)
    assert "&lt;b&gt;" in html and "<b>" not in html
    assert '<span class="cl-ir-op" style="color:#0b61a4;font-weight:600">foo</span>' in html
    assert '<span class="cl-ir-ssa" style="color:#b35900">%x</span>' in html
    assert 'class="cl-ir-comment" style="color:#8b949e;font-style:italic"' in html
    assert re.sub(r"<[^>]+>", "", html).replace("&lt;", "<").replace("&gt;", ">") == line
    assert highlight("a\n\n  return") == [highlight_line("a"), "", highlight_line("  return")]
    assert set(KINDS) >= {k for k, _ in tokenize_line(line)}
