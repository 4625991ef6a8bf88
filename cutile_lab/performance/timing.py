"""Timing launches on the GPU and turning them into measurements: the stage after launch.

Owns: whether a GPU can time at all (``gpu_status``), what a launch is (``launch_info``: kernel,
arguments, consts, grid, read off a lazy op), the timing gate and timer (``GpuTimer``: runs
enqueued back to back on one stream behind a ``cuStreamWaitValue32`` gate, between CUDA events),
``time_launch`` (warm-up, then the median of repeats via ``performance.time_events``), the
simulator's one untimed run, the work of a launch with the user's overrides (``work_of``, from
``counting.count_launch``) and the row a measurement becomes. Launching is the runtime's; the
magics that show these (``%tile_time`` and friends) are ``notebook.measure_view``'s.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable

from cutile_lab.errors import CutileLabError
from cutile_lab.performance.counting import WorkCount, count_launch


# --- the runtime, seen from here -------------------------------------------------------------

def gpu_status() -> tuple[bool, str]:
    """(a GPU is usable, why not)."""
    from cutile_lab.runtime.backend import backend
    from cutile_lab.runtime.device import require_gpu
    try:
        if backend() == "sim":
            return False, "the simulator backend is selected (cl.set_backend('gpu') to time)"
        require_gpu("timing")
    except CutileLabError as e:
        return False, e.message.split(": ", 1)[-1]
    except Exception as e:      # never let a probe break a magic
        return False, str(e)
    return True, ""


def is_op(x) -> bool:
    """A lazy launch (``DeviceOp``): something with ``sync()``."""
    return hasattr(x, "sync") and callable(getattr(x, "sync"))


def is_graph(x) -> bool:
    """A captured CUDA graph (``cl.graph(...)``): timed by replaying it."""
    try:
        from cutile_lab.runtime.graph import Graph
    except Exception:        # the runtime cannot be imported: nothing is a graph
        return False
    return isinstance(x, Graph)


def launch_in(x):
    """The launch whose work a measurement counts: the op itself, or the one launch a graph
    captured (None for a chain: its work is given with --flops/--bytes)."""
    if is_graph(x):
        x = x.op
    return x if is_op(x) and hasattr(x, "kernel") else None

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


class _StreamGate:
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
        if _StreamGate._flag is None:
            err, host = driver.cuMemHostAlloc(
                8, driver.CU_MEMHOSTALLOC_DEVICEMAP | driver.CU_MEMHOSTALLOC_PORTABLE)
            if int(err) != 0:
                raise RuntimeError(f"cuMemHostAlloc: {err}")
            err, dev = driver.cuMemHostGetDevicePointer(host, 0)
            if int(err) != 0:
                raise RuntimeError(f"cuMemHostGetDevicePointer: {err}")
            _StreamGate._flag = (int(host), int(dev))
        host, dev = _StreamGate._flag
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
        self.gate: _StreamGate | None = None

    def enqueue(self, op):
        if is_graph(op):
            op.launch(1, self.stream)
            return op.result
        if is_op(op):
            return op._enqueue(self.ctx)
        return op

    def close_gate(self) -> bool:
        try:
            self.gate = _StreamGate(self.stream)
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
    if is_graph(op):
        result = op.replay(1)
    else:
        result = op.sync() if is_op(op) else op
    return result, time.perf_counter() - t0


# --- counting and rows ------------------------------------------------------------------------

def work_of(op, flops: float | None = None, bytes_: float | None = None):
    """(WorkCount or None, notes): the work of ``op``, with user overrides applied."""
    notes: list[str] = []
    info = launch_info(op) if op is not None else None
    count = None
    if info is not None:
        try:
            count = count_launch(info.kernel.definition, info.args, info.consts, info.grid,
                                 getattr(info.kernel, "globals", None))
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


def launch_label(info: LaunchInfo | None, given: str | None) -> tuple[str, str, dict]:
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


def op_backend(op) -> str | None:
    b = getattr(op, "backend", None)
    if isinstance(b, str):
        return b
    try:
        from cutile_lab.runtime.backend import backend
        return backend()
    except Exception:
        return None
