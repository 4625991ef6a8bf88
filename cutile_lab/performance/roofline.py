"""Roofline and bandwidth figures (matplotlib) and the percent-of-roof arithmetic behind them.

Owns: ``roofline_figure``, ``bandwidth_figure`` and ``figure_png``; the percent-of-roof
arithmetic they draw (``percent_of_roof``, ``attainable_flops``) is ``performance.peaks``'s, so
that a timing row needs no matplotlib. Figures are built as ``matplotlib.figure.Figure``
objects — never through ``pyplot`` — so they render under any backend (Agg in tests and terminals) and leave no global
state behind. Measuring belongs to ``performance.measurement``; showing a figure in a notebook
to ``cutile_lab.notebook``.

Units on the axes are TFLOP/s, TB/s and flop/byte (SI: 1 TB = 1e12 bytes). Datasheet figures
are drawn solid, measured ceilings dashed.
"""
from __future__ import annotations

import io
import math
from typing import Iterable, Mapping, Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from cutile_lab.performance.ceilings import COPY_BW
from cutile_lab.performance.measurement import Measurement
from cutile_lab.performance.peaks import (PRECISIONS, DevicePeaks, attainable_flops,  # noqa: F401
                                         percent_of_roof)
from cutile_lab.performance.peaks import roof_precision as _canon

_T = 1e12
_COLORS = {"f64": "tab:purple", "f32": "tab:blue", "tf32": "tab:cyan", "bf16": "tab:orange",
           "f16": "tab:red", "fp8": "tab:green"}
_OTHER = "tab:gray"
_TENSOR_ONLY = ("tf32", "f16", "bf16", "fp8")  # rates that only tensor cores reach


def _group_label(names: Sequence[str]) -> str:
    """['f16', 'bf16'] → 'f16 / bf16 tensor'; ['f64', 'f32'] → 'f64 tensor / f32'."""
    if all(n in _TENSOR_ONLY for n in names):
        return " / ".join(names) + " tensor"
    return " / ".join(n + (" tensor" if n in _TENSOR_ONLY or n == "f64" else "") for n in names)


def figure_png(fig: Figure, dpi: int = 110) -> bytes:
    """The figure as PNG bytes (for HTML reports and MIME bundles)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()


def _num(v: float, _pos=None) -> str:
    if v <= 0:
        return ""
    if v >= 1:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def _fmt_rate(flops: float) -> str:
    t = flops / _T
    return f"{t:,.0f}" if t >= 100 else f"{t:.3g}"


def _log_axes(ax) -> None:
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=10))
        axis.set_major_formatter(FuncFormatter(_num))
        axis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="major", alpha=0.35)
    ax.grid(True, which="minor", alpha=0.12)


def _default_precisions(ms: Sequence[Measurement], peaks: DevicePeaks | None,
                        ceilings: Mapping[str, float]) -> list[str]:
    wanted = {_canon(m.precision) for m in ms} - {None}
    wanted |= {_canon(k[5:]) for k in ceilings if k.startswith("gemm_")} - {None}
    if not wanted and peaks is not None:
        wanted = set(peaks.precisions)
    return [p for p in PRECISIONS if p in wanted]


def roofline_figure(measurements: Iterable[Measurement], peaks: DevicePeaks | None,
                    ceilings: Mapping[str, float] | None = None,
                    precisions: Sequence[str] | None = None, *,
                    title: str | None = None, figsize: tuple[float, float] = (10, 6.5),
                    max_labels: int = 20) -> Figure:
    """A log-log roofline: x = arithmetic intensity (flop/byte), y = TFLOP/s.

    Draws the memory roof (datasheet bandwidth solid, measured ``copy_bw`` dashed), one
    compute ceiling per precision (datasheet solid, measured ``gemm_<precision>`` dashed), and
    each measurement as a point labelled with its name and its percent of the datasheet roof.
    ``precisions`` defaults to those of the measurements (all of the device's when there are
    none). Measurements without flops (copies) cannot sit on a log axis and are counted in a
    footnote instead. With more than ``max_labels`` points, only the ``max_labels`` closest to
    their roof are labelled.
    """
    ms = list(measurements)
    ceilings = dict(ceilings or {})
    shown = [m for m in ms if m.flops > 0 and m.bytes > 0 and m.seconds > 0]
    precs = ([p for p in (_canon(x) for x in precisions) if p] if precisions is not None
             else _default_precisions(ms, peaks, ceilings))
    bw_ds = peaks.mem_bw if peaks else None
    bw_meas = ceilings.get(COPY_BW)
    groups = _ceiling_groups(peaks, precs)
    measured = [(p, ceilings[f"gemm_{p}"]) for p in precs if f"gemm_{p}" in ceilings]
    peak_values = [v for _, v in groups] + [v for _, v in measured]
    (x_lo, x_hi), (y_lo, y_hi) = _axis_ranges(shown, peak_values, bw_ds, bw_meas)

    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.add_subplot()
    ax.set_xscale("log")
    ax.set_yscale("log")
    _draw_roofs(ax, (x_lo, x_hi), peak_values, bw_ds, bw_meas, groups, measured, peaks)
    labels = _draw_points(ax, shown, peaks)
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo / _T, y_hi / _T)
    _log_axes(ax)
    ax.set_xlabel("Arithmetic intensity (flop/byte)")
    ax.set_ylabel("Performance (TFLOP/s)")
    device = peaks.name if peaks else (ms[0].device if ms and ms[0].device else "unknown device")
    ax.set_title(title or f"Roofline — {device}", fontsize=13, loc="left")
    caption = ["dense datasheet peaks (solid)" if peaks else "no datasheet peaks for this device"]
    if bw_meas or measured:
        caption.append("measured ceilings dashed")
    caption.append(f"{len(ms)} measured kernel{'s' * (len(ms) != 1)}" if ms else
                   "no kernel measured yet (%tile_time)")
    fig.suptitle("; ".join(caption), fontsize=9, color="dimgray", x=0.99, ha="right")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", fontsize=8.5, framealpha=0.9)
    notes = []
    if len(ms) > len(shown):
        notes.append(f"{len(ms) - len(shown)} measurement(s) without flops not shown (see the "
                     "bandwidth figure)")
    if len(labels) > max_labels:
        notes.append(f"{max_labels} of {len(labels)} points labelled (those closest to the roof)")
        labels = [lab for _, lab in sorted(enumerate(labels), key=lambda il: (
            -(percent_of_roof(shown[il[0]], peaks) or 0), il[0]))[:max_labels]]
    if notes:
        ax.text(0.99, 0.01, "\n".join(notes), transform=ax.transAxes, ha="right",
                va="bottom", fontsize=8, color="dimgray")
    _place_labels(fig, ax, labels)
    return fig


def _ceiling_groups(peaks: DevicePeaks | None, precs: Sequence[str]
                    ) -> list[tuple[list[str], float]]:
    """Datasheet compute ceilings, precisions of equal peak drawn as one line."""
    groups: list[tuple[list[str], float]] = []
    if peaks is not None:
        for p in precs:
            v = peaks.peak_flops(p)
            if v is None:
                continue
            for names, value in groups:
                if math.isclose(value, v, rel_tol=1e-6):
                    names.append(p)
                    break
            else:
                groups.append(([p], v))
    return groups


def _axis_ranges(shown: list[Measurement], peak_values: list[float], bw_ds: float | None,
                 bw_meas: float | None) -> tuple[tuple[float, float], tuple[float, float]]:
    """((x_lo, x_hi) in flop/byte, (y_lo, y_hi) in flop/s): every point and ridge inside."""
    bw_any = bw_ds or bw_meas
    xs = [m.intensity for m in shown]
    if bw_any:
        xs += [v / bw_any for v in peak_values]
    if bw_ds and bw_meas:
        xs += [v / bw_meas for v in peak_values]
    xs = [x for x in xs if 0 < x < math.inf]
    x_lo = 10 ** math.floor(math.log10(min(xs + [1.0]) / 4))
    x_hi = 10 ** math.ceil(math.log10(max(xs + [100.0]) * 4))
    ys = [m.flop_rate for m in shown] + peak_values
    if bw_any:
        ys.append(x_lo * bw_any)
    ys = [y for y in ys if y > 0]
    y_lo = 10 ** math.floor(math.log10(min(ys or [1e9]) / 2))
    y_hi = 10 ** math.ceil(math.log10(max(ys or [1e15]) * 2.5))
    return (x_lo, x_hi), (y_lo, y_hi)


def _draw_roofs(ax, xrange: tuple[float, float], peak_values: list[float], bw_ds, bw_meas,
                groups, measured, peaks: DevicePeaks | None) -> None:
    """The memory roofs (datasheet solid, measured copy dashed) and the compute ceilings."""
    x_lo, x_hi = xrange
    top = max(peak_values) if peak_values else None

    def mem_line(bw: float, style: str, label: str) -> None:
        x_end = top / bw if top else x_hi
        ax.plot([x_lo, x_end], [x_lo * bw / _T, x_end * bw / _T], style, color="black",
                lw=2 if style == "-" else 1.6, label=label, zorder=3)

    if bw_ds:
        mem_line(bw_ds, "-", f"memory {bw_ds / _T:.3g} TB/s (datasheet)")
    if bw_meas:
        pct = f", {100 * bw_meas / bw_ds:.0f}%" if bw_ds else ""
        mem_line(bw_meas, "--", f"copy {bw_meas / _T:.3g} TB/s (measured{pct})")
    for names, value in groups:
        color = _COLORS.get(names[0], _OTHER)
        ridge = value / bw_ds
        label = _group_label(names)
        ax.plot([ridge, x_hi], [value / _T] * 2, "-", color=color, lw=2, zorder=3,
                label=f"{label}: {_fmt_rate(value)} TFLOP/s, ridge {ridge:.3g} flop/B")
        ax.plot([ridge], [value / _T], "o", color=color, ms=5, zorder=4)
    for p, value in measured:
        color = _COLORS.get(p, _OTHER)
        bw = bw_meas or bw_ds
        ridge = value / bw if bw else x_lo
        ds = peaks.peak_flops(p) if peaks else None
        pct = f", {100 * value / ds:.0f}%" if ds else ""
        ax.plot([ridge, x_hi], [value / _T] * 2, "--", color=color, lw=1.6, zorder=3,
                label=f"{p} GEMM: {_fmt_rate(value)} TFLOP/s (measured{pct})")


def _draw_points(ax, shown: list[Measurement], peaks: DevicePeaks | None) -> list:
    """One point per measurement; returns their labels (name and percent of roof)."""
    labels = []
    for m in shown:
        color = _COLORS.get(_canon(m.precision), _OTHER)
        xy = (m.intensity, m.flop_rate / _T)
        ax.plot(*xy, "o", ms=8, color=color, markeredgecolor="black", markeredgewidth=0.8,
                zorder=7)  # above label boxes
        pct = percent_of_roof(m, peaks)
        labels.append((xy, m.name + (f"\n{pct:.0f}% of roof" if pct is not None else "")))
    return labels


def _label_offsets() -> list[tuple[int, int]]:
    """Label offsets to try, in points from the marker: beside it first, then further away."""
    out = []
    for step in range(8):
        for dx in (10, -10) if step < 4 else (10, -10, 70, -70):
            out += [(dx, -4 - 18 * step), (dx, 6 + 18 * step)]
    return sorted(set(out), key=lambda d: (abs(d[0]) > 10, abs(d[1]), d[1] > 0, d[0] < 0))


_OFFSETS = _label_offsets()


def _overlap(a: Bbox, b: Bbox) -> float:
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return w * h if w > 0 and h > 0 else 0.0


def _place_labels(fig: Figure, ax, labels: list[tuple[tuple[float, float], str]]) -> None:
    """Annotate each point where its label overlaps no other label, marker or the legend
    (or, where no place is free, where it overlaps least), with a leader line when far."""
    if not labels:
        return
    FigureCanvasAgg(fig)          # a private canvas: measures text without pyplot
    fig.canvas.draw()             # runs the layout, so display positions are final
    renderer = fig.canvas.get_renderer()
    inside = ax.get_window_extent(renderer)
    taken = []
    if ax.get_legend() is not None:
        taken.append(ax.get_legend().get_window_extent(renderer))
    for xy, _ in labels:
        x, y = ax.transData.transform(xy)
        taken.append(Bbox.from_extents(x - 6, y - 6, x + 6, y + 6))
    rules = []                    # roof lines: better not hidden, but may be
    for line in ax.get_lines():
        if len(line.get_xdata()) != 2:
            continue
        (x0, y0), (x1, y1) = ax.transData.transform(list(zip(line.get_xdata(),
                                                             line.get_ydata())))
        for i in range(41):
            x, y = x0 + (x1 - x0) * i / 40, y0 + (y1 - y0) * i / 40
            rules.append(Bbox.from_extents(x - 3, y - 3, x + 3, y + 3))
    for xy, text in labels:
        best = None               # (cost, annotation, box)
        for dx, dy in _OFFSETS:
            far = abs(dy) > 10 or abs(dx) > 10
            ann = ax.annotate(
                text, xy, xytext=(dx, dy), textcoords="offset points", fontsize=8.5,
                ha="left" if dx > 0 else "right", va="top" if dy <= 0 else "bottom", zorder=6,
                bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="none", alpha=0.8),
                arrowprops=dict(arrowstyle="-", color="gray", lw=0.7) if far else None)
            ann.set_in_layout(False)
            ann.update_positions(renderer)
            box = Text.get_window_extent(ann, renderer).expanded(1.04, 1.15)  # no leader
            outside = box.width * box.height - _overlap(box, inside)
            cost = (sum(_overlap(box, t) for t in taken) + 4 * outside
                    + 0.5 * sum(_overlap(box, r) for r in rules))
            if best is None or cost < best[0]:
                if best is not None:
                    best[1].remove()
                best = (cost, ann, box)
                if cost == 0:
                    break
            else:
                ann.remove()
        taken.append(best[2])


def _bytes_label(v: float, _pos=None) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if v >= scale:
            return f"{v / scale:g} {unit}"
    return f"{v:g} B" if v > 0 else ""


def bandwidth_figure(series: Mapping[str, Sequence[tuple[float, float]]],
                     peaks: DevicePeaks | None, copy_ceiling: float | None = None, *,
                     title: str | None = None, figsize: tuple[float, float] = (10, 5.5)
                     ) -> Figure:
    """Achieved bandwidth (TB/s) against bytes moved per launch (log x), one line per series.

    ``series`` maps a name ("cutile add f32", "torch.add") to ``(bytes, seconds)`` points. The
    datasheet bandwidth is drawn solid and ``copy_ceiling`` (bytes/s, measured) dashed; with
    peaks, the right axis reads percent of the datasheet bandwidth.
    """
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.add_subplot()
    ax.set_xscale("log")
    y_max = 0.0
    for name, points in series.items():
        pts = sorted((b, s) for b, s in points if b > 0 and s > 0)
        if not pts:
            continue
        xs = [b for b, _ in pts]
        ys = [b / s / _T for b, s in pts]
        y_max = max(y_max, *ys)
        ax.plot(xs, ys, "o-", ms=4, lw=1.6, label=name, zorder=4)
    if peaks is not None:
        ax.axhline(peaks.mem_bw / _T, color="black", lw=2, zorder=3,
                   label=f"datasheet {peaks.mem_bw / _T:.3g} TB/s")
        y_max = max(y_max, peaks.mem_bw / _T)
    if copy_ceiling:
        pct = f", {100 * copy_ceiling / peaks.mem_bw:.0f}%" if peaks else ""
        ax.axhline(copy_ceiling / _T, color="black", ls="--", lw=1.6, zorder=3,
                   label=f"copy ceiling {copy_ceiling / _T:.3g} TB/s (measured{pct})")
        y_max = max(y_max, copy_ceiling / _T)
    ax.set_ylim(0, (y_max or 1.0) * 1.12)
    ax.xaxis.set_major_locator(LogLocator(base=10))
    ax.xaxis.set_major_formatter(FuncFormatter(_bytes_label))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="major", alpha=0.35)
    ax.grid(True, which="minor", axis="x", alpha=0.12)
    ax.set_xlabel("Bytes moved per launch (read + written)")
    ax.set_ylabel("Achieved bandwidth (TB/s)")
    if peaks is not None:
        bw = peaks.mem_bw / _T
        sec = ax.secondary_yaxis("right", functions=(lambda y: 100 * y / bw,
                                                     lambda p: p * bw / 100))
        sec.set_ylabel("% of datasheet bandwidth")
    device = peaks.name if peaks else "unknown device"
    ax.set_title(title or f"Memory bandwidth — {device}", fontsize=13, loc="left")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize=8.5, framealpha=0.9)
    return fig
