"""Diagnostics as the notebook shows them: JSON for the report contract, text and HTML.

Owns: the conversion of ``Diagnostic`` values (and of errors raised on purpose by any stage) to
the report's JSON shape, and the choice of renderer. Rendering itself belongs to
``cutile_lab.checking.render``; when that module is not importable this module falls back to a
plain rustc-like text (and that text, escaped, as HTML), so a report is never lost.
"""
from __future__ import annotations

import html
from typing import Callable, Iterable, Sequence

from cutile_lab.diagnostics import Diagnostic, Label, Span
from cutile_lab.errors import CutileLabError

SourceLookup = Callable[[str, int], str]


def _render_module():
    try:
        from cutile_lab.diagnostics import render
    except ImportError:
        return None
    return render


def error_to_diagnostic(err: BaseException, default_span: Span | None = None) -> Diagnostic:
    """An error raised by a stage (``CompileError``, ``LanguageError``...) as a diagnostic."""
    if isinstance(err, CutileLabError):
        span = err.span or default_span
        notes: tuple[str, ...] = ()
        output = getattr(err, "compiler_output", "") or ""
        stage = getattr(err, "stage", "") or ""
        # With a located span the message says it all; the raw output quotes generated code.
        if output and output.strip() != err.message.strip() and err.span is None:
            lines = output.strip().splitlines()
            if len(lines) > 12:
                lines = lines[:12] + [f"... ({len(lines) - 12} more lines)"]
            notes = (f"{stage + ' ' if stage else ''}compiler output:\n" + "\n".join(lines),)
        if span is not None and (span.line or 0) < 1:
            span = default_span
        return Diagnostic(err.code, "error", err.message, span, help=err.help, notes=notes)
    return Diagnostic("CL999", "error", f"internal error: {type(err).__name__}: {err}",
                      default_span,
                      help="this is a bug in cutile_lab, not in your kernel; please report it")


def _span_json(span: Span | None, line_offset: int = 0) -> dict | None:
    if span is None:
        return None
    line = span.line - line_offset
    end_line = (span.end_line - line_offset) if span.end_line is not None else line
    return {"line": line, "col": span.col, "end_line": end_line,
            "end_col": span.end_col}   # None: to the end of the line (a whole statement)


def diagnostic_json(d: Diagnostic, line_offset: int = 0, url: str | None = None,
                    explanation: str | None = None) -> dict:
    """One diagnostic in the report's JSON shape (lines relative to the cell, 1-based)."""
    labels = [{"span": _span_json(lab.span, line_offset), "message": lab.message}
              for lab in d.labels if isinstance(lab, Label)]
    out = {"code": d.code, "severity": d.severity, "message": d.message,
           "span": _span_json(d.span, line_offset), "labels": labels, "help": d.help,
           "url": url}
    if explanation:
        out["explanation"] = explanation
    if d.notes:
        out["notes"] = list(d.notes)
    return out


def diagnostics_json(diags: Sequence[Diagnostic], line_offset: int = 0) -> list[dict]:
    urls: list = [None] * len(diags)
    explanations: list = [None] * len(diags)
    render = _render_module()
    if render is not None and hasattr(render, "to_json") and diags:
        try:
            theirs = render.to_json(list(diags))
            items = theirs.get("diagnostics", theirs) if isinstance(theirs, dict) else theirs
            if isinstance(items, list) and len(items) == len(diags):
                urls = [it.get("url") if isinstance(it, dict) else None for it in items]
                explanations = [it.get("explanation") if isinstance(it, dict) else None
                                for it in items]
        except Exception:   # the checker's JSON is only a source of URLs and explanations
            pass
    return [diagnostic_json(d, line_offset, u, e)
            for d, u, e in zip(diags, urls, explanations)]


def render_text(diags: Sequence[Diagnostic], lookup: SourceLookup) -> str:
    if not diags:
        return ""
    render = _render_module()
    if render is not None and hasattr(render, "render_text"):
        try:
            return render.render_text(list(diags), lookup, color=False).rstrip("\n")
        except TypeError:
            return render.render_text(list(diags), lookup).rstrip("\n")
    return _fallback_text(diags, lookup)


def render_html(diags: Sequence[Diagnostic], lookup: SourceLookup) -> str:
    if not diags:
        return ""
    render = _render_module()
    if render is not None and hasattr(render, "render_html"):
        return render.render_html(list(diags), lookup)
    return ('<pre class="cl-diagnostics" style="white-space:pre-wrap;margin:4px 0;'
            'padding:6px 8px;border-left:3px solid #cf222e;background:rgba(207,34,46,0.06)">'
            + html.escape(_fallback_text(diags, lookup)) + "</pre>")


def _fallback_text(diags: Iterable[Diagnostic], lookup: SourceLookup) -> str:
    """rustc-like text without colours: used only when the checker's renderer is missing."""
    out = []
    for d in diags:
        out.append(f"{d.severity}[{d.code}]: {d.message}")
        if d.span is not None:
            out.append(f"  --> {d.span}")
            text = lookup(d.span.filename, d.span.line) if d.span.line else ""
            if text:
                num = str(d.span.line)
                pad = " " * len(num)
                end = d.span.end_col if (d.span.end_line in (None, d.span.line)
                                         and d.span.end_col) else len(text)
                width = max(1, end - d.span.col)
                out.append(f"{pad} |")
                out.append(f"{num} | {text}")
                out.append(f"{pad} | {' ' * d.span.col}{'^' * width}")
        for lab in d.labels:
            out.append(f"  note: {lab.span}: {lab.message}")
        if d.help:
            out.append(f"  = help: {d.help}")
        for n in d.notes:
            out.append("  = note: " + n.replace("\n", "\n          "))
    return "\n".join(out)
