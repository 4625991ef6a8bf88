"""Diagnostics as the notebook shows them: JSON for the report contract, text and HTML.

Owns: the conversion of ``Diagnostic`` values (and of errors raised on purpose by any stage) to
the report's JSON shape (lines relative to the cell). Text and HTML are the one renderer's
(``cutile_lab.diagnostics.render``: the rustc-style layout, painted as text or as HTML); this
module only passes the cell's source lookup to it, so every report -- compile, launch, the
terminal's -- shows a diagnostic the same way.
"""
from __future__ import annotations

import linecache
from typing import Sequence

from cutile_lab.diagnostics import Diagnostic, Label, Span, render
from cutile_lab.diagnostics.render import SourceLookup
from cutile_lab.errors import CutileLabError


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
    """The report's diagnostics: each one's own shape, with the catalog's URL and explanation
    from the renderer's JSON."""
    theirs = render.to_json(list(diags))
    return [diagnostic_json(d, line_offset, t.get("url"), t.get("explanation"))
            for d, t in zip(diags, theirs)]


def source_lookup(filename: str, text: str, offset: int) -> SourceLookup:
    """A lookup that reads ``filename``'s lines from ``text`` (which begins after ``offset``
    lines of that file: a cell, or a kernel cut out of a file), other files from disk."""
    lines = text.splitlines()

    def lookup(fn: str, line: int) -> str:
        if fn == filename:
            i = line - 1 - offset
            return lines[i] if 0 <= i < len(lines) else ""
        return linecache.getline(fn, line).rstrip("\n")
    return lookup


def render_text(diags: Sequence[Diagnostic], lookup: SourceLookup) -> str:
    return render.render_text(list(diags), lookup, color=False).rstrip("\n") if diags else ""


def render_html(diags: Sequence[Diagnostic], lookup: SourceLookup) -> str:
    return render.render_html(list(diags), lookup) if diags else ""
