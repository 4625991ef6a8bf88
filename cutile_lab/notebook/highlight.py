"""Tile IR syntax highlighting for the HTML report: a small tokenizer and inline-styled spans.

Owns: ``tokenize_line`` (one line of Tile IR text -> ``(kind, text)`` tokens) and
``highlight_line`` (those tokens as HTML ``<span>`` elements with inline colours, so the output
survives renderers that drop ``<style>`` blocks). It knows the shape of MLIR-style text only:
SSA values (``%0``, ``%arg1``), symbols (``@add``), types (``tile<128xf32>``, ``ptr<f16>``,
``i32``), operation names, attributes (``rounding<nearest_even>``, ``#attr``), numbers, strings
and comments. Anything it does not recognise passes through escaped and uncoloured.
"""
from __future__ import annotations

import html
import re

# Colours chosen to read on both light and dark notebook themes (mid-tone, not pastel).
COLORS = {
    "op": "#0b61a4",        # operation names: addf, load_view_tko, entry
    "keyword": "#8f3f97",   # structure: module, entry, for, if, return, yield
    "type": "#1a7f37",      # tile<128xf32>, ptr<f32>, i32
    "value": "#b35900",     # %0, %arg1, %tile
    "symbol": "#6f42c1",    # @add
    "attr": "#6a737d",      # rounding<nearest_even>, weak, #attr, shape =
    "number": "#098658",
    "string": "#a31515",
    "comment": "#8b949e",
}

KEYWORDS = frozenset({
    "module", "cuda_tile.module", "entry", "func", "return", "yield", "for", "if", "else",
    "loop", "continue", "break", "in", "step", "iter_values", "global", "to", "then",
})

_SCALAR_TYPE = re.compile(
    r"(?:[iuf](?:1|4|8|16|32|64|128)|bf16|tf32|f8E4M3FN|f8E5M2|f8e4m3|f8e5m2|index|token|none)"
    r"(?![\w.])")
_NAMED_ATTR = re.compile(r"\s*=(?!=)")
_TYPE_HEADS = frozenset({"tile", "ptr", "tensor_view", "partition_view", "memref", "tensor",
                         "vector", "token", "view", "!cuda_tile.tile"})

_TOKEN = re.compile(r"""
    (?P<comment>//.*$)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<value>%[\w$.-]+(?:\#\d+)?(?::\d+)?)
  | (?P<symbol>@[\w$.-]+|@"(?:[^"\\]|\\.)*")
  | (?P<label>\^[\w$.-]+)
  | (?P<hashattr>\#[\w$.-]+(?:<)?)
  | (?P<number>-?0x[0-9a-fA-F]+\b|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?:x(?=[\d?a-zA-Z]))?)
  | (?P<ident>!?[A-Za-z_][\w$.]*)
  | (?P<space>\s+)
  | (?P<punct>.)
""", re.X)


def _balanced(text: str, start: int) -> int:
    """Index just past the ``>`` matching the ``<`` at ``start`` (or len(text) if unbalanced)."""
    depth = 0
    i = start
    while i < len(text):
        c = text[i]
        if c == "<":
            depth += 1
        elif c == ">" and not (i > 0 and text[i - 1] == "-"):   # '->' inside is an arrow
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def tokenize_line(line: str) -> list[tuple[str, str]]:
    """Split one Tile IR line into ``(kind, text)``; kinds are the keys of ``COLORS`` plus
    ``"text"`` (uncoloured). Joining the texts gives back ``line`` exactly."""
    tokens: list[tuple[str, str]] = []
    pos = 0
    expect_op = True          # at the start of a statement, or right after `=`
    while pos < len(line):
        m = _TOKEN.match(line, pos)
        if m is None:          # cannot happen (punct matches anything), but never loop forever
            tokens.append(("text", line[pos:]))
            break
        kind = m.lastgroup
        text = m.group()
        end = m.end()
        if kind == "ident":
            head = text.lstrip("!")
            if end < len(line) and line[end] == "<":
                # `tile<...>`, `ptr<...>`, `rounding<nearest_even>`: take the whole bracket
                close = _balanced(line, end)
                text = line[pos:close]
                end = close
                if head in _TYPE_HEADS or text.startswith("!"):
                    kind = "type"
                else:
                    kind = "attr"
                expect_op = False
            elif _NAMED_ATTR.match(line, end):
                kind = "attr"           # `token = %0`, `shape = [...]`: an attribute name
            elif _SCALAR_TYPE.fullmatch(head):
                kind = "type"
            elif text in KEYWORDS:
                kind = "keyword"
                expect_op = text in ("return", "yield")
            elif expect_op:
                kind = "op"
                expect_op = False
            else:
                kind = "attr"
        elif kind == "hashattr":
            if text.endswith("<"):
                close = _balanced(line, end - 1)
                text = line[pos:close]
                end = close
            kind = "attr"
        elif kind == "label":
            kind = "symbol"
        elif kind == "space":
            kind = "text"
        elif kind == "punct":
            # `%a, %b = op ...`: an `=` after nothing but results starts an operation;
            # `shape = [...]` inside an operation is an attribute
            if text == "=":
                expect_op = all(k == "value" or t.strip() in ("", ",")
                                for k, t in tokens)
            kind = "text"
        tokens.append((kind, text))
        pos = end
    return tokens


def highlight_line(line: str) -> str:
    """One Tile IR line as HTML: escaped text with inline-coloured ``<span>``s."""
    out = []
    for kind, text in tokenize_line(line):
        esc = html.escape(text, quote=False)
        color = COLORS.get(kind)
        if color is None:
            out.append(esc)
        elif kind in ("op", "keyword"):
            out.append(f'<span class="cl-ir-{kind}" style="color:{color};font-weight:600">'
                       f'{esc}</span>')
        elif kind == "comment":
            out.append(f'<span class="cl-ir-{kind}" style="color:{color};font-style:italic">'
                       f'{esc}</span>')
        else:
            out.append(f'<span class="cl-ir-{kind}" style="color:{color}">{esc}</span>')
    return "".join(out)


def highlight(text: str) -> list[str]:
    """Every line of ``text`` highlighted (a list, one HTML string per line)."""
    return [highlight_line(line) for line in text.splitlines()]
