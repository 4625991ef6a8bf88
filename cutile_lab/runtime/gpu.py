"""The GPU backend's operations (``backend.GPU``): starting a chain on a stream, stream-ordered
memory for a chain being enqueued, the compiled, loaded and packed launch, waiting for a flight.

Owns what the runtime does differently on the GPU and nothing else; the pieces it uses are the
context and streams (``device``), the memory pool (``memory``), the in-flight record
(``ownership``), the launch plan and packing (``launch.plan``, ``launch.packing``) and the
ctypes driver calls (``driver``). It fills ``backend.GPU`` in when imported (the runtime package
imports it).
"""
from __future__ import annotations

import functools
import math

from cutile_lab.runtime import device as _device
from cutile_lab.runtime import ownership
from cutile_lab.runtime.backend import GPU
from cutile_lab.runtime.driver import _MASK64, RawLaunch
from cutile_lab.runtime.dtypes import scalar_value
from cutile_lab.runtime.launch.binding import pad3
from cutile_lab.runtime.launch.packing import pack_template, pointer_index, raw_launch
from cutile_lab.runtime.launch.plan import plan_for
from cutile_lab.runtime.memory import allocate
from cutile_lab.runtime.ops import _STREAM, ExecContext, Pending, as_core_stream
from cutile_lab.runtime.ownership import Flight
from cutile_lab.runtime.tensor import Tensor


def start(op, stream, for_sync: bool) -> Pending:
    """Register a flight on ``stream`` (the default stream for a sync, else a pool stream) and
    enqueue ``op``'s chain on it, with no host wait."""
    g = _device.gpu()                 # current in this thread (once per thread)
    if stream is not None:
        s = stream if type(stream) is _STREAM[0] else as_core_stream(stream)
    else:
        s = g.default_stream if for_sync else g.pool_stream()
    hit = g._keys.get(id(s))          # GpuContext.stream_handles, inlined
    if hit is not None and hit[0] is s:
        lane, handle = hit[1], hit[2]
    else:
        lane, handle = g.stream_handles(s)
    if g.alloc_epoch and g._ordered.get(lane) != g.alloc_epoch and s is not g.default_stream:
        g.order_after_allocations(s, lane)     # memory ``cl.empty`` made on the default stream
    flight = Flight(op.label, op._where, GPU, s, lane)
    ownership.register(flight)
    ctx = ExecContext(GPU, s, flight, None, g, handle)
    try:
        flight.result = op._enqueue(ctx)
    except BaseException:
        # whatever was enqueued runs to completion; its borrows end then
        s.sync()
        ownership.release(flight)
        raise
    flight.ready = True
    return Pending(flight)


def new_tensor(ctx, shape: tuple, dtype, where=None) -> Tensor:
    """From the memory pool, stream-ordered on the chain's stream (on the capture's allocation
    stream while a graph is captured: the graph reuses it on every replay)."""
    capture = ctx.capture
    alloc_stream = ctx.stream if capture is None else capture.alloc_stream
    storage = allocate(math.prod(shape) * dtype.itemsize, alloc_stream, ctx.gpu.device)
    if capture is not None:
        capture.prepared_allocation(storage)
    return Tensor.contiguous(storage, dtype, shape, where)


def prepare_launch(op, entry, values: dict, ctx) -> None:
    """A new launch entry: the compiled, loaded specialization, its launch configuration and
    the packing template of its arguments."""
    if not entry.run:
        return
    plan = plan_for(op.kernel, op.info, values, entry.consts, ctx.gpu.arch)
    entry.plan = plan
    entry.config = plan.config(pad3(entry.grid))
    entry.template, entry.scalars = pack_template(plan.params, values)
    if op._fresh is not None:          # a new output: its pointer is written per launch
        entry.fresh = (pointer_index(plan.params, values, op._fresh), op._fresh)


def launch(op, values: dict, start, ctx) -> None:
    """Launch the checked entry of ``start`` (a ``ReusableStart``): through its ``RawLaunch``
    (ctypes ``cuLaunchKernel``, the scalar slots of these arguments packed once per start)
    where one can be used, else ``cuda.core.launch`` (the packed arguments kept on ``start``).
    A launch with no scalar slots that the driver queued is left on ``start`` packed whole for
    its stream (``start.ready``), for the start path to call directly next time."""
    raw = start.raw
    if raw is None:                   # the first launch of these arguments
        entry = start.entry
        op.compiled = entry.plan.compiled
        raw = entry.raw
        if raw is None:
            raw = raw_launch(entry.plan, entry)
        if not raw or entry.foreign:
            raw = False
        elif entry.scalars or entry.fresh is not None:
            words = _scalar_words(entry, values) if entry.scalars else []
            if entry.fresh is not None:
                # a library call's new output: its pointer's slot, what ``scalar_slots`` gives
                # for (i, ptr), written directly (a new list: ``words`` may be the entry's)
                i, name = entry.fresh
                words = words + [(2 * i, values[name].tensor.ptr & _MASK64, 0)]
            start.scalars = words
        start.raw = raw
    handle = ctx.handle
    if raw and handle is not None:
        if start.scalars:
            err = raw.launch(handle, start.scalars, ctx.flight.lane)
        else:
            # the whole launch on this stream, packed: the next start of this record on it
            # calls the driver straight from the start path (``LaunchOp._enqueue``)
            lane = ctx.flight.lane
            if raw.ex is not None:    # cuLaunchKernelEx: 4 arguments for ctypes to convert
                go = functools.partial(raw.ex, raw.config(lane), raw.func, raw.ptrs, None)
            else:
                go = functools.partial(raw.launch_kernel, handle, raw.ptrs, None)
            err = go()
            start.ready = (lane, go) if not err else None
        if err:
            op._raw_failed(start.entry, ctx, values, start)
        return
    start.packed = op._run_gpu(values, start.entry, ctx, start.packed)


def _scalar_words(entry, values: dict) -> list:
    """``RawLaunch.scalar_slots`` of the entry's scalar arguments in ``values``, kept on the
    entry for the next launch of the same values — a library call's constants (``eps``, a row
    length) are the same on every call: the same objects, or equal values of the same type
    (zero excepted: 0.0 and -0.0 are equal with other bits; NaN is equal to nothing)."""
    args = [values[name] for _, name, _ in entry.scalars]
    kept = entry.words
    if kept is not None:
        for v, k in zip(args, kept[0]):
            if v is not k and (type(v) is not type(k) or not v == k or not v):
                break
        else:
            return kept[1]
    words = RawLaunch.scalar_slots([(i, scalar_value(v, dtype))
                                    for (i, _, dtype), v in zip(entry.scalars, args)])
    entry.words = (args, words)
    return words


def wait(flight) -> None:
    """Block until the flight's work is done (its event, or its stream where none was
    recorded after it), then release its borrows and those of earlier work on its stream."""
    if flight.event is not None:
        flight.event.sync()
    elif flight.stream is not None:
        flight.stream.sync()
    ownership.release_through(flight)


def grid_instances(tiles: int, kdef) -> int:
    """A persistent schedule: one instance per SM (times the kernel's occupancy hint; per
    cluster of SMs with ``num_ctas``: an instance of a two-CTA kernel takes two SMs)."""
    per_sm = int(kdef.options.get("occupancy") or 1)
    cluster = int(kdef.options.get("num_ctas") or 1)
    return max(1, min(tiles, _device.device_info().sm_count // cluster * per_sm))


GPU.implement(start=start, new_tensor=new_tensor, prepare_launch=prepare_launch, launch=launch,
              wait=wait, grid_instances=grid_instances)

__all__ = ["start", "new_tensor", "prepare_launch", "launch", "wait", "grid_instances"]
