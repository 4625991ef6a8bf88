"""The compile and benchmark reports as MIME bundles: the JupyterLab contract, HTML and text.

Owns: ``compile_report_bundle`` (one kernel's check/compile result), ``benchmark_report_bundle``
(one or more timed runs) and ``publish`` (display a bundle). Each bundle holds

* ``application/vnd.cutile-lab.report+json`` -- the contract with the JupyterLab extension
  (``REPORT_MIME``, ``version`` 1), written down as a JSON Schema, ``report.schema.json``
  beside this module (``SCHEMA_PATH``): every field, which ones each kind requires, one example
  per kind. Lines are 1-based and relative to ``source.text``, which begins on the cell's line
  ``source.first_line`` (2 in a ``%%tilekernel`` cell, whose first line is the magic); times
  are in seconds. A new field goes into the schema and ``extension/src/bundle.ts`` with it
  (tests/notebook/test_report_schema.py and the extension's schema.spec.ts fail otherwise);
* ``text/html`` -- a self-contained fallback for the classic notebook, VS Code and nbconvert,
  rendered by ``notebook.report_html`` (the one HTML rendering of every report kind).
* ``text/plain`` -- rustc-style diagnostics and one summary line, for terminal IPython.

It only formats what the compile pipeline and the timer produced; it never compiles or runs.
"""
from __future__ import annotations

import base64
import os
import re
from typing import Any, Iterable, Mapping, Sequence

from cutile_lab.diagnostics import Diagnostic
from cutile_lab.notebook import diagnostics as _diag
from cutile_lab.notebook.diagnostics import source_lookup
from cutile_lab.notebook.report_html import (BENCH_COLUMNS, benchmark_html,
                                             compile_report_html, fmt_num)

REPORT_MIME = "application/vnd.cutile-lab.report+json"
VERSION = 1
SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "report.schema.json")
"""The JSON Schema of the ``REPORT_MIME`` bundle (shipped in the package): the contract that
this module, ``launch_view``, ``compare`` and the extension's ``bundle.ts`` are tested against."""
SECTIONS = ("diagnostics", "tileir", "resources", "sass", "remarks", "timings", "lowered", "ptx")
RESOURCE_KEYS = ("registers", "shared_bytes", "local_bytes", "max_threads_per_block",
                 "spill_stores", "spill_loads")
_EXTRA_RESOURCE_KEYS = ("reserved_shared_bytes", "stack_bytes", "max_registers", "code_bytes",
                        "barriers")
TIMING_KEYS = ("check", "lower", "bytecode", "disasm", "tileiras", "total")


# --- JSON ---------------------------------------------------------------------------------

def _source_info(source, kernel) -> tuple[str, str, int]:
    """(filename, text, line_offset) of the cell, from a KernelSource, a dict or the kernel."""
    if source is None and kernel is not None:
        source = kernel.source
    if source is None:
        return "<unknown>", "", 0
    if isinstance(source, Mapping):
        first = int(source.get("first_line", 1))
        return source.get("filename", "<unknown>"), source.get("text", ""), first - 1
    return source.filename, source.text, int(getattr(source, "line_offset", 0))


def resources_json(resources: Mapping | None) -> dict | None:
    if not resources:
        return None
    out = {k: resources.get(k) for k in RESOURCE_KEYS}
    out.update({k: resources[k] for k in _EXTRA_RESOURCE_KEYS if resources.get(k) is not None})
    return out


def timings_json(timings: Mapping | None, cache: str | None) -> dict | None:
    if timings is None:
        return None
    out: dict[str, Any] = {k: timings.get(k) for k in TIMING_KEYS}
    for k, v in timings.items():
        if k not in out and isinstance(v, (int, float)):
            out[k] = v
    out["cache"] = cache or "miss"
    return out


def _remarks_json(remarks: Iterable[Mapping], line_offset: int) -> list[dict]:
    out = []
    for r in remarks or ():
        line = r.get("line")
        out.append({"line": (line - line_offset) if isinstance(line, int) else None,
                    "col": r.get("col"), "kind": r.get("kind"), "pass": r.get("pass"),
                    "name": r.get("name"), "message": r.get("message", "")})
    return out


def _show_set(show) -> set[str]:
    if show is None:
        return set(SECTIONS)
    return {s for s in show if s in SECTIONS}


def compile_report_json(compiled, kernel=None, diagnostics: Sequence[Diagnostic] = (),
                        source=None, *, arch: str | None = None, show=None,
                        notes: Sequence[str] = (), cell_id: str | None = None,
                        kernel_name: str | None = None, status: str | None = None,
                        sass: str | None = None, sass_hint: str | None = None,
                        cell_first_line: int | None = None) -> dict:
    filename, text, offset = _source_info(source, kernel)
    shown = _show_set(show)
    name = kernel_name or (compiled.name if compiled is not None else
                           getattr(kernel, "name", None))
    if status is None:
        status = ("compiled" if compiled is not None else
                  "error" if any(d.is_error for d in diagnostics) else "checked")
    report: dict[str, Any] = {
        "version": VERSION, "kind": "compile", "kernel": name,
        "arch": compiled.arch if compiled is not None else arch, "cell_id": cell_id,
        "status": status,
        "source": {"filename": filename, "text": text,
                   "first_line": cell_first_line if cell_first_line else offset + 1},
        "consts": dict(compiled.consts) if compiled is not None else {},
        "const_generics": list(getattr(kernel, "const_generics", []) or []),
        "notes": list(notes),
        "diagnostics": _diag.diagnostics_json(diagnostics, offset),
        "tileir": None, "resources": None, "sass": None, "remarks": [], "timings": None,
        "lowered": None, "summary": summary_line(compiled, name, diagnostics, notes),
        "benchmark": None, "unchecked": _unchecked_json(diagnostics, offset),
    }
    if compiled is not None:
        # a CUDA C++ kernel (compiling.nvrtc) has PTX where a tile kernel has Tile IR
        if "ptx" in shown and getattr(compiled, "ptx", None):
            report["ptx"] = compiled.ptx
        if "tileir" in shown and compiled.tileir is not None:
            report["tileir"] = {"text": compiled.tileir,
                                "line_map": [[int(ir), int(src) - offset]
                                             for ir, src in compiled.tileir_line_map]}
        if "resources" in shown:
            report["resources"] = resources_json(compiled.resources)
        if "sass" in shown:
            report["sass"] = sass_in_user_lines(sass, kernel, text, offset,
                                                report["source"]["first_line"])
            if sass is None and sass_hint:
                report["sass_hint"] = sass_hint
        if "remarks" in shown:
            report["remarks"] = _remarks_json(compiled.remarks, offset)
        if "timings" in shown:
            report["timings"] = timings_json(compiled.timings, compiled.cache)
        if "lowered" in shown:
            report["lowered"] = compiled.lowered_source.lstrip("\n") or None
    return report


def _unchecked_json(diagnostics: Sequence[Diagnostic], offset: int) -> list[dict]:
    """The code the checker did not check (``with unsafe():`` blocks), cell-relative lines."""
    from cutile_lab.checking import unchecked_spans
    return [{"line": sp.line - offset, "col": sp.col,
             "end_line": (sp.end_line or sp.line) - offset} for sp in unchecked_spans(diagnostics)]


def _unchecked_text(n: int) -> str:
    return f"{n} unchecked block{'s' * (n != 1)}"


_SASS_LINE = re.compile(r'//## File "(<lowered [^"]*>)", line (\d+)')


def sass_in_user_lines(sass: str | None, kernel, text: str, offset: int,
                       first_line: int) -> str | None:
    """The SASS with its line-table comments (``//## File "<lowered add …>", line 5``, lines
    of the generated cuTile Python) turned into the user's own lines, numbered as the report
    numbers them: ``//## line 4: tx = load_tile_like(x, z)``."""
    if not sass or kernel is None or "//## File" not in sass:
        return sass
    try:
        from cutile_lab.compiling.lowering import lower
        lowered = lower(kernel.definition)
    except Exception:           # the SASS as it is is still right
        return sass
    lines = text.splitlines()

    def mine(m: re.Match) -> str:
        if m.group(1) != lowered.filename:
            return m.group(0)
        span = lowered.user_span(int(m.group(2)))
        if span is None or span.filename != lowered.user_filename:
            return m.group(0)
        i = span.line - offset                     # line of ``text``, 1-based
        shown = i + first_line - 1
        code = lines[i - 1].strip() if 0 < i <= len(lines) else ""
        return f"//## line {shown}: {code}" if code else f"//## line {shown}"
    return _SASS_LINE.sub(mine, sass)


def summary_line(compiled, name: str | None, diagnostics: Sequence[Diagnostic] = (),
                 notes: Sequence[str] = ()) -> str:
    errors = sum(d.is_error for d in diagnostics)
    warnings = sum(d.severity == "warning" for d in diagnostics)
    unchecked = len(_unchecked_json(diagnostics, 0))
    counts = []
    if errors:
        counts.append(f"{errors} error{'s' * (errors != 1)}")
    if warnings:
        counts.append(f"{warnings} warning{'s' * (warnings != 1)}")
    if unchecked:
        counts.append(_unchecked_text(unchecked))
    if compiled is not None:
        line = compiled.summary()
        return line + (f" ({', '.join(counts)})" if counts else "")
    head = f"{name or 'cell'}: " + (", ".join(counts) if counts else "checked, no problems")
    if notes:
        head += " — " + notes[0]
    return head


# --- text -----------------------------------------------------------------------------------

def compile_report_text(report: Mapping, diagnostics: Sequence[Diagnostic],
                        lookup=None) -> str:
    src = report["source"]
    lookup = lookup or source_lookup(src["filename"], src["text"], 0)
    parts = []
    diag_text = _diag.render_text(diagnostics, lookup)
    if diag_text:
        parts.append(diag_text)
    parts.append(report["summary"])
    # the summary line of a kernel that did not compile already carries the first note
    skip = 1 if report["status"] != "compiled" and report["notes"] else 0
    parts.extend(f"  note: {n}" for n in report["notes"][skip:])
    parts.extend(report_sections_text(report))
    return "\n".join(parts)


TEXT_LINES = 40
"""A long section of the text report (Tile IR, SASS, lowered Python) shows this many lines,
unless it is the only long section the report holds (``--show tileir``): then all of it."""


def report_sections_text(report: Mapping, limit: int = TEXT_LINES) -> list[str]:
    """What the HTML report folds into ``<details>``, as terminal text: the Tile IR with line
    numbers (and the source line each came from), resources, remarks, SASS, the lowered
    cuTile Python. A long section is cut at ``limit`` lines with a hint to ``--show``."""
    long_ = [k for k in ("tileir", "sass", "lowered") if report.get(k)]
    whole = len(long_) == 1

    def block(title: str, key: str, lines: list[str]) -> list[str]:
        out = ["", f"{title} ({len(lines)} lines)"]
        shown = lines if whole or len(lines) <= limit else lines[:limit]
        width = len(str(len(lines)))
        out.extend(f"{i:>{width}} | {line}".rstrip() for i, line in enumerate(shown, 1))
        if len(shown) < len(lines):
            out.append(f"... {len(lines) - len(shown)} more lines (--show {key} shows it whole)")
        return out

    parts: list[str] = []
    ir = report.get("tileir")
    if ir:
        from_line = {}
        for ir_line, src_line in ir.get("line_map") or ():
            from_line.setdefault(ir_line, src_line)
        lines = ir["text"].rstrip("\n").splitlines()
        tagged = [f"{line:<60} // line {from_line[i]}" if i in from_line else line
                  for i, line in enumerate(lines, 1)]
        parts += block("Tile IR", "tileir", tagged)
    res = report.get("resources")
    if res:
        parts += ["", "Resources"]
        parts += [f"  {k.replace('_', ' '):<22} {'-' if v is None else v}"
                  for k, v in res.items()]
    remarks = report.get("remarks") or []
    if remarks:
        parts += ["", f"Compiler remarks ({len(remarks)})"]
        parts += [f"  line {r.get('line') or '?'}: [{r.get('kind')}] "
                  f"{(r.get('pass') or '') + ' ' if r.get('pass') else ''}{r.get('message')}"
                  for r in remarks]
    if report.get("sass"):
        parts += block("SASS", "sass", report["sass"].rstrip("\n").splitlines())
    elif report.get("sass_hint"):
        parts += ["", f"SASS: {report['sass_hint']}"]
    if report.get("lowered"):
        parts += block("Lowered cuTile Python", "lowered",
                       report["lowered"].rstrip("\n").splitlines())
    return parts


def compile_report_bundle(compiled, kernel=None, diagnostics: Sequence[Diagnostic] = (),
                          source=None, *, arch: str | None = None, show=None,
                          notes: Sequence[str] = (), cell_id: str | None = None,
                          kernel_name: str | None = None, status: str | None = None,
                          sass: str | None = None, sass_hint: str | None = None,
                          cell_first_line: int | None = None) -> dict[str, Any]:
    """One kernel's report as ``{mime: data}``.

    ``compiled`` is a ``CompiledKernel`` or None (not compiled: errors, or const generics
    left for the launch to bind); ``kernel`` the ``Kernel`` (or None when the cell did not
    parse); ``diagnostics`` what the checker (or the compiler) said; ``source`` the cell's
    ``KernelSource`` (default: the kernel's); ``show`` the sections to include (default: all);
    ``notes`` short lines shown under the diagnostics; ``sass`` the SASS text when wanted.
    """
    diagnostics = list(diagnostics)
    report = compile_report_json(compiled, kernel, diagnostics, source, arch=arch, show=show,
                                 notes=notes, cell_id=cell_id, kernel_name=kernel_name,
                                 status=status, sass=sass, sass_hint=sass_hint,
                                 cell_first_line=cell_first_line)
    filename, text, offset = _source_info(source, kernel)
    lookup = source_lookup(filename, text, offset)    # diagnostics carry the source's own lines
    return {REPORT_MIME: report,
            "text/html": compile_report_html(report, diagnostics, lookup),
            "text/plain": compile_report_text(report, diagnostics, lookup)}


# --- benchmark ------------------------------------------------------------------------------

def benchmark_report_bundle(rows: Sequence[Mapping], *, kernel: str | None = None,
                            plot_png: bytes | None = None, notes: Sequence[str] = (),
                            device: str | None = None, arch: str | None = None,
                            title: str | None = None) -> dict[str, Any]:
    """Timed runs as ``{mime: data}`` (kind "benchmark"); ``rows`` are flat dicts with at
    least ``name``; known columns: median_us, min_us, gbps, tflops, pct_of_roof, backend."""
    rows = [dict(r) for r in rows]
    png64 = base64.b64encode(plot_png).decode("ascii") if plot_png else None
    report = {"version": VERSION, "kind": "benchmark", "kernel": kernel, "arch": arch,
              "cell_id": None, "device": device, "notes": list(notes),
              "source": None, "diagnostics": [], "tileir": None, "resources": None,
              "sass": None, "remarks": [], "timings": None,
              "benchmark": {"rows": rows, "plot_png": png64}}
    title = title or f"{kernel or 'benchmark'}" + (f" on {device}" if device else "")
    lines = [title]
    for r in rows:
        vals = ", ".join(f"{label} {fmt_num(r.get(k))}" for k, label in BENCH_COLUMNS
                         if r.get(k) is not None)
        lines.append(f"  {r.get('name', '')}: {vals}")
    lines.extend(f"  note: {n}" for n in notes)
    return {REPORT_MIME: report, "text/html": benchmark_html(report, title),
            "text/plain": "\n".join(lines)}


def publish(bundle: Mapping[str, Any], metadata: Mapping | None = None) -> None:
    """Display a bundle in the running IPython (the richest MIME type the front end knows)."""
    from IPython.display import publish_display_data
    publish_display_data(dict(bundle), metadata=dict(metadata or {}))
