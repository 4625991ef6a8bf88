"""Launch diagnostics in the notebook: errors and warnings raised by a launch (TL1xx, a refused
or failed simulation, ...) shown as the same rich report as a kernel's diagnostics, located at
the cell and line the user wrote, with the cell's own line numbering.

Owns: the launch report bundle (every span renamed to the cell the user sees, through
``notebook.cells``: ``cell [N]``, lines counted from the cell's first line), and the two
hooks ``%load_ext cutile_lab`` installs: IPython's custom exception handler for
``CutileLabError`` and a ``warnings.showwarning`` that shows ``LaunchWarning`` as a panel. It
formats what the runtime raised; it never launches anything.
"""
from __future__ import annotations

import linecache
import os
import traceback
import warnings
from dataclasses import replace
from typing import Any, Sequence

from cutile_lab.diagnostics import Diagnostic, Label, Span
from cutile_lab.errors import CutileLabError, KernelDiagnosticsError, LaunchWarning
from cutile_lab.notebook.cells import CellNames, cell_id, running_cell_file

_LAB_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _user_frame_span(tb, cells: CellNames) -> Span | None:
    """The deepest frame of ``tb`` that is the user's notebook code (not the lab's)."""
    found = None
    for frame in traceback.extract_tb(tb):
        if frame.filename.startswith(_LAB_DIR):
            continue
        if cells.of(frame.filename) is not None and frame.lineno:
            found = Span(frame.filename, frame.lineno, 0)
    return found


def locate(diags: Sequence[Diagnostic], user_span: Span | None) -> list[Diagnostic]:
    """Diagnostics whose primary span is not in the user's launching code (a failure the
    simulator reports at a kernel parameter, say) are moved to the user's line, keeping the
    old place as a label."""
    if user_span is None:
        return list(diags)
    out = []
    for d in diags:
        if d.span is None or d.span.filename != user_span.filename:
            labels = ((Label(d.span, "found here"),) if d.span is not None else ()) + d.labels
            d = replace(d, span=user_span, labels=labels)
        out.append(d)
    return out


def launch_report_bundle(diags: Sequence[Diagnostic], cells: CellNames, *,
                         cell_id: str | None = None, kernel: str | None = None
                         ) -> dict[str, Any]:
    """Launch diagnostics as a report bundle (kind ``"launch"``): the source is the cell of
    the first diagnostic's primary span, numbered as the cell is; labels in other cells
    become notes that name their cell and line."""
    from cutile_lab.notebook import diagnostics as _diag
    from cutile_lab.notebook.report import REPORT_MIME, VERSION

    diags = list(diags)
    primary = next((d.span for d in diags if d.span is not None), None)
    home = primary.filename if primary is not None else None
    place = cells.of(home) if home else None
    shown_home, offset = place if place else (home or "<launch>", 0)

    def lookup(fn: str, line: int) -> str:
        return linecache.getline(fn, line).rstrip("\r\n")

    # text and HTML: every span renamed to its cell and renumbered like the cell
    def rename(span: Span | None) -> Span | None:
        if span is None:
            return None
        hit = cells.of(span.filename)
        if hit is None:
            return span
        name, off = hit
        return Span(name, span.line + off, span.col,
                    None if span.end_line is None else span.end_line + off, span.end_col)

    back: dict[str, tuple[str, int]] = {}
    for d in diags:
        for s in [d.span] + [lab.span for lab in d.labels]:
            if s is not None and cells.of(s.filename) is not None:
                name, off = cells.of(s.filename)
                back[name] = (s.filename, off)

    def shown_lookup(fn: str, line: int) -> str:
        if fn in back:
            orig, off = back[fn]
            return lookup(orig, line - off)
        return lookup(fn, line)

    renamed = [replace(d, span=rename(d.span),
                       labels=tuple(Label(rename(lab.span), lab.message) for lab in d.labels))
               for d in diags]

    # JSON: lines relative to the home cell's text; labels elsewhere become notes
    json_diags = []
    for d in diags:
        labels, notes = [], list(d.notes)
        for lab in d.labels:
            if home is not None and lab.span.filename == home:
                labels.append(lab)
            else:
                where = rename(lab.span)
                text = lookup(lab.span.filename, lab.span.line).strip()
                notes.append(f"{lab.message}: {where.filename}, line {where.line}"
                             + (f": `{text}`" if text else ""))
        span = d.span if d.span is not None and d.span.filename == home else None
        json_diags.append(replace(d, span=span, labels=tuple(labels), notes=tuple(notes)))
    text = "".join(linecache.getlines(home)) if home else ""
    report = {
        "version": VERSION, "kind": "launch", "kernel": kernel, "arch": None,
        "cell_id": cell_id, "status": "error" if any(d.is_error for d in diags) else "warning",
        "source": {"filename": shown_home, "text": text, "first_line": 1 + offset},
        "consts": {}, "const_generics": [], "notes": [],
        "diagnostics": _diag.diagnostics_json(json_diags, 0),
        "tileir": None, "resources": None, "sass": None, "remarks": [], "timings": None,
        "lowered": None, "benchmark": None,
        "summary": "; ".join(f"{d.severity}[{d.code}]: {d.message}" for d in diags[:1]),
    }
    return {REPORT_MIME: report,
            "text/html": _diag.render_html(renamed, shown_lookup),
            "text/plain": _diag.render_text(renamed, shown_lookup)}


def diagnostics_of(error: BaseException) -> list[Diagnostic]:
    from cutile_lab.notebook.diagnostics import error_to_diagnostic
    if isinstance(error, KernelDiagnosticsError):
        return list(error.diagnostics)
    return [error_to_diagnostic(error)]


def show_error(shell, error: CutileLabError, tb=None) -> None:
    """Publish ``error`` as a launch report located at the user's line."""
    from cutile_lab.notebook.report import publish
    cells = CellNames(shell, running_cell_file(shell, tb))
    # diagnostics carry their own places (a kernel's, a launch's); a plain error is moved to
    # the user's line that led to it
    user = None if isinstance(error, KernelDiagnosticsError) or tb is None \
        else _user_frame_span(tb, cells)
    diags = locate(diagnostics_of(error), user)
    publish(launch_report_bundle(diags, cells, cell_id=cell_id(shell)))


def _custom_exc(shell, etype, value, tb, tb_offset=None):
    """IPython's handler for ``CutileLabError``: the panel, then one short line (so "Run All"
    still stops here), never a traceback from inside the lab."""
    try:
        show_error(shell, value, tb)
    except Exception:                  # the panel is a nicety: fall back to IPython's display
        return shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)
    first = diagnostics_of(value)[0]
    line = f"{etype.__name__}: [{first.code}] {first.message} (see the report above)"
    stb = [f"\x1b[0;31m{line}\x1b[0m"]
    # IPython's run_code drops what a custom handler returns: show the error output (the
    # front end's "this cell failed", and what stops "Run All") here
    shell._showtraceback(etype, value, stb)
    return []


_original_showwarning = None


def _showwarning(message, category, filename, lineno, file=None, line=None):
    """``LaunchWarning`` in an IPython kernel: a panel; anything else: as before."""
    shell = _shell()
    if shell is not None and isinstance(message, LaunchWarning):
        try:
            cells = CellNames(shell, running_cell_file(shell))
            from cutile_lab.notebook.report import publish
            publish(launch_report_bundle([message.diagnostic], cells, cell_id=cell_id(shell)))
            return
        except Exception:
            pass
    _original_showwarning(message, category, filename, lineno, file, line)


def _shell():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def install(shell) -> None:
    """Install both hooks (``%load_ext cutile_lab``); idempotent."""
    global _original_showwarning
    shell.set_custom_exc((CutileLabError,), _custom_exc)
    if _original_showwarning is None:
        _original_showwarning = warnings.showwarning
        warnings.showwarning = _showwarning
