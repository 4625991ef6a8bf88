"""Diagnostics as text (rustc-style, with carets), as self-contained HTML, and as JSON.

    error[TL010]: `x` is a shared input: a kernel cannot store into it
     --> add.py:4:5
      |
    1 | def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
      |                                   ------------------- `x` is declared here as shared
    ...
    4 |     x.store(t)
      |     ^^^^^^^^^^ stored here
      |
      = help: store into your own output tile instead: `z.store(t)`

One layout engine lays out the rows (gutter, source lines, underlines, labels) as styled
segments; the text, ANSI and HTML painters only differ in how they paint a segment.
"""
from __future__ import annotations

import html as _html
import linecache
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from cutile_lab.diagnostics.codes import CODES
from cutile_lab.diagnostics.explain import anchor as explain_anchor
from cutile_lab.diagnostics.explain import entry_markdown, explain_html
from cutile_lab.diagnostics.values import Diagnostic, Span

CATALOG_URL: str | None = None
"""The catalog's published address, once it has one (each code would link to
``CATALOG_URL + '#tl012'``). Until then a code links to its explanation inline, which HTML
reports carry with them (``explain.explain_html``): never to a path inside the source tree,
which an installed user does not have."""

SourceLookup = Callable[[str, int], str]

TAB = 4


def catalog_url(code: str) -> str | None:
    return f"{CATALOG_URL}#{code.lower()}" if CATALOG_URL else None


def default_lookup(filename: str, line: int) -> str:
    return linecache.getline(filename, line).rstrip("\r\n")


# --- layout ---------------------------------------------------------------------------------

Seg = tuple[str, str | None]   # (text, style)
Row = list[Seg]


@dataclass
class _Ann:
    start: int          # display columns
    end: int
    message: str
    primary: bool


def _display_col(text: str, byte_col: int) -> int:
    """``ast`` columns count UTF-8 bytes; the terminal counts characters (tabs expanded)."""
    if byte_col <= 0:
        return 0
    raw = text.encode("utf-8")
    prefix = raw[:byte_col].decode("utf-8", "ignore")
    extra = byte_col - len(raw)
    return len(prefix.expandtabs(TAB)) + max(0, extra)


def _safe_lookup(lookup: SourceLookup, filename: str, line: int) -> str:
    try:
        text = lookup(filename, line)
    except Exception:   # a lookup that fails must not hide the diagnostic
        return ""
    return (text or "").rstrip("\r\n")


def _file_groups(d: Diagnostic) -> list[tuple[str, list[tuple[Span, str, bool]]]]:
    anns: list[tuple[Span, str, bool]] = []
    if d.span is not None:
        anns.append((d.span, "", True))
    for lab in d.labels:
        if lab.span is not None:
            anns.append((lab.span, lab.message, False))
    # the primary's label: a Label on exactly the primary span becomes its caret text
    if d.span is not None:
        for i, (sp, msg, prim) in enumerate(anns[1:], 1):
            if sp == d.span and msg:
                anns[0] = (d.span, msg, True)
                del anns[i]
                break
    groups: dict[str, list] = {}
    order: list[str] = []
    for a in anns:
        if a[0].filename not in groups:
            groups[a[0].filename] = []
            order.append(a[0].filename)
        groups[a[0].filename].append(a)
    return [(f, groups[f]) for f in order]


def _underline_rows(anns: list[_Ann], severity: str) -> list[Row]:
    """The rows under one source line: markers, the rightmost label inline, the others below."""
    anns = sorted(anns, key=lambda a: (a.start, not a.primary))
    width = max(a.end for a in anns)
    marks = [" "] * width
    kinds: list[str | None] = [None] * width
    for a in sorted(anns, key=lambda a: a.primary):   # primaries drawn last, so they win
        for c in range(a.start, a.end):
            marks[c] = "^" if a.primary else "-"
            kinds[c] = severity if a.primary else "secondary"
    first: Row = []
    for ch, kind in zip(marks, kinds):
        if first and first[-1][1] == kind:
            first[-1] = (first[-1][0] + ch, kind)
        else:
            first.append((ch, kind))
    while first and first[-1][1] is None:
        first.pop()
    labelled = [a for a in anns if a.message]
    rows: list[Row] = [first]
    if not labelled:
        return rows
    inline = max(labelled, key=lambda a: (a.start, a.primary))
    if any(a.start > inline.start for a in anns if a is not inline):
        inline = None
    if inline is not None:
        first.append((" " + inline.message, severity if inline.primary else "secondary"))
    rest = sorted((a for a in labelled if a is not inline), key=lambda a: -a.start)
    if not rest:
        return rows
    rows.append(_bars([a for a in rest], severity))
    for i, a in enumerate(rest):
        row = _bars(rest[i + 1:], severity)
        pad = a.start - sum(len(t) for t, _ in row)
        row.append((" " * pad + a.message, severity if a.primary else "secondary"))
        rows.append(row)
    return rows


def _bars(anns: list[_Ann], severity: str) -> Row:
    row: Row = []
    col = 0
    for a in sorted(anns, key=lambda a: a.start):
        if a.start < col:
            continue
        row.append((" " * (a.start - col), None))
        row.append(("|", severity if a.primary else "secondary"))
        col = a.start + 1
    return row


def _layout(d: Diagnostic, lookup: SourceLookup) -> list[Row]:
    sev = d.severity
    rows: list[Row] = []
    header: Row = [(f"{sev}[{d.code}]", sev), (": ", "message"), (d.message, "message")]
    rows.append(header)
    groups = _file_groups(d)
    # the gutter is as wide as the largest line number shown
    max_line = max([sp.line for _, anns in groups for sp, _, _ in anns] + [1])
    gw = len(str(max_line))
    pad = " " * gw
    shown_any = False
    for gi, (filename, anns) in enumerate(groups):
        lead = next((sp for sp, _, prim in anns if prim), anns[0][0])
        arrow = "-->" if gi == 0 else ":::"
        rows.append([(pad + arrow + " ", "gutter"), (str(lead), None)])
        by_line: dict[int, list[_Ann]] = {}
        missing: list[tuple[Span, str, bool]] = []
        texts: dict[int, str] = {}
        for sp, msg, prim in anns:
            text = _safe_lookup(lookup, filename, sp.line) if sp.line >= 1 else ""
            if not text.strip():
                missing.append((sp, msg, prim))
                continue
            texts[sp.line] = text
            start = _display_col(text, sp.col)
            if sp.end_line in (None, sp.line) and sp.end_col is not None:
                end = _display_col(text, sp.end_col)
            else:
                end = len(text.expandtabs(TAB))
            end = max(end, start + 1)
            by_line.setdefault(sp.line, []).append(_Ann(start, end, msg, prim))
        if by_line:
            shown_any = True
            rows.append([(pad + " |", "gutter")])
            prev = None
            for line in sorted(by_line):
                if prev is not None and line - prev == 2:
                    between = _safe_lookup(lookup, filename, line - 1)
                    rows.append([(f"{line - 1:>{gw}} | ", "gutter"),
                                 (between.expandtabs(TAB), None)])
                elif prev is not None and line - prev > 2:
                    rows.append([("...", "gutter")])
                rows.append([(f"{line:>{gw}} | ", "gutter"),
                             (texts[line].expandtabs(TAB), None)])
                for r in _underline_rows(by_line[line], sev):
                    rows.append([(pad + " | ", "gutter")] + r)
                prev = line
        for sp, msg, prim in missing:
            if prim and not msg:
                continue
            rows.append([(pad + " = ", "gutter"), ("note", "note"),
                         (f": {msg or 'here'} ({sp})", None)])
    if shown_any and (d.help or d.notes):
        rows.append([(pad + " |", "gutter")])
    for kind, text in ([("help", d.help)] if d.help else []) + [("note", n) for n in d.notes]:
        indent = pad + " " * (5 + len(kind))
        lines = _wrap(str(text), WIDTH - len(indent))
        rows.append([(pad + " = ", "gutter"), (kind, kind), (": " + lines[0], None)])
        for more in lines[1:]:
            rows.append([(indent + more, None)])
    return rows


WIDTH = 100


def _wrap(text: str, width: int) -> list[str]:
    """Wrap prose at ``width`` without breaking inside `code` spans; keep given newlines."""
    out: list[str] = []
    width = max(width, 40)
    for para in text.split("\n"):
        if len(para) <= width:
            out.append(para)
            continue
        # spaces inside backticks are protected while wrapping
        protected, inside = [], False
        for ch in para:
            if ch == "`":
                inside = not inside
            protected.append("\x00" if ch == " " and inside else ch)
        words = "".join(protected).split(" ")
        line = ""
        for w in words:
            if line and len(line) + 1 + len(w) > width:
                out.append(line)
                line = w
            else:
                line = f"{line} {w}" if line else w
        out.append(line)
    return [x.replace("\x00", " ") for x in out] or [""]


# --- painters -------------------------------------------------------------------------------

_ANSI = {"error": "\x1b[1;31m", "warning": "\x1b[1;33m", "note": "\x1b[1;32m",
         "help": "\x1b[1;36m", "gutter": "\x1b[1;34m", "secondary": "\x1b[1;34m",
         "message": "\x1b[1m"}
_RESET = "\x1b[0m"


def _paint_text(rows: list[Row], color: bool) -> str:
    out = []
    for row in rows:
        parts = []
        for text, style in row:
            if color and style in _ANSI and text.strip():
                parts.append(_ANSI[style] + text + _RESET)
            else:
                parts.append(text)
        out.append("".join(parts).rstrip())
    return "\n".join(out)


def _summary(diags: Sequence[Diagnostic]) -> str:
    counts = []
    for sev in ("error", "warning", "note"):
        n = sum(1 for d in diags if d.severity == sev)
        if n:
            counts.append(f"{n} {sev}{'s' if n > 1 else ''}")
    return ", ".join(counts)


def render_text(diags: Iterable[Diagnostic], source_lookup: SourceLookup | None = None,
                color: bool = False) -> str:
    """rustc-style text: ``error[TL012]: ...``, `` --> file:line:col``, the source line with
    carets under the primary span and ``-`` under labelled secondary spans, ``= help:``."""
    diags = list(diags)
    lookup = source_lookup or default_lookup
    blocks = [_paint_text(_layout(d, lookup), color) for d in diags]
    text = "\n\n".join(blocks)
    if len(diags) > 1:
        text += "\n\n" + _summary(diags)
    return text + "\n" if text else ""


# Mid-tone colours: readable on a white page and on a dark theme alike.
_HTML_COLORS = {"error": "#e5484d", "warning": "#d98a0b", "note": "#2f9e6a", "help": "#1c9bb8",
                "gutter": "#5b7fd6", "secondary": "#5b7fd6"}
_HTML_TINT = {"error": "rgba(229,72,77,0.08)", "warning": "rgba(217,138,11,0.09)",
              "note": "rgba(47,158,106,0.08)"}
_MONO = ("var(--jp-code-font-family, ui-monospace, SFMono-Regular, Menlo, Consolas, "
         "'Liberation Mono', monospace)")


def _paint_html_rows(rows: list[Row]) -> str:
    out = []
    for row in rows:
        parts = []
        for text, style in row:
            t = _html.escape(text)
            color = _HTML_COLORS.get(style or "")
            if style in ("error", "warning", "note", "help") and text.strip():
                parts.append(f'<span style="color:{color};font-weight:bold">{t}</span>')
            elif color:
                parts.append(f'<span style="color:{color}">{t}</span>')
            elif style == "message":
                parts.append(f"<b>{t}</b>")
            else:
                parts.append(t)
        out.append("".join(parts).rstrip())
    return "\n".join(out)


def render_html(diags: Iterable[Diagnostic], source_lookup: SourceLookup | None = None) -> str:
    """Self-contained HTML (inline styles only): one block per diagnostic, its code a link to
    the catalog entry (carried inline, folded, after the blocks), ``data-file``/``data-line``/
    ``data-col`` attributes for jump-to-line."""
    diags = list(diags)
    lookup = source_lookup or default_lookup
    blocks = []
    for d in diags:
        rows = _layout(d, lookup)
        color = _HTML_COLORS.get(d.severity, "#888")
        tint = _HTML_TINT.get(d.severity, "transparent")
        href, target = catalog_url(d.code), ' target="_blank"'
        if href is None:
            href, target = f"#{explain_anchor(d.code)}", ""
        code_link = (f'<a href="{_html.escape(href)}"{target} '
                     f'style="color:{color};text-decoration:underline dotted" '
                     f'title="what {d.code} means and how to fix it">{d.code}</a>')
        header = (f'<span style="color:{color};font-weight:bold">{d.severity}[{code_link}]</span>'
                  f'<b>: {_html.escape(d.message)}</b>')
        body = _paint_html_rows(rows[1:])
        attrs = f' data-code="{d.code}" data-severity="{d.severity}"'
        if d.span is not None:
            attrs += (f' data-file="{_html.escape(d.span.filename)}" data-line="{d.span.line}"'
                      f' data-col="{d.span.col}"')
        blocks.append(
            f'<div class="cl-diagnostic cl-{d.severity}"{attrs} style="border-left:3px solid '
            f'{color};background:{tint};padding:6px 10px;margin:6px 0;border-radius:2px">'
            f'<div style="white-space:pre-wrap">{header}</div>'
            f'<pre style="margin:4px 0 0 0;padding:0;background:transparent;color:inherit;'
            f'font-family:inherit;font-size:inherit;line-height:1.35;white-space:pre;'
            f'overflow-x:auto">{body}</pre></div>')
    summary = ""
    if len(diags) > 1:
        summary = f'<div style="opacity:0.8;margin-top:2px">{_html.escape(_summary(diags))}</div>'
    # each code's explanation travels with the HTML, folded, where its code links to
    explained = "".join(explain_html(c) for c in dict.fromkeys(d.code for d in diags))
    return (f'<div class="cl-diagnostics" style="font-family:{_MONO};font-size:12.5px;'
            f'color:inherit">' + "".join(blocks) + summary + explained + "</div>")


def _span_json(span: Span | None) -> dict | None:
    if span is None:
        return None
    return {"filename": span.filename, "line": span.line, "col": span.col,
            "end_line": span.end_line if span.end_line is not None else span.line,
            "end_col": span.end_col if span.end_col is not None else span.col + 1}


def to_json(diags: Iterable[Diagnostic]) -> list[dict]:
    """Each diagnostic as plain data: code, severity, message, span, labels, help, notes, url,
    explanation (the catalog's entry, Markdown)."""
    out = []
    for d in diags:
        info = CODES.get(d.code)
        out.append({
            "code": d.code, "severity": d.severity, "message": d.message,
            "title": info.title if info else None,
            "span": _span_json(d.span),
            "labels": [{"span": _span_json(lab.span), "message": lab.message}
                       for lab in d.labels],
            "help": d.help, "notes": list(d.notes),
            "url": catalog_url(d.code) if info else None,
            # the catalog's entry itself, as rustc's JSON carries one (None: undocumented)
            "explanation": entry_markdown(d.code),
        })
    return out
