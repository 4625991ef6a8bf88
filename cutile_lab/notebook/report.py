"""The compile and benchmark reports as MIME bundles: the JupyterLab contract, HTML and text.

Owns: ``compile_report_bundle`` (one kernel's check/compile result), ``benchmark_report_bundle``
(one or more timed runs) and ``publish`` (display a bundle). Each bundle holds

* ``application/vnd.cutile-lab.report+json`` -- the contract with the JupyterLab extension
  (``REPORT_MIME``; ``version`` 1; every line number relative to the cell's text, 1-based;
  times in seconds). Keys beyond the contract's: ``status`` ("compiled", "checked" or
  "error"), ``consts``, ``const_generics``, ``notes`` (short lines), ``summary`` (one line),
  ``lowered`` (the lowered cuTile Python, or null), ``sass_hint`` (why SASS is null, when it
  could be had), ``remarks[].name``, ``diagnostics[].notes``, ``ptx`` (a CUDA C++ kernel's
  PTX; its ``tileir`` is null); a benchmark report also has
  ``device`` and ``notes``. ``source.first_line`` is the line of the cell (or file) on which
  ``source.text`` begins: 2 in a ``%%tilekernel`` cell, whose first line is the magic;
* ``text/html`` -- a self-contained fallback for the classic notebook, VS Code and nbconvert:
  diagnostics first, then Tile IR (highlighted, each line coloured like the source line it came
  from, hover links the two), resources, compile timings, remarks, SASS and the lowered cuTile
  Python, each folded in a ``<details>`` so the report stays compact. No JavaScript.
* ``text/plain`` -- rustc-style diagnostics and one summary line, for terminal IPython.

It only formats what the compile pipeline and the timer produced; it never compiles or runs.
"""
from __future__ import annotations

import base64
import html
import itertools
import re
from typing import Any, Iterable, Mapping, Sequence

from cutile_lab.diagnostics import Diagnostic
from cutile_lab.notebook import diagnostics as _diag

REPORT_MIME = "application/vnd.cutile-lab.report+json"
VERSION = 1
SECTIONS = ("diagnostics", "tileir", "resources", "sass", "remarks", "timings", "lowered", "ptx")
RESOURCE_KEYS = ("registers", "shared_bytes", "local_bytes", "max_threads_per_block",
                 "spill_stores", "spill_loads")
_EXTRA_RESOURCE_KEYS = ("reserved_shared_bytes", "stack_bytes", "max_registers", "code_bytes",
                        "barriers")
TIMING_KEYS = ("check", "lower", "bytecode", "disasm", "tileiras", "total")

_ids = itertools.count(1)

# Background tints for source lines and the Tile IR lines they produced (Compiler Explorer
# style); translucent, so they read on light and dark themes alike.
_PALETTE = ("rgba(255,179,0,0.16)", "rgba(0,150,255,0.14)", "rgba(46,160,67,0.16)",
            "rgba(207,34,46,0.12)", "rgba(137,87,229,0.15)", "rgba(0,170,170,0.16)",
            "rgba(219,97,162,0.15)", "rgba(120,120,120,0.16)")
_MONO = ("font-family:var(--jp-code-font-family,SFMono-Regular,Menlo,Consolas,monospace);"
         "font-size:12px;line-height:1.45")


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


def _resources_json(resources: Mapping | None) -> dict | None:
    if not resources:
        return None
    out = {k: resources.get(k) for k in RESOURCE_KEYS}
    out.update({k: resources[k] for k in _EXTRA_RESOURCE_KEYS if resources.get(k) is not None})
    return out


def _timings_json(timings: Mapping | None, cache: str | None) -> dict | None:
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
            report["resources"] = _resources_json(compiled.resources)
        if "sass" in shown:
            report["sass"] = sass_in_user_lines(sass, kernel, text, offset,
                                                report["source"]["first_line"])
            if sass is None and sass_hint:
                report["sass_hint"] = sass_hint
        if "remarks" in shown:
            report["remarks"] = _remarks_json(compiled.remarks, offset)
        if "timings" in shown:
            report["timings"] = _timings_json(compiled.timings, compiled.cache)
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

def _lookup_for(filename: str, text: str, offset: int):
    lines = text.splitlines()

    def lookup(fn: str, line: int) -> str:
        if fn == filename:
            i = line - 1 - offset
            return lines[i] if 0 <= i < len(lines) else ""
        import linecache
        return linecache.getline(fn, line).rstrip("\n")
    return lookup


def compile_report_text(report: Mapping, diagnostics: Sequence[Diagnostic],
                        lookup=None) -> str:
    src = report["source"]
    lookup = lookup or _lookup_for(src["filename"], src["text"], 0)
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


# --- HTML -----------------------------------------------------------------------------------

def _esc(x: Any) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _details(summary: str, body: str, open_: bool = False) -> str:
    return (f'<details{" open" if open_ else ""} style="margin:3px 0">'
            f'<summary style="cursor:pointer;user-select:none">{summary}</summary>'
            f'<div style="margin:4px 0 6px 14px">{body}</div></details>')


def _fmt_time(s: Any) -> str:
    if not isinstance(s, (int, float)):
        return "—"
    return f"{s * 1e3:.1f} ms" if s >= 1e-3 else f"{s * 1e6:.0f} µs"


def _table(rows: Sequence[tuple[str, str]]) -> str:
    cells = "".join(f'<tr><td style="padding:1px 12px 1px 0;color:#6a737d">{_esc(k)}</td>'
                    f'<td style="padding:1px 0;text-align:right;{_MONO}">{v}</td></tr>'
                    for k, v in rows)
    return f'<table style="border-collapse:collapse;margin:0">{cells}</table>'


def _tileir_html(report: Mapping, rid: str) -> tuple[str, str]:
    """(the two-pane source <-> Tile IR view, the scoped hover CSS)."""
    from cutile_lab.notebook.highlight import highlight
    ir = report["tileir"]
    src = report["source"]
    src_lines = src["text"].splitlines()
    by_ir: dict[int, int] = {}
    for ir_line, src_line in ir["line_map"]:
        by_ir.setdefault(ir_line, src_line)
    used = sorted(set(by_ir.values()))
    tint = {line: _PALETTE[i % len(_PALETTE)] for i, line in enumerate(used)}

    def row(num: int, body: str, src_line: int | None, title: str = "") -> str:
        cls = f' class="cl-s{src_line}"' if src_line else ""
        bg = f"background:{tint[src_line]};" if src_line in tint else ""
        t = f' title="{_esc(title)}"' if title else ""
        # A <pre> of one line per row: without its style attributes (a sanitizing viewer)
        # it still reads as numbered, indented lines.
        return (f'<span{cls}{t} style="{bg}display:inline-block;min-width:100%;'
                f'box-sizing:border-box;padding:0 6px"><span style="color:#8b949e;'
                f'user-select:none">{num:>{nw}} </span>{body or " "}</span>\n')

    nw = len(str(max(len(src_lines), len(ir["text"].splitlines()), 1)))
    left = "".join(row(i, _esc(line), i if i in tint else None)
                   for i, line in enumerate(src_lines, start=1))
    highlighted = highlight(ir["text"])
    right = []
    for i, body in enumerate(highlighted, start=1):
        s = by_ir.get(i)
        title = ""
        if s is not None and 0 < s <= len(src_lines):
            title = f"from line {s}: {src_lines[s - 1].strip()}"
        right.append(row(i, body, s, title))
    pane = (f"overflow:auto;max-height:32em;{_MONO};border:1px solid rgba(127,127,127,0.25);"
            f"border-radius:3px;padding:3px 0")
    view = (f'<div style="display:grid;grid-template-columns:minmax(0,2fr) minmax(0,3fr);'
            f'gap:8px;align-items:start">'
            f'<div style="{pane}"><div style="color:#6a737d;padding:0 6px 2px">source '
            f'({_esc(src["filename"])})</div><pre style="margin:0;font:inherit">{left}</pre>'
            f'</div><div style="{pane}"><div style="color:#6a737d;padding:0 6px 2px">Tile IR'
            f'</div><pre style="margin:0;font:inherit">{"".join(right)}</pre></div></div>')
    css = "".join(f"#{rid}:has(.cl-s{n}:hover) .cl-s{n}{{outline:1px solid #d29922;"
                  f"background:rgba(255,200,0,0.38)!important}}" for n in used)
    return view, css


def compile_report_html(report: Mapping, diagnostics: Sequence[Diagnostic],
                        lookup=None) -> str:
    rid = f"cl-report-{next(_ids)}"
    src = report["source"]
    lookup = lookup or _lookup_for(src["filename"], src["text"], 0)
    parts: list[str] = []
    css = ""
    name = report.get("kernel") or "cell"
    consts = report.get("consts") or {}
    status = report.get("status")
    badge_color = {"compiled": "#1a7f37", "error": "#cf222e"}.get(status, "#6a737d")
    head = [f'<b style="{_MONO};font-size:13px">{_esc(name)}</b>']
    if report.get("arch"):
        head.append(_esc(report["arch"]))
    if consts:
        head.append(_esc(", ".join(f"{k}={v}" for k, v in consts.items())))
    head.append(f'<span style="color:{badge_color};font-weight:600">{_esc(status)}</span>')
    if report.get("unchecked"):
        lines = ", ".join(str(u["line"]) for u in report["unchecked"])
        head.append(f'<span class="cl-unchecked" title="not checked for ownership: line '
                    f'{_esc(lines)}" style="color:#9a6700;font-weight:600;border:1px solid '
                    f'#9a6700;border-radius:3px;padding:0 3px">'
                    f'{_esc(_unchecked_text(len(report["unchecked"])))}</span>')
    res = report.get("resources")
    if res:
        bits = []
        if res.get("registers") is not None:
            bits.append(f"{res['registers']} regs")
        if res.get("shared_bytes") is not None:
            bits.append(f"{res['shared_bytes']} B smem")
        if res.get("local_bytes"):
            bits.append(f'<span style="color:#cf222e">{res["local_bytes"]} B local</span>')
        head.extend(bits)
    tim = report.get("timings")
    if tim:
        head.append(f"{_fmt_time(tim.get('total'))} (cache {_esc(tim.get('cache'))})")
    parts.append(f'<div style="margin-bottom:3px">{" · ".join(head)}</div>')
    diag_html = _diag.render_html(diagnostics, lookup)
    if diag_html:
        parts.append(diag_html)
    for note in report.get("notes") or ():
        parts.append(f'<div style="color:#6a737d;margin:2px 0">note: {_esc(note)}</div>')
    if report.get("tileir"):
        view, css = _tileir_html(report, rid)
        n = len(report["tileir"]["text"].splitlines())
        parts.append(_details(f"Tile IR ({n} lines) ↔ source — hover a line to link it", view))
    if res:
        rows = [(k.replace("_", " "), _esc(v if v is not None else "—"))
                for k, v in res.items()]
        parts.append(_details("Resources", _table(rows)))
    if tim:
        rows = [(k, _fmt_time(v)) for k, v in tim.items() if k != "cache" and v is not None]
        rows.append(("cache", _esc(tim.get("cache"))))
        parts.append(_details(f"Compile timings — cache {_esc(tim.get('cache'))}",
                              _table(rows)))
    remarks = report.get("remarks") or []
    if remarks:
        items = "".join(
            f'<li><span style="{_MONO}">line {_esc(r.get("line") or "?")}</span> '
            f'<b>{_esc(r.get("kind"))}</b> {_esc(r.get("pass") or "")} '
            f'{_esc(r.get("name") or "")}: {_esc(r.get("message"))}</li>' for r in remarks)
        parts.append(_details(f"Compiler remarks ({len(remarks)})",
                              f'<ul style="margin:0;padding-left:1.2em">{items}</ul>'))
    pre = (f'style="{_MONO};max-height:32em;overflow:auto;margin:0;white-space:pre;'
           f'padding:4px 6px;border:1px solid rgba(127,127,127,0.25);border-radius:3px"')
    if report.get("sass"):
        n = len(report["sass"].splitlines())
        parts.append(_details(f"SASS ({n} lines)", f"<pre {pre}>{_esc(report['sass'])}</pre>"))
    elif report.get("sass_hint"):
        parts.append(_details("SASS", f'<span style="color:#6a737d">'
                                      f'{_esc(report["sass_hint"])}</span>'))
    if report.get("ptx"):
        n = len(report["ptx"].splitlines())
        parts.append(_details(f"PTX ({n} lines)", f"<pre {pre}>{_esc(report['ptx'])}</pre>"))
    if report.get("lowered"):
        parts.append(_details("Lowered cuTile Python",
                              f"<pre {pre}>{_esc(report['lowered'].rstrip())}</pre>"))
    style = f"<style>{css}</style>" if css else ""
    return (f'<div class="cl-report" id="{rid}" style="font-size:13px;margin:2px 0">'
            f'{style}{"".join(parts)}</div>')


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
    lookup = _lookup_for(filename, text, offset)    # diagnostics carry the source's own lines
    return {REPORT_MIME: report,
            "text/html": compile_report_html(report, diagnostics, lookup),
            "text/plain": compile_report_text(report, diagnostics, lookup)}


# --- benchmark ------------------------------------------------------------------------------

BENCH_COLUMNS = (("median_us", "median µs"), ("min_us", "min µs"), ("gbps", "GB/s"),
                 ("tflops", "TFLOP/s"), ("pct_of_roof", "% of roof"),
                 ("host_ms", "host ms (simulator)"))


def _fmt_num(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        if v != v:       # NaN
            return "—"
        return f"{v:,.1f}" if abs(v) >= 100 else f"{v:.3g}"
    return str(v)


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
    # text
    lines = [title or f"{kernel or 'benchmark'}" + (f" on {device}" if device else "")]
    for r in rows:
        vals = ", ".join(f"{label} {_fmt_num(r.get(k))}" for k, label in BENCH_COLUMNS
                         if r.get(k) is not None)
        lines.append(f"  {r.get('name', '')}: {vals}")
    lines.extend(f"  note: {n}" for n in notes)
    # html
    cols = [("name", "run")] + [c for c in BENCH_COLUMNS if any(r.get(c[0]) is not None
                                                                 for r in rows)]
    extra = [k for k in ("flops", "bytes", "backend") if any(k in r for r in rows)]
    cols += [(k, k) for k in extra]
    th = "".join(f'<th style="padding:2px 10px;text-align:left">{_esc(label)}</th>'
                 for _, label in cols)
    trs = "".join("<tr>" + "".join(
        f'<td style="padding:1px 10px;{_MONO}">{_esc(_fmt_num(r.get(k)))}</td>'
        for k, _ in cols) + "</tr>" for r in rows)
    parts = [f'<div style="margin-bottom:3px"><b>{_esc(lines[0])}</b></div>',
             f'<table style="border-collapse:collapse">'
             f'<thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>']
    parts.extend(f'<div style="color:#6a737d;margin:2px 0">note: {_esc(n)}</div>' for n in notes)
    if png64:
        parts.append(f'<img src="data:image/png;base64,{png64}" style="max-width:100%"/>')
    return {REPORT_MIME: report,
            "text/html": f'<div class="cl-report cl-benchmark" style="font-size:13px">'
                         f'{"".join(parts)}</div>',
            "text/plain": "\n".join(lines)}


def publish(bundle: Mapping[str, Any], metadata: Mapping | None = None) -> None:
    """Display a bundle in the running IPython (the richest MIME type the front end knows)."""
    from IPython.display import publish_display_data
    publish_display_data(dict(bundle), metadata=dict(metadata or {}))
