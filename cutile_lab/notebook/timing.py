"""The line magics that measure and show: ``%tile_time``, ``%tile_device``, ``%tile_roofline``,
``%tile_bandwidth``, and the helpers ``sweep``/``explore`` reuse (time a launch, count its work,
turn it into a ``Measurement`` and a benchmark row).

Owns: running a launch expression under the timer (CUDA events from the runtime, warm-up, median
of repeats, via ``performance.time_events``), recording it in ``performance.MEASUREMENTS``, and
displaying devices, rooflines and bandwidth plots. Launching is the runtime's; counting rules
are ``notebook.workcount``'s; figures are ``performance.roofline``'s.
"""
from __future__ import annotations

import base64
import math
import time
from dataclasses import dataclass
from typing import Any, Callable

from IPython.core.error import UsageError

from cutile_lab.errors import CutileLabError

EXAMPLE_DEVICE = "H100-SXM"


# --- the runtime, seen from here -------------------------------------------------------------

def gpu_status() -> tuple[bool, str]:
    """(a GPU is usable, why not)."""
    try:
        from cutile_lab.runtime.backend import backend
        from cutile_lab.runtime.device import require_gpu
    except ImportError:
        return False, "the runtime is not installed"
    try:
        if backend() == "sim":
            return False, "the simulator backend is selected (cl.set_backend('gpu') to time)"
        require_gpu("timing")
    except CutileLabError as e:
        return False, e.message.split(": ", 1)[-1]
    except Exception as e:      # never let a probe break a magic
        return False, str(e)
    return True, ""


def _is_op(x) -> bool:
    """A lazy launch (``DeviceOp``): something with ``sync()``."""
    return hasattr(x, "sync") and callable(getattr(x, "sync"))


def _is_graph(x) -> bool:
    """A captured CUDA graph (``cl.graph(...)``): timed by replaying it."""
    try:
        from cutile_lab.runtime.graph import Graph
    except Exception:        # the runtime cannot be imported: nothing is a graph
        return False
    return isinstance(x, Graph)


def _launch_in(x):
    """The launch whose work a measurement counts: the op itself, or the one launch a graph
    captured (None for a chain: its work is given with --flops/--bytes)."""
    if _is_graph(x):
        x = x.op
    return x if _is_op(x) and hasattr(x, "kernel") else None


def resolve_launch(value) -> Callable[[], Any]:
    """A callable that gives the op to run: ``%tile_time`` takes an op, a captured graph or a
    factory of ops.

    An op is enqueued again for every run (a launch over the same tensors), a graph is replayed
    once per run; a factory is called for every run (for launches that must be rebuilt each
    time)."""
    if _is_op(value) or _is_graph(value):
        return lambda: value
    if callable(value):
        return value
    raise UsageError(f"%tile_time needs a launch, e.g. `add(z.partition(128), x, y)`, a graph "
                     f"(`cl.graph(op)`), or a callable returning one; got a "
                     f"{type(value).__name__}")


@dataclass
class LaunchInfo:
    """What a launch is: kernel, arguments by parameter name, bound consts, grid."""

    kernel: Any
    args: dict
    consts: dict
    grid: tuple | None


def launch_info(op) -> LaunchInfo | None:
    """Read kernel, arguments and consts off a launch op (None when it is not a launch)."""
    kernel = getattr(op, "kernel", None)
    if kernel is None or not hasattr(kernel, "definition"):
        return None
    named = dict(getattr(op, "bound", None) or {})
    consts = dict(getattr(op, "explicit_consts", None) or {})
    grid = getattr(op, "grid", None)
    return LaunchInfo(kernel, named, consts, tuple(grid) if grid else None)


class _Gate:
    """Holds a stream at a ``cuStreamWaitValue32`` on a host-mapped flag until released, so
    that every timed run is enqueued before the GPU starts any of them: the events then time
    the kernels back to back, not the host's launch overhead between them (the "blocking
    kernel" of nvbench). A watchdog releases it after ``timeout`` seconds whatever happens."""

    _flag = None          # (host pointer, device pointer), allocated once per process

    def __init__(self, stream, timeout: float = 5.0):
        import ctypes
        import threading
        from cuda.bindings import driver
        from cutile_lab.runtime.memory import stream_handle
        if _Gate._flag is None:
            err, host = driver.cuMemHostAlloc(
                8, driver.CU_MEMHOSTALLOC_DEVICEMAP | driver.CU_MEMHOSTALLOC_PORTABLE)
            if int(err) != 0:
                raise RuntimeError(f"cuMemHostAlloc: {err}")
            err, dev = driver.cuMemHostGetDevicePointer(host, 0)
            if int(err) != 0:
                raise RuntimeError(f"cuMemHostGetDevicePointer: {err}")
            _Gate._flag = (int(host), int(dev))
        host, dev = _Gate._flag
        self._value = ctypes.c_uint32.from_address(host)
        self._value.value = 0
        (err,) = driver.cuStreamWaitValue32(
            driver.CUstream(stream_handle(stream)), driver.CUdeviceptr(dev), 1,
            driver.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ)
        if int(err) != 0:
            raise RuntimeError(f"cuStreamWaitValue32: {err}")
        self._timer = threading.Timer(timeout, self.release)
        self._timer.daemon = True
        self._timer.start()

    def release(self) -> None:
        self._value.value = 1
        self._timer.cancel()


class GpuTimer:
    """Runs launches back to back on one stream, each between two timing events.

    All runs belong to one in-flight record of the runtime (so repeated launches over the same
    tensors are one ordered chain, not conflicting borrows). Warm-up runs go first and are
    waited for (the first one may compile); the timed runs are enqueued behind a gate that
    opens once they are all queued, and their events are read at the end.
    """

    def __init__(self, label: str = "timing"):
        from cutile_lab.runtime import ownership
        from cutile_lab.runtime.device import gpu
        from cutile_lab.runtime.ops import ExecContext
        from cutile_lab.runtime.ownership import Flight
        self.g = gpu()
        self.stream = self.g.default_stream
        self.flight = Flight(label, None, "gpu", self.stream)
        ownership.register(self.flight)
        self.ctx = ExecContext("gpu", self.stream, self.flight, gpu=self.g)
        from cuda.core import EventOptions
        self._timing_events = EventOptions(timing_enabled=True)
        self.gate: _Gate | None = None

    def enqueue(self, op):
        if _is_graph(op):
            op.launch(1, self.stream)
            return op.result
        if _is_op(op):
            return op._enqueue(self.ctx)
        return op

    def close_gate(self) -> bool:
        try:
            self.gate = _Gate(self.stream)
        except Exception:        # no stream memory operations here: time without the gate
            self.gate = None
        return self.gate is not None

    def open_gate(self) -> None:
        if self.gate is not None:
            self.gate.release()
            self.gate = None

    def make_events(self):
        from cutile_lab.performance import EventPair
        box: dict = {}

        def start():
            box["start"] = self.stream.record(options=self._timing_events)

        def end():
            box["end"] = self.stream.record(options=self._timing_events)

        def elapsed_ms() -> float:
            self.open_gate()          # every run is queued once the first time is read
            box["end"].sync()
            return float(box["end"] - box["start"])
        return EventPair(start, end, elapsed_ms)

    def close(self) -> None:
        from cutile_lab.runtime import ownership
        from cutile_lab.runtime.ops import wait_flight
        self.open_gate()
        self.flight.event = self.stream.record()
        try:
            wait_flight(self.flight)
        finally:
            if not self.flight.done:
                ownership.release(self.flight)


def time_launch(make: Callable[[], Any], *, warmup: int = 3, repeats: int = 20,
                label: str = "timing", gate: bool = True):
    """Time a launch with CUDA events: ``warmup`` untimed runs (waited for), then ``repeats``
    timed ones enqueued behind a gate; each run enqueues ``make()`` (an op). Returns a
    ``performance.Timing`` (seconds)."""
    from cutile_lab.performance import time_events
    timer = GpuTimer(label)
    try:
        for _ in range(warmup):
            timer.enqueue(make())
        timer.stream.sync()
        if gate and repeats <= 200:      # more queued launches could fill the queue
            timer.close_gate()
        return time_events(lambda: timer.enqueue(make()), make_events=timer.make_events,
                           warmup=0, repeats=repeats)
    finally:
        timer.close()


def run_once_sim(make: Callable[[], Any]) -> tuple[Any, float]:
    """Run the launch once on the CPU simulator; (result, host seconds)."""
    t0 = time.perf_counter()
    op = make()
    if _is_graph(op):
        result = op.replay(1)
    else:
        result = op.sync() if _is_op(op) else op
    return result, time.perf_counter() - t0


# --- counting and rows ------------------------------------------------------------------------

def work_of(op, flops: float | None = None, bytes_: float | None = None):
    """(WorkCount or None, notes): the work of ``op``, with user overrides applied."""
    from cutile_lab.notebook.workcount import WorkCount, count_launch
    notes: list[str] = []
    info = launch_info(op) if op is not None else None
    count = None
    if info is not None:
        try:
            count = count_launch(info.kernel.definition, info.args, info.consts, info.grid)
        except Exception as e:     # a counting gap must never stop a measurement
            notes.append(f"could not derive flops/bytes from the kernel ({e}); "
                         "pass --flops and --bytes")
    traffic = getattr(op, "traffic", None) if info is None else None
    if count is None and traffic is not None:
        # a CUDA C++ launch (runtime.foreign): bytes from its signature, flops not derived
        read, written, dtype = traffic()
        count = WorkCount(0.0, read, written, read + written, 1, dtype, exact=False,
                          reasons=["CUDA C++: bytes from the signature (each tensor read or "
                                   "written once), flops not derived (pass --flops)"])
    if count is None:
        count = WorkCount(0.0, 0.0, 0.0, 0.0, 1, "f32", exact=False)
        if flops is None or bytes_ is None:
            notes.append("flops/bytes unknown: pass --flops N --bytes N for rates")
    elif not count.exact:
        notes.append("derived flops/bytes are approximate: " + "; ".join(count.reasons))
    if flops is not None:
        count.flops = float(flops)
    if bytes_ is not None:
        count.bytes_read, count.bytes_written = float(bytes_), 0.0
    return count, notes


def device_name() -> str | None:
    found, _ = gpu_status()
    if not found:
        return None
    try:
        from cutile_lab.runtime.device import device_info
        return device_info().name
    except Exception:
        return None


def measurement_row(m, peaks) -> dict:
    from cutile_lab.performance import percent_of_roof
    row = {"name": m.name, "kernel": m.kernel, "precision": m.precision,
           "median_us": m.seconds * 1e6, "min_us": min(m.samples) * 1e6 if m.samples else None,
           "gbps": m.bandwidth / 1e9 if m.bytes else None,
           "tflops": m.flop_rate / 1e12 if m.flops else None,
           "pct_of_roof": percent_of_roof(m, peaks), "flops": m.flops, "bytes": m.bytes,
           "backend": "gpu", "samples": len(m.samples)}
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}


def _label(info: LaunchInfo | None, given: str | None) -> tuple[str, str, dict]:
    if info is None:
        return given or "launch", given or "launch", {}
    k = info.kernel
    params = dict(info.consts)
    for p in k.definition.params:
        if p.role == "mut" and p.name in info.args:
            shape = getattr(info.args[p.name], "shape", None)
            tile = getattr(info.args[p.name], "tile_shape", None)
            if shape is not None:
                params.setdefault("shape", "x".join(map(str, shape)))
            if tile is not None:
                for d, t in zip(p.shape, tile):
                    if isinstance(d, str):
                        params.setdefault(d, int(t))
    consts = ",".join(f"{a}={b}" for a, b in params.items() if a != "shape")
    shape = params.get("shape")
    name = given or " ".join(x for x in (k.name, consts, shape) if x)
    return name, k.name, params


# --- %tile_time ---------------------------------------------------------------------------------

def run_tile_time(shell, opts, expr: str):
    import linecache
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
    from cutile_lab.notebook.tilecell import TileCellError
    show_error(get_ipython(), e, e.__traceback__)
    raise TileCellError(f"{what}: {e.message}") from None


def _tile_time(opts, make):
    from cutile_lab.notebook.report import benchmark_report_bundle, publish
    from cutile_lab.performance import MEASUREMENTS, Measurement, lookup_device
    found, reason = gpu_status()
    first = make()
    launch = _launch_in(first)
    info = launch_info(launch) if launch is not None else None
    backend = _op_backend(first)
    name, kname, params = _label(info, opts.name or (getattr(launch, "label", None)
                                                     if info is None else None))
    if _is_graph(first) and not opts.name:
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
    if _is_graph(first) and launch is None and (opts.flops is None or opts.bytes_ is None):
        notes = [n for n in notes if not n.startswith("flops/bytes unknown")]
        notes.append(f"a graph of {first.num_kernels} kernel(s) from a chain: its work is not "
                     "derived; pass --flops N --bytes N (per replay) for rates")

    # the first op is used for the first warm-up run
    ops = [first]

    def again():
        return ops.pop() if ops else make()
    timing = time_launch(again, warmup=max(opts.warmup, 1), repeats=max(opts.repeats, 1))
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


def _op_backend(op) -> str | None:
    b = getattr(op, "backend", None)
    if isinstance(b, str):
        return b
    try:
        from cutile_lab.runtime.backend import backend
        return backend()
    except Exception:
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
    if save:
        with open(save, "wb") as f:
            f.write(png)
    publish({"image/png": base64.b64encode(png).decode("ascii"), "text/plain": text})


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
