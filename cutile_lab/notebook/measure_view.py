"""The line magics that measure and show: ``%tile_time``, ``%tile_device``, ``%tile_roofline``
and ``%tile_bandwidth``.

Owns: evaluating the launch expression of ``%tile_time``, publishing its benchmark report (or the
simulator's note), the device panel, and the roofline and bandwidth plots. Timing, counting and
measurement rows are ``performance.timing``'s; figures are ``performance.roofline``'s.
"""
from __future__ import annotations

import base64
from typing import Any, Callable

from IPython.core.error import UsageError

from cutile_lab.errors import CutileLabError, TileCellError
from cutile_lab.performance.timing import (device_name, gpu_status, is_graph, is_op, launch_in,
                                           launch_info, launch_label, measurement_row,
                                           op_backend, run_once_sim, time_launch, work_of)

EXAMPLE_DEVICE = "H100-SXM"


def resolve_launch(value) -> Callable[[], Any]:
    """A callable that gives the op to run: ``%tile_time`` takes an op, a captured graph or a
    factory of ops.

    An op is enqueued again for every run (a launch over the same tensors), a graph is replayed
    once per run; a factory is called for every run (for launches that must be rebuilt each
    time)."""
    if is_op(value) or is_graph(value):
        return lambda: value
    if callable(value):
        return value
    raise UsageError(f"%tile_time needs a launch, e.g. `add(z.partition(128), x, y)`, a graph "
                     f"(`cl.graph(op)`), or a callable returning one; got a "
                     f"{type(value).__name__}")


# --- %tile_time ---------------------------------------------------------------------------------

def _check_time_options(opts) -> None:
    """``-n``, ``-w``, ``--flops`` and ``--bytes`` are counts: a value none could be is a
    ``UsageError`` (``-n 0`` left no run to take the median of)."""
    for flag, value, low in (("-n/--repeats", opts.repeats, 1), ("-w/--warmup", opts.warmup, 0),
                             ("--flops", opts.flops, 0), ("--bytes", opts.bytes_, 0)):
        if value is not None and not value >= low:
            raise UsageError(f"%tile_time {flag} {value}: must be {'at least 1' if low else '>= 0'}"
                             ", e.g. %tile_time -n 50 -w 5 add(z.partition(128), x, y)")


def run_tile_time(shell, opts, expr: str):
    # the user's own exception (their expression or callable raising) is shown from their
    # expression on: IPython leaves out frames that set __tracebackhide__
    __tracebackhide__ = True  # noqa: F841
    import linecache
    _check_time_options(opts)
    filename = "<%tile_time>"    # errors about the launch quote the expression itself
    linecache.cache[filename] = (len(expr), None, [expr + "\n"], filename)
    try:
        code = compile(expr, filename, "eval")
    except SyntaxError as e:
        raise UsageError(f"%tile_time: not an expression: {e.msg}: {expr}") from None
    try:
        value = eval(code, shell.user_global_ns, shell.user_ns)
    except CutileLabError as e:
        _show_lab_error(e, "%tile_time")
    except Exception as e:      # the user's expression failed (a NameError...): say so, with
        # no traceback through the magic's own frames
        raise TileCellError(f"%tile_time: evaluating `{expr}` raised {type(e).__name__}: {e}"
                            ) from None
    make = resolve_launch(value)
    try:
        return _tile_time(opts, make)
    except CutileLabError as e:      # a refused launch (ownership, arguments, compile...)
        _show_lab_error(e, "%tile_time")


def _show_lab_error(e: CutileLabError, what: str):
    """Show a lab error as its diagnostics (or its located message) and end the cell with one
    short line, never a traceback from inside the lab."""
    from IPython import get_ipython
    from cutile_lab.notebook.launch_view import show_error
    show_error(get_ipython(), e, e.__traceback__)
    raise TileCellError(f"{what}: {e.message}") from None


def _tile_time(opts, make):
    __tracebackhide__ = True  # noqa: F841  (see run_tile_time)
    from cutile_lab.notebook.report import benchmark_report_bundle, publish
    from cutile_lab.performance import MEASUREMENTS, Measurement, lookup_device
    found, reason = gpu_status()
    first = make()
    launch = launch_in(first)
    info = launch_info(launch) if launch is not None else None
    backend = op_backend(first)
    name, kname, params = launch_label(info, opts.name or (getattr(launch, "label", None)
                                                     if info is None else None))
    if is_graph(first) and not opts.name:
        name = f"{name} (graph)" if info is not None else first.label
    if not found or backend == "sim":
        why = (f"no GPU found ({reason})" if not found else
               "this launch runs on the simulator backend")
        result, secs = run_once_sim(lambda: first)
        row = {"name": name, "kernel": kname, "backend": "sim", "host_ms": secs * 1e3,
               "median_us": None}
        publish(benchmark_report_bundle(
            [row], kernel=kname,
            notes=[f"timings need a GPU: {why}. Ran the launch once on the CPU simulator "
                   f"instead ({secs * 1e3:.1f} ms of host time, not a GPU timing)."]))
        return None
    count, notes = work_of(launch, opts.flops, opts.bytes_)
    if is_graph(first) and launch is None and (opts.flops is None or opts.bytes_ is None):
        notes = [n for n in notes if not n.startswith("flops/bytes unknown")]
        notes.append(f"a graph of {first.num_kernels} kernel(s) from a chain: its work is not "
                     "derived; pass --flops N --bytes N (per replay) for rates")

    # the first op is used for the first warm-up run
    ops = [first]

    def next_run():
        return ops.pop() if ops else make()
    timing = time_launch(next_run, warmup=max(opts.warmup, 1), repeats=max(opts.repeats, 1))
    dev = device_name() or ""
    precision = opts.precision or count.precision
    m = Measurement(name=name, kernel=kname, precision=precision, flops=count.flops,
                    bytes=count.bytes, seconds=timing.median, samples=list(timing.samples),
                    device=dev, params=params)
    MEASUREMENTS.add(m)
    peaks = lookup_device(dev) if dev else None
    row = measurement_row(m, peaks)
    if timing.spread > 0.05:
        notes.append(f"noisy: the interquartile range is {timing.spread:.0%} of the median")
    publish(benchmark_report_bundle([row], kernel=kname, device=dev, notes=notes))
    return None


# --- %tile_device -------------------------------------------------------------------------------

def _peaks_rows(peaks) -> list[tuple[str, str]]:
    rows = [("memory bandwidth", f"{peaks.mem_bw / 1e12:.3g} TB/s")]
    for label, attr in (("f64", "f64"), ("f64 tensor", "f64_tensor"), ("f32", "f32"),
                        ("tf32 tensor", "tf32"), ("f16 tensor", "f16"),
                        ("bf16 tensor", "bf16"), ("fp8 tensor", "fp8")):
        v = getattr(peaks, attr)
        if v is not None:
            rows.append((label, f"{v / 1e12:,.1f} TFLOP/s"))
    return rows


def device_bundle() -> dict:
    import html as _html
    from cutile_lab.performance import PEAKS, load_ceiling_dates, load_ceilings, lookup_device
    found, reason = gpu_status()
    rows: list[tuple[str, str]] = []
    notes: list[str] = []
    title = ""
    peaks = None
    ceilings: dict = {}
    dates: dict = {}
    if found:
        from cutile_lab.runtime.device import device_info
        info = device_info()
        title = info.name
        rows += [("architecture", info.arch),
                 ("SMs", str(info.sm_count)),
                 ("SM clock (max)", f"{info.sm_clock_mhz:.0f} MHz"),
                 ("memory clock", f"{info.memory_clock_mhz:.0f} MHz"),
                 ("memory bus", f"{info.memory_bus_bits} bit"),
                 ("memory", f"{info.total_memory / 2**30:.1f} GiB"),
                 ("L2 cache", f"{info.l2_cache_bytes / 2**20:.0f} MiB"),
                 ("bandwidth (clock × bus)", f"{info.theoretical_bandwidth / 1e12:.2f} TB/s")]
        if info.driver_version:
            rows.append(("driver", info.driver_version))
        peaks = lookup_device(info.name)
        ceilings = load_ceilings(info.name)
        dates = load_ceiling_dates(info.name)
        if peaks is None:
            notes.append(f"no datasheet peaks known for {info.name!r}: rooflines show measured "
                         "ceilings only")
    else:
        peaks = PEAKS[EXAMPLE_DEVICE]
        title = "no GPU"
        notes.append(f"no GPU found ({reason}). Timings need a GPU; kernels still check, "
                     "compile and run on the CPU simulator.")
        notes.append(f"As an example, the datasheet peaks of the {peaks.name}:")
    peak_rows = _peaks_rows(peaks) if peaks is not None else []
    ceil_rows = []
    for k, v in sorted(ceilings.items()):
        unit = f"{v / 1e12:.3g} TB/s" if k == "copy_bw" else f"{v / 1e12:,.1f} TFLOP/s"
        ref = None
        if peaks is not None:
            ref = peaks.mem_bw if k == "copy_bw" else (
                peaks.peak_flops(k[5:]) if k.startswith("gemm_") else None)
        pct = f" ({100 * v / ref:.0f}% of datasheet)" if ref else ""
        when = f", measured {dates[k]:%Y-%m-%d}" if k in dates else ""
        ceil_rows.append((k, unit + pct + when))

    def table(title_, rows_):
        body = "".join(f'<tr><td style="padding:1px 14px 1px 0;color:#6a737d">'
                       f'{_html.escape(a)}</td><td style="padding:1px 0">{_html.escape(b)}'
                       f'</td></tr>' for a, b in rows_)
        return (f'<div style="margin-top:4px"><b>{_html.escape(title_)}</b>'
                f'<table style="border-collapse:collapse">{body}</table></div>')
    parts = [f'<div style="font-size:13px"><div><b>{_html.escape(title)}</b></div>']
    parts += [f'<div style="color:#6a737d">{_html.escape(n)}</div>' for n in notes]
    if rows:
        parts.append(table("device", rows))
    if peak_rows:
        parts.append(table(f"datasheet peaks, dense ({peaks.name}; source: {peaks.source})",
                           peak_rows))
    if ceil_rows:
        parts.append(table("measured ceilings", ceil_rows))
    elif found:
        parts.append('<div style="color:#6a737d">no measured ceilings cached for this device '
                     'yet</div>')
    parts.append("</div>")
    text = [title] + notes + [f"  {a:<24}{b}" for a, b in rows]
    if peak_rows:
        text.append(f"datasheet peaks, dense ({peaks.name}):")
        text += [f"  {a:<24}{b}" for a, b in peak_rows]
    if ceil_rows:
        text.append("measured ceilings:")
        text += [f"  {a:<24}{b}" for a, b in ceil_rows]
    return {"text/html": "".join(parts), "text/plain": "\n".join(text)}


def run_tile_device(shell, line: str = "") -> None:
    from cutile_lab.notebook.report import publish
    if line.strip():        # `%tile_device 1` showed device 0 as if it were device 1
        raise UsageError(f"%tile_device takes no arguments, got {line.strip()!r}: it shows the "
                         "GPU this process launches on (choose another with "
                         "CUDA_VISIBLE_DEVICES before starting the notebook server)")
    publish(device_bundle())


# --- %tile_roofline / %tile_bandwidth -----------------------------------------------------------

def _figure_context(measurements):
    """(peaks, ceilings, device name, notes) for plots of ``measurements``."""
    from cutile_lab.performance import PEAKS, load_ceilings, lookup_device
    notes = []
    dev = device_name()
    if dev is None:
        devices = [m.device for m in measurements if m.device]
        dev = devices[-1] if devices else None
    peaks = lookup_device(dev) if dev else None
    ceilings = load_ceilings(dev) if dev else {}
    if peaks is None:
        if dev is None:
            peaks = PEAKS[EXAMPLE_DEVICE]
            notes.append(f"no GPU: roofs are the {peaks.name}'s datasheet peaks, as an example")
        else:
            notes.append(f"no datasheet peaks known for {dev!r}")
    return peaks, ceilings, dev, notes


def _publish_figure(fig, text: str, save: str | None) -> None:
    from cutile_lab.notebook.report import publish
    from cutile_lab.performance import figure_png
    png = figure_png(fig)
    publish({"image/png": base64.b64encode(png).decode("ascii"), "text/plain": text})
    if save:
        try:
            with open(save, "wb") as f:
                f.write(png)
        except OSError as e:        # the plot is shown: only the copy on disk is missing
            raise UsageError(f"--save {save}: cannot write it: {e.strerror}; the plot is shown "
                             "above, give a path in a folder that exists") from None


def _parse_plot_line(line: str) -> tuple[str, str | None]:
    parts = line.split()
    save = None
    cmd = ""
    i = 0
    while i < len(parts):
        if parts[i] in ("--save", "-o") and i + 1 < len(parts):
            save = parts[i + 1]
            i += 2
            continue
        if parts[i] in ("clear",):
            cmd = parts[i]
        else:
            raise UsageError(f"unknown argument {parts[i]!r}; use --save FILE.png or clear")
        i += 1
    return cmd, save


def roofline_of(measurements=None):
    """The roofline figure of ``measurements`` (default: everything measured so far)."""
    from cutile_lab.performance import MEASUREMENTS, roofline_figure
    ms = list(MEASUREMENTS if measurements is None else measurements)
    peaks, ceilings, dev, notes = _figure_context(ms)
    fig = roofline_figure(ms, peaks, ceilings)
    return fig, notes


def bandwidth_of(measurements=None):
    from cutile_lab.performance import COPY_BW, MEASUREMENTS, bandwidth_figure
    ms = list(MEASUREMENTS if measurements is None else measurements)
    peaks, ceilings, dev, notes = _figure_context(ms)
    series: dict[str, list] = {}
    compute_bound = []
    for m in ms:
        if not (m.bytes > 0 and m.seconds > 0):
            continue
        ridge = None
        if peaks is not None:
            try:
                ridge = peaks.ridge_point(m.precision)
            except ValueError:
                ridge = None
        if ridge is not None and m.intensity > ridge:
            compute_bound.append(m.name)     # its bandwidth says little: leave it out
            continue
        series.setdefault(f"{m.kernel} {m.precision}", []).append((m.bytes, m.seconds))
    if compute_bound:
        notes.append(f"left out (compute-bound, see %tile_roofline): {', '.join(compute_bound)}")
    return bandwidth_figure(series, peaks, ceilings.get(COPY_BW)), notes


def run_tile_roofline(shell, line: str = ""):
    from cutile_lab.performance import MEASUREMENTS
    cmd, save = _parse_plot_line(line)
    if cmd == "clear":
        n = len(MEASUREMENTS)
        MEASUREMENTS.clear()
        print(f"forgot {n} measurement{'s' * (n != 1)}")
        return None
    fig, notes = roofline_of()
    n = len(MEASUREMENTS)
    text = f"<roofline of {n} measurement{'s' * (n != 1)}>" + "".join(f"\nnote: {x}"
                                                                      for x in notes)
    if n == 0:
        text += "\nnote: nothing measured yet: time a launch with %tile_time"
    _publish_figure(fig, text, save)
    return None


def run_tile_bandwidth(shell, line: str = ""):
    from cutile_lab.performance import MEASUREMENTS
    _, save = _parse_plot_line(line)
    fig, notes = bandwidth_of()
    n = len(MEASUREMENTS)
    text = f"<bandwidth plot of {n} measurement{'s' * (n != 1)}>" + "".join(
        f"\nnote: {x}" for x in notes)
    _publish_figure(fig, text, save)
    return None