"""Every report as HTML: the fallback the notebook sends beside the report JSON, for the
classic notebook, VS Code, nbconvert and anything without the JupyterLab extension.

Owns the HTML of the three report kinds -- a compile or launch (header line, diagnostics, notes,
the Tile IR beside its source with hover links, then resources, compile timings, remarks, SASS,
PTX and the lowered cuTile Python, each folded in a ``<details>``), a benchmark (table, notes,
plot) and a ``%tile_diff`` -- with one set of frame helpers. A diagnostic's HTML is the one
renderer's (``notebook.diagnostics.render_html``), never laid out here. Inline styles only, no
JavaScript, so it survives sanitizing viewers. It formats report JSON; it computes nothing.
"""
from __future__ import annotations

import html
import itertools
from typing import Any, Callable, Mapping, Sequence

from cutile_lab.diagnostics import Diagnostic
from cutile_lab.notebook.diagnostics import SourceLookup, render_html, source_lookup

_ids = itertools.count(1)

# Background tints for source lines and the Tile IR lines they produced (Compiler Explorer
# style); translucent, so they read on light and dark themes alike.
_PALETTE = ("rgba(255,179,0,0.16)", "rgba(0,150,255,0.14)", "rgba(46,160,67,0.16)",
            "rgba(207,34,46,0.12)", "rgba(137,87,229,0.15)", "rgba(0,170,170,0.16)",
            "rgba(219,97,162,0.15)", "rgba(120,120,120,0.16)")
_MONO = ("font-family:var(--jp-code-font-family,SFMono-Regular,Menlo,Consolas,monospace);"
         "font-size:12px;line-height:1.45")


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


def _header_html(report: Mapping) -> str:
    """The one line over the report: kernel, arch, consts, status, the unchecked badge,
    registers and shared memory, the compile time."""
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
        n = len(report["unchecked"])
        head.append(f'<span class="cl-unchecked" title="not checked for ownership: line '
                    f'{_esc(lines)}" style="color:#9a6700;font-weight:600;border:1px solid '
                    f'#9a6700;border-radius:3px;padding:0 3px">'
                    f'{n} unchecked block{"s" * (n != 1)}</span>')
    res = report.get("resources") or {}
    if res.get("registers") is not None:
        head.append(f"{res['registers']} regs")
    if res.get("shared_bytes") is not None:
        head.append(f"{res['shared_bytes']} B smem")
    if res.get("local_bytes"):
        head.append(f'<span style="color:#cf222e">{res["local_bytes"]} B local</span>')
    tim = report.get("timings")
    if tim:
        head.append(f"{_fmt_time(tim.get('total'))} (cache {_esc(tim.get('cache'))})")
    return f'<div style="margin-bottom:3px">{" · ".join(head)}</div>'


_PRE = (f'style="{_MONO};max-height:32em;overflow:auto;margin:0;white-space:pre;'
        f'padding:4px 6px;border:1px solid rgba(127,127,127,0.25);border-radius:3px"')


def _folded_sections(report: Mapping) -> list[str]:
    """Resources, compile timings, remarks, SASS, PTX and the lowered cuTile Python, each
    folded in a ``<details>``."""
    parts = []
    res, tim = report.get("resources"), report.get("timings")
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
    if report.get("sass"):
        n = len(report["sass"].splitlines())
        parts.append(_details(f"SASS ({n} lines)", f"<pre {_PRE}>{_esc(report['sass'])}</pre>"))
    elif report.get("sass_hint"):
        parts.append(_details("SASS", f'<span style="color:#6a737d">'
                                      f'{_esc(report["sass_hint"])}</span>'))
    if report.get("ptx"):
        n = len(report["ptx"].splitlines())
        parts.append(_details(f"PTX ({n} lines)", f"<pre {_PRE}>{_esc(report['ptx'])}</pre>"))
    if report.get("lowered"):
        parts.append(_details("Lowered cuTile Python",
                              f"<pre {_PRE}>{_esc(report['lowered'].rstrip())}</pre>"))
    return parts


def compile_report_html(report: Mapping, diagnostics: Sequence[Diagnostic],
                        lookup: SourceLookup | None = None) -> str:
    """A compile report: the header line, the diagnostics (the one renderer's; ``lookup``
    reads their source lines, by default from the report's source), the notes, the Tile IR
    beside the source, then the folded sections."""
    rid = f"cl-report-{next(_ids)}"
    if lookup is None:
        src = report["source"]
        lookup = source_lookup(src["filename"], src["text"], 0)
    parts = [_header_html(report)]
    diag_html = render_html(diagnostics, lookup)
    if diag_html:
        parts.append(diag_html)
    for note in report.get("notes") or ():
        parts.append(f'<div style="color:#6a737d;margin:2px 0">note: {_esc(note)}</div>')
    css = ""
    if report.get("tileir"):
        view, css = _tileir_html(report, rid)
        n = len(report["tileir"]["text"].splitlines())
        parts.append(_details(f"Tile IR ({n} lines) ↔ source — hover a line to link it", view))
    parts += _folded_sections(report)
    style = f"<style>{css}</style>" if css else ""
    return (f'<div class="cl-report" id="{rid}" style="font-size:13px;margin:2px 0">'
            f'{style}{"".join(parts)}</div>')


# --- benchmark ------------------------------------------------------------------------------

BENCH_COLUMNS = (("median_us", "median µs"), ("min_us", "min µs"), ("gbps", "GB/s"),
                 ("tflops", "TFLOP/s"), ("pct_of_roof", "% of roof"),
                 ("host_ms", "host ms (simulator)"))


def fmt_num(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        if v != v:       # NaN
            return "—"
        return f"{v:,.1f}" if abs(v) >= 100 else f"{v:.3g}"
    return str(v)


def benchmark_html(report: Mapping, title: str) -> str:
    """Timed runs: a table of the known columns present, the notes, the plot."""
    rows = report["benchmark"]["rows"]
    cols = [("name", "run")] + [c for c in BENCH_COLUMNS if any(r.get(c[0]) is not None
                                                                 for r in rows)]
    cols += [(k, k) for k in ("flops", "bytes", "backend") if any(k in r for r in rows)]
    th = "".join(f'<th style="padding:2px 10px;text-align:left">{_esc(label)}</th>'
                 for _, label in cols)
    trs = "".join("<tr>" + "".join(
        f'<td style="padding:1px 10px;{_MONO}">{_esc(fmt_num(r.get(k)))}</td>'
        for k, _ in cols) + "</tr>" for r in rows)
    parts = [f'<div style="margin-bottom:3px"><b>{_esc(title)}</b></div>',
             f'<table style="border-collapse:collapse">'
             f'<thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>']
    parts.extend(f'<div style="color:#6a737d;margin:2px 0">note: {_esc(n)}</div>'
                 for n in report.get("notes") or ())
    png64 = report["benchmark"].get("plot_png")
    if png64:
        parts.append(f'<img src="data:image/png;base64,{png64}" style="max-width:100%"/>')
    return f'<div class="cl-report cl-benchmark" style="font-size:13px">{"".join(parts)}</div>'


# --- diff -----------------------------------------------------------------------------------

def diff_html(report: Mapping, resource_rows: Sequence[tuple[str, Any, Any]],
              unified: Callable[[Mapping, str, str], list[str]]) -> str:
    """``%tile_diff``: the resources side by side (a differing right value in bold), then the
    Tile IR and SASS diffs, unified and folded."""
    d = report["diff"]
    a, b = d["left"]["label"], d["right"]["label"]
    bold = ' style="font-weight:600"'
    rows = "".join(f"<tr><td>{_esc(k)}</td><td>{_esc(str(x))}</td>"
                   f"<td{bold if x != y else ''}>{_esc(str(y))}</td></tr>"
                   for k, x, y in resource_rows)

    def block(title: str, diff: Mapping | None) -> str:
        if not diff:
            return ""
        body = []
        for line in unified(diff, a, b):
            color = "#1a7f37" if line.startswith("+") else "#cf222e" if line.startswith("-") \
                else "inherit"
            body.append(f'<div style="color:{color};white-space:pre">{_esc(line)}</div>')
        return _details(f"{title} (+{diff['added']} -{diff['removed']})",
                        f'<div style="{_MONO};max-height:32em;overflow:auto">'
                        f"{''.join(body)}</div>")
    return (f'<div class="cl-report cl-diff" style="font-size:13px"><b>{_esc(report["summary"])}'
            f'</b><table style="border-collapse:collapse"><tr><th></th><th>{_esc(a)}</th>'
            f"<th>{_esc(b)}</th></tr>{rows}</table>"
            + block("Tile IR diff", d["tileir"]) + block("SASS diff", d["sass"]) + "</div>")
