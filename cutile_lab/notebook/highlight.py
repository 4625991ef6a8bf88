"""Tile IR syntax highlighting as a Pygments lexer: one class for the terminal, the HTML report,
nbconvert and Sphinx alike.

Owns: ``TileIRLexer`` (registered under the ``pygments.lexers`` entry point as ``tileir``, so
``pygmentize -l tileir``, a Sphinx ``.. code-block:: tileir`` and nbconvert find it),
``TileIRStyle`` (mid-tone colours that read on light and dark themes; ``pygments.styles`` entry
point ``cutile-lab``), ``tokenize_line`` (one line as ``(kind, text)``) and ``highlight`` (a
listing as one HTML string per line, the style's colours inline and the kind as a ``cl-ir-*``
class, so the report survives renderers that drop ``<style>`` blocks and its hover CSS can
still find the tokens).

The lexer reads Tile IR as the JupyterLab extension's tokenizer does (``extension/src/tileir.ts``,
which colours the same report in the browser): the same rules in the same order, the same token
kinds (``KINDS`` maps each to its Pygments token type) and the same rule for the operation of a
line (the first bare word, or the first after ``%results =``). Any change here is made there
too; ``tests/notebook/test_highlight.py`` holds the cases both are tested on.
"""
from __future__ import annotations

import html
import re
from typing import Iterator

from pygments.lexer import Lexer
from pygments.style import Style
from pygments.token import (Comment, Keyword, Name, Number, Punctuation, String, Text,
                            Whitespace, _TokenType)

# The token kinds of extension/src/tileir.ts, as Pygments token types.
KINDS: dict[str, _TokenType] = {
    "keyword": Keyword,             # entry, return, loc, weak, for, ...
    "op": Name.Function,            # the operation of a line: addf, load_view_tko, ...
    "type": Keyword.Type,           # tile, tensor_view, ptr, f32, 128xf32, token, ...
    "ssa": Name.Variable,           # %tile_13, %arg0, ^bb0
    "symbol": Name.Label,           # @add
    "attr": Name.Decorator,         # #loc12, #cuda_tile.di_file
    "name": Name.Attribute,         # attribute / keyword-argument names: strides=, token =
    "number": Number,
    "string": String.Double,
    "comment": Comment.Single,
    "punct": Punctuation,
    "ident": Name,                  # any other bare word
    "space": Whitespace,
    "text": Text,                   # anything else, one character at a time
}
_KIND_OF = {tok: kind for kind, tok in KINDS.items()}

KEYWORDS = frozenset({
    "entry", "func", "global", "module", "return", "for", "if", "else", "loop", "in", "to",
    "step", "iter_values", "yield", "continue", "break", "loc", "unknown", "weak", "relaxed",
    "acquire", "release", "acq_rel"})
TYPE_NAMES = frozenset({"tile", "tensor_view", "partition_view", "ptr", "token", "index"})
_ELEMENT_TYPE = re.compile(r"(?:[fiu]\d+|bf16|tf32|f[48]E\w+)")
_ATOMS = frozenset({"true", "false"})
_NAME_FOLLOWS = re.compile(r"\s*=(?!=)")

# Tried in order at the current position (the order of tileir.ts's RULES).
_RULES: tuple[tuple[re.Pattern, str], ...] = tuple((re.compile(p), k) for p, k in (
    (r"\s+", "space"),
    (r"//.*", "comment"),
    (r'"(?:[^"\\]|\\.)*"?', "string"),
    (r"[%^][\w.$-]+", "ssa"),
    (r'@(?:[\w.$-]+|"(?:[^"\\]|\\.)*"?)', "symbol"),
    (r"#[\w.$-]+", "attr"),
    (r"0x[0-9a-fA-F]+\b", "number"),
    (r"(?:\d+|\?)(?:x(?:\d+|\?))*x[A-Za-z_]\w*", "type"),      # 128xf32, ?x64xf16
    (r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", "number"),
    (r"[A-Za-z_][\w.$]*", "ident"),
    (r"->|[{}()\[\]<>,:=*+\-/?|!]", "punct"),
))


class _Line:
    """What the tokenizer remembers while walking one line (``ILineState`` in tileir.ts)."""

    __slots__ = ("results_only", "saw_result", "op_next")

    def __init__(self) -> None:
        self.results_only = True     # only result values (`%a, %b`) seen so far
        self.saw_result = False      # at least one result value seen
        self.op_next = False         # the next bare word is the line's operation

    def word(self, word: str, line: str, end: int) -> str:
        if word in KEYWORDS:
            return "keyword"
        if word in _ATOMS:
            return "number"
        if _NAME_FOLLOWS.match(line, end):
            return "name"
        if word in TYPE_NAMES or _ELEMENT_TYPE.fullmatch(word):
            return "type"
        if self.op_next or (self.results_only and not self.saw_result):
            return "op"
        return "name" if line.startswith("<", end) else "ident"

    def advance(self, kind: str, text: str) -> None:
        if kind == "space":
            return
        if self.results_only and kind == "ssa":
            self.saw_result = True
            return
        if self.results_only and kind == "punct" and text == ",":
            return
        assign = self.results_only and self.saw_result and text == "="
        self.results_only = False
        self.op_next = assign


def _line_tokens(line: str) -> Iterator[tuple[int, str, str]]:
    """``(start, kind, text)`` of every token of one line (no line break in it)."""
    state = _Line()
    pos = 0
    while pos < len(line):
        for rule, raw in _RULES:
            m = rule.match(line, pos)
            if m is not None and m.end() > pos:
                kind = state.word(m.group(), line, m.end()) if raw == "ident" else raw
                break
        else:
            m, kind = None, "text"
        end = m.end() if m is not None else pos + 1
        text = line[pos:end]
        state.advance(kind, text)
        yield pos, kind, text
        pos = end


class TileIRLexer(Lexer):
    """The textual CUDA Tile IR that ``tileirdisasm`` prints (and the report shows)."""

    name = "Tile IR"
    aliases = ["tileir", "tile-ir", "cuda-tile-ir"]
    filenames = ["*.tileir"]
    mimetypes = ["text/x-tileir"]
    url = "https://docs.nvidia.com/cuda/tile-ir"

    def get_tokens_unprocessed(self, text: str):
        offset = 0
        for line in text.splitlines(keepends=True):
            body = line.rstrip("\r\n")
            for start, kind, tok in _line_tokens(body):
                yield offset + start, KINDS[kind], tok
            if len(body) < len(line):
                yield offset + len(body), Whitespace, line[len(body):]
            offset += len(line)


class TileIRStyle(Style):
    """The report's colours: mid-tone, readable on light and dark notebook themes."""

    name = "cutile-lab"
    styles = {
        KINDS["op"]: "bold #0b61a4",
        KINDS["keyword"]: "bold #8f3f97",
        KINDS["type"]: "nobold #1a7f37",
        KINDS["ssa"]: "#b35900",
        KINDS["symbol"]: "#6f42c1",
        KINDS["attr"]: "#6a737d",
        KINDS["name"]: "#6a737d",
        KINDS["number"]: "#098658",
        KINDS["string"]: "#a31515",
        KINDS["comment"]: "italic #8b949e",
    }


def tokenize_line(line: str) -> list[tuple[str, str]]:
    """One Tile IR line as ``(kind, text)`` with the kinds of ``KINDS`` (those of tileir.ts);
    adjacent space and text merge. Joining the texts gives back ``line`` exactly."""
    out: list[tuple[str, str]] = []
    for _, tok, text in TileIRLexer().get_tokens_unprocessed(line):
        kind = _KIND_OF[tok]
        if out and out[-1][0] == kind and kind in ("space", "text"):
            out[-1] = (kind, out[-1][1] + text)
        else:
            out.append((kind, text))
    return out


def _css(tok: _TokenType) -> str:
    st = TileIRStyle.style_for_token(tok)
    return ";".join(css for css, on in ((f"color:#{st['color']}", st["color"]),
                                        ("font-weight:600", st["bold"]),
                                        ("font-style:italic", st["italic"])) if on)


_STYLE_OF = {kind: _css(tok) for kind, tok in KINDS.items()}


def highlight_line(line: str) -> str:
    """One Tile IR line as HTML: escaped text, each token of a coloured kind in a
    ``<span class="cl-ir-KIND">`` with its colour inline."""
    out = []
    for kind, text in tokenize_line(line):
        esc = html.escape(text, quote=False)
        style = _STYLE_OF[kind]
        out.append(f'<span class="cl-ir-{kind}" style="{style}">{esc}</span>' if style else esc)
    return "".join(out)


def highlight(text: str) -> list[str]:
    """Every line of ``text`` highlighted (a list, one HTML string per line)."""
    return [highlight_line(line) for line in text.splitlines()]
