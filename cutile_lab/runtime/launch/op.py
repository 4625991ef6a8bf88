"""The launch op: what ``kernel(*args)`` builds, and how it is started.

Owns ``LaunchOp`` (the lazy launch; its result is the tuple of its arguments: ownership handed
back), ``OutputLaunchOp`` (a launch into a new tensor allocated when it is enqueued: the kernel
library's host functions), ``ReusableStart`` and the public entry points ``launch_op`` /
``launch`` / ``launch_into``.

A start runs, in this order: the arguments resolved (DeviceOps enqueued first on the same
stream, foreign arrays wrapped), the move checks (TL102), the entry of the argument layout
(``plan.prepare_entry`` on a miss: launch rules, consts, grid, the loaded kernel, the packing
template), the in-flight borrows published and checked under the registry's lock (TL104 /
TL105), then the launch (``driver.RawLaunch``, ``packing.launch_core`` or the simulator).

A start of an op whose plain arguments (tensors, partitions, numbers) were started before — the
same op again, or a new op of the very same objects — reuses what its first start computed
(``ReusableStart``: the entry, the packed launch, the in-flight record, the result): all of it
depends only on the entry's key, fixed for those objects. The checks that can change between
two starts still run every time: moves (TL102) and in-flight work (TL104/TL105). ``start`` on a
stream whose last flight is this very launch joins that flight (``_join``); the three ways in
(``_join``, ``_enqueue`` of a reused start, ``_enqueue_first``) run the same checks.
"""
from __future__ import annotations

import time
import weakref
from types import SimpleNamespace

from cutile_lab.diagnostics import Diagnostic
from cutile_lab.errors import LaunchError
from cutile_lab.runtime import device as _device
from cutile_lab.runtime import ownership
from cutile_lab.runtime import sim as _sim
from cutile_lab.runtime.callsite import user_site
from cutile_lab.runtime.creation import new_tensor
from cutile_lab.runtime.dtypes import as_dtype
from cutile_lab.runtime.launch import checks
from cutile_lab.runtime.launch.binding import (SCALARS, KernelInfo, as_arg, backend_of,
                                                   bind_arguments, kernel_info, normalize_grid)
from cutile_lab.runtime.launch.checks import MEASURE, STATS, borrows_of
from cutile_lab.runtime.launch.packing import launch_core
from cutile_lab.runtime.launch.plan import align, prepare_entry
from cutile_lab.runtime.ops import DeviceOp, ExecContext, Pending, _start, as_core_stream
from cutile_lab.runtime.ownership import OwnershipError
from cutile_lab.runtime.partition import Partition, _tile_shape
from cutile_lab.runtime.tensor import Tensor, normalize_shape

FRESH = "new output"          # the entry key's mark of a library call's new output


class ReusableStart:
    """What re-starting the same LaunchOp (the same argument objects) reuses: everything but the
    checks that can change between two starts — moves (TL102) and in-flight work (TL103-TL105),
    which run on every start. The launch-level rules depend only on what the entry's key holds
    (the arguments' layouts, the consts, the grid), fixed for the op's argument objects."""

    __slots__ = ("backend", "entry", "movers", "borrow_entries", "keep", "result", "bound", "raw",
                 "scalars", "args", "borrows", "__weakref__")

    def __init__(self, backend, entry, movers, borrow_entries, keep, result, bound):
        self.backend = backend
        self.entry = entry
        self.movers = movers          # objects whose ``moved`` must still be None
        self.borrow_entries = borrow_entries      # the in-flight record's entries: (lo, hi, mut, t, name)
        self.keep = keep              # objects the work keeps alive
        self.result = result          # the tuple handed back
        self.bound = bound            # parameter name -> argument (never mutated: shared)
        self.raw = None               # the entry's _RawLaunch where one can be used
        self.scalars = ()             # raw: [(address, bytes)] of this op's scalar values
        self.args = None              # cuda.core: the packed arguments
        self.borrows = None           # ([(param, tensor, mut)], their byte ranges): TL104/105




class LaunchOp(DeviceOp):
    """A lazy kernel launch. Its result is the tuple of its arguments (ownership handed back)."""

    _result = None                    # the tuple handed back (plain arguments)
    _entry = None                     # the LaunchEntry of the latest start
    _reuse = None                     # a ReusableStart once started (plain arguments only)
    _args = None                      # the positional arguments when they bind one to one
    sim_result = None
    compiled = None
    grid = None
    explicit_consts: dict = {}        # never mutated (``_consts`` copies it)
    # the parameter that gets a new tensor when the launch is enqueued (``OutputLaunchOp``): its
    # part of the entry key is its layout, not its address, and its pointer is packed per launch
    _fresh = None
    _consts_key = ()

    @classmethod
    def _from_earlier_start(cls, kernel, info, f, args, where) -> "LaunchOp":
        """A new op of the very same plain positional arguments as the start that built ``f``:
        everything ``__init__`` would compute is ``f``'s already (what a repeated
        ``kernel(p, x, y).start(s)`` in a loop costs on the host)."""
        op = cls.__new__(cls)
        op.kernel = kernel
        op.info = info
        op.label = kernel.name
        op.backend = f.backend
        op._where = where
        op.bound = f.bound
        op._plain = True
        op._args = args
        op._reuse = f
        op._adopt(f)
        return op

    def __init__(self, kernel, args, kwargs, grid=None):
        super().__init__()
        self.kernel = kernel
        self.info = info = kernel_info(kernel)
        self.label = kernel.name
        self.grid = normalize_grid(grid) if grid is not None else None
        self.bound, self.explicit_consts = bound, consts = self._bind(args, kwargs)
        self._consts_key = tuple(sorted(consts.items())) if consts else ()
        plain = True
        backend = None
        for v in bound.values():
            t = type(v)
            if t is Tensor:
                if backend is None:
                    backend = v.storage.backend
            elif t is Partition:
                if backend is None:
                    backend = v.tensor.storage.backend
            elif not isinstance(v, SCALARS):
                plain = False
                break
        self._plain = plain
        self.backend = backend if plain else backend_of(bound.values())
        self.diagnostics: list[Diagnostic] = []
        if plain and grid is None and not kwargs and not info.consts \
                and len(args) == len(info.names):
            # the arguments bind one to one, in order: they are the result (and a later op of
            # the very same objects is built by ``_from_earlier_start`` from this one's first start)
            self._args = tuple(args)

    # --- starting ------------------------------------------------------------------------------
    def start(self, stream=None):
        """Enqueue the launch on ``stream`` and return at once (see ``DeviceOp.start``).

        Starting the same launch again on the same stream, while its previous start is still
        in flight with no completion event recorded and no work in flight on other streams,
        joins the previous start's flight: same memory borrowed, same line, ordered after it.
        Only the checks that can change run (moves); the launch goes straight to the driver.

        The join is decided and the launch enqueued under the ownership registry's lock: no
        other thread can register a conflicting flight, or see the joined flight complete,
        between the check and the launch."""
        f = self._reuse
        g = _device._context
        if f is not None and stream is not None and f.raw is not None \
                and self._entry is f.entry and g is not None \
                and getattr(_device._thread, "ctx", None) is g:
            hit = g._keys.get(id(stream))
            if hit is not None and hit[0] is stream:
                lane, handle = hit[1], hit[2]
            else:
                lane, handle = g.stream_handles(as_core_stream(stream))
            pending = self._join(f, lane, handle)
            if pending is not None:
                return pending
        pending = _start(self, stream, for_sync=False)
        flight = pending.flight
        if self._reuse is not None and flight.backend == "gpu":
            flight.reuse = self._reuse
        return pending

    def _join(self, f, lane, handle):
        """The Pending of the lane's last flight, with this launch enqueued after it, when the
        join applies (nothing in flight elsewhere, so no conflict is possible; the lane's last
        flight is this launch from this line, enqueued, uncovered; nothing moved); else None."""
        measure = MEASURE[0]
        if measure:
            t0 = time.perf_counter()
        with ownership._lock:
            flights = ownership._lanes.get(lane)
            if not flights or ownership._count != len(flights):
                return None
            last = flights[-1]
            if last.reuse is not f or last.event is not None or not last.ready or last.done \
                    or not (last._where is self._where or last._where == self._where):
                return None
            for o in f.movers:
                if o.moved is not None or (type(o) is Tensor and o.storage.moves is not None
                                           and o.dead_view() is not None):
                    return None
            if measure:
                STATS["check_s"] += time.perf_counter() - t0
                STATS["checks"] += 1
            raw = f.raw
            if f.scalars:
                err = raw.launch(handle, f.scalars)
            elif raw.ex is not None:
                cfg = raw.configs.get(lane)
                err = raw.ex(cfg if cfg is not None else raw.config(lane), raw.func, raw.ptrs,
                             None)
            else:
                err = raw.launch_kernel(handle, raw.ptrs, None)
            if err:
                return None           # not enqueued: the ordinary start reports the error
            p = last.pending
            if p is None:
                p = last.pending = Pending(last)
            return p

    # --- binding arguments to parameters -------------------------------------------------------
    def _bind(self, args, kwargs):
        try:
            return bind_arguments(self.info, args, kwargs, self._where)
        except OwnershipError as e:
            self.diagnostics = list(e.diagnostics)
            raise

    # --- running -------------------------------------------------------------------------------
    def _resolve(self, ctx: ExecContext):
        """(values for the kernel, values handed back) of the bound arguments."""
        if self._plain:
            return self.bound, self.bound
        values: dict = {}
        returned: dict = {}
        for name, v in self.bound.items():
            if isinstance(v, DeviceOp):
                v = v._enqueue(ctx)
            returned[name] = v
            values[name] = as_arg(v)
        return values, returned

    def _enqueue(self, ctx: ExecContext):
        f = self._reuse
        if f is None or f.backend != ctx.backend:
            return self._enqueue_first(ctx)
        if self._entry is not f.entry:
            self._adopt(f)
        # the same argument objects as a start that passed every check: only what can change
        # between two starts is checked again
        measure = MEASURE[0]
        if measure:
            t0 = time.perf_counter()
        for o in f.movers:
            if o.moved is not None or (type(o) is Tensor and o.storage.moves is not None and
                                       o.dead_view() is not None):
                checks.raise_moved(self.label, self.bound, self.where)
        flight = ctx.flight
        # published before the check, both under the registry's lock: of two threads racing
        # for the same memory, the second to take the lock sees the first's borrows
        with ownership._lock:
            flight.entries.extend(f.borrow_entries)
            # ownership.others_in_flight, inlined: work in flight on another stream?
            if ownership._count > len(ownership._lanes.get(flight.lane, ())):
                checks.check_in_flight(self.bound, f.entry, ctx, self._where, self._reuse)
        if measure:
            STATS["check_s"] += time.perf_counter() - t0
            STATS["checks"] += 1
        entry = f.entry
        if entry.run:
            raw = f.raw
            handle = ctx.handle
            if raw is not None and handle is not None:
                err = raw.launch_kernel(handle, raw.ptrs, None) if not f.scalars else \
                    raw.launch(handle, f.scalars)
                if err:
                    self._raw_failed(entry, ctx, f.args)
            elif f.args is not None:  # cuda.core, with the arguments packed by the first start
                self._run_gpu(self.bound, entry, ctx, f.args)
            else:
                ctx.backend.launch(self, self.bound, entry, ctx)
        keep = flight.keep
        keep.extend(f.keep)
        keep.append(f)
        return f.result

    def _adopt(self, f) -> None:
        """A ReusableStart shared from an earlier op: what a first start sets on the op."""
        entry = f.entry
        self._entry = entry
        self.diagnostics = entry.diagnostics
        self._result = f.result
        if entry.plan is not None:
            self.compiled = entry.plan.compiled

    def _enqueue_first(self, ctx: ExecContext):
        """A start with arguments not seen by this op before: the cache key of their layout,
        the entry (checked, specialized, packed) for it, then the launch."""
        info = self.info
        values, returned = self._resolve(ctx)
        measure = MEASURE[0]
        if measure:
            t0 = time.perf_counter()
        key, movers = self._layout_key(values, ctx)
        entry = info.entries.get(key)
        if entry is None:
            entry = prepare_entry(self, values, ctx, key)
        self._entry = entry
        self.diagnostics = entry.diagnostics
        borrow_entries, keep = borrows_of(entry, values)
        # in-flight work of other chains (streams): TL104 / TL105. This launch's borrows are
        # published before the check, both under the registry's lock: of two threads racing
        # for the same memory, the second to take the lock sees the first's borrows
        flight = ctx.flight
        with ownership._lock:
            flight.entries.extend(borrow_entries)
            if ownership.others_in_flight(flight):
                checks.check_in_flight(values, entry, ctx, self._where, self._reuse)
        if measure:
            STATS["check_s"] += time.perf_counter() - t0
            STATS["checks"] += 1
        plain = returned is self.bound
        # run (an empty grid launches nothing)
        args = raw = None
        scalars = ()
        if entry.run:
            raw, scalars, args = ctx.backend.launch(self, values, entry, ctx)
        result = self._args
        if result is None:
            result = tuple(returned[n] for n in info.names if n in returned)
        f = None
        if plain:
            self._result = result
            f = ReusableStart(ctx.backend, entry, tuple(movers), borrow_entries, keep, result,
                               self.bound)
            if entry.run:
                f.raw = raw
                f.scalars = scalars
                f.args = args
            self._reuse = f
            if self._args is not None:
                info.recent = weakref.ref(f)
        flight.keep.extend(keep)
        if f is not None:
            flight.keep.append(f)         # shared with later ops of the same arguments
        return result

    def _layout_key(self, values, ctx) -> tuple[tuple, list]:
        """(the entry cache's key of the arguments' layout, the objects whose moves a restart
        checks again); raises on a moved argument (always checked: a tensor can be moved after
        an identical launch was checked)."""
        info = self.info
        parts = []
        movers = []
        for name in info.names:
            v = values.get(name)
            cls = type(v)
            if cls is Partition:
                t = v.tensor
                if v.moved is not None or t.moved is not None:
                    checks.raise_moved(self.label, values, self.where)
                if name == self._fresh:
                    # memory allocated for this launch aliases nothing: what the entry depends
                    # on is its layout (alignment included), not where it is
                    parts.append((FRESH, align(t.ptr), t.shape, t.dtype.name, v.tile_shape))
                else:
                    parts.append((t.key, v.tile_shape))
                movers.append(v)
                movers.append(t)
            elif cls is Tensor:
                if v.moved is not None or (v.storage.moves is not None and
                                           v.dead_view() is not None):
                    checks.raise_moved(self.label, values, self.where)
                parts.append(v.key)
                movers.append(v)
            elif name in values:
                parts.append((cls, v) if name in info.consts else cls)
        return (ctx.backend, tuple(parts), self._consts_key, self.grid), movers

    def _raw_failed(self, entry, ctx, args, values=None):
        """The driver refused the ctypes launch (a thread without the context current, ...):
        launch through cuda.core, which raises the driver's error if it persists."""
        args = self._run_gpu(values if values is not None else self.bound, entry, ctx, args)
        entry.raw = False             # cuda.core launched it: use cuda.core from now on
        f = self._reuse
        if f is not None:
            f.raw = None
        return args

    def _run_gpu(self, values, entry, ctx, args=None):
        """Launch through ``cuda.core.launch``; returns the packed arguments (for reuse)."""
        self.compiled = entry.plan.compiled
        return launch_core(values, entry, ctx, args)

    def _run_sim(self, values, consts, grid) -> None:
        info = self.info
        if not info.checked:
            from cutile_lab.checking import check_kernel
            from cutile_lab.errors import KernelDiagnosticsError
            diags = check_kernel(info.kdef, self.kernel.globals)
            if any(d.is_error for d in diags):
                raise KernelDiagnosticsError(diags)
            info.checked = True
        self.sim_result = _sim.run_simulated(self.kernel, info, values, consts, grid)

    def __repr__(self) -> str:
        from cutile_lab.runtime.callsite import describe
        args = ", ".join(f"{k}={_short(v)}" for k, v in self.bound.items())
        return f"<DeviceOp launch {self.label}({args}) (lazy) from {describe(self.where)}>"




def _short(v) -> str:
    if isinstance(v, (Tensor, Partition)):
        return repr(v)
    if isinstance(v, DeviceOp):
        return f"<{v.label}>"
    return type(v).__name__ if hasattr(v, "shape") else repr(v)




# --- the public entry points ------------------------------------------------------------------

# (shape, dtype, tile) as a library call gives them -> normalized (shape, DType, tile shape)
_OUTPUTS: dict = {}


class OutputLaunchOp(LaunchOp):
    """A launch whose first parameter gets a new tensor, allocated when the launch is enqueued
    (stream-ordered on the launch's stream) and moved into a partition of ``tile`` tiles; the
    op's result is that tensor. What the kernel library's host functions build: no allocation
    before the op, no partition object of the caller's, no ``.then`` to take the tensor back."""

    def __init__(self, kernel, shape, dtype, tile, args, kwargs):
        key = (shape, dtype, tile)
        try:
            out = _OUTPUTS.get(key)
        except TypeError:             # a list for a shape: normalized every time
            out = key = None
        if out is None:
            shape = normalize_shape(shape)
            out = (shape, as_dtype(dtype),
                   _tile_shape(SimpleNamespace(ndim=len(shape), shape=shape), tile))
            if key is not None:
                if len(_OUTPUTS) > 1024:
                    _OUTPUTS.clear()
                _OUTPUTS[key] = out
        self._out = out
        LaunchOp.__init__(self, kernel, (None,) + tuple(args), kwargs)
        self._fresh = self.info.names[0]

    def _resolve(self, ctx: ExecContext):
        shape, dtype, tile = self._out
        out = self.info.names[0]
        values: dict = {}
        for name, v in self.bound.items():
            if name == out:
                t = new_tensor(ctx, shape, dtype, self._where)
                v = Partition(t, tile, "move", origin=self._where)
            elif isinstance(v, DeviceOp):
                v = as_arg(v._enqueue(ctx))
            elif type(v) is not Tensor and not isinstance(v, SCALARS):
                v = as_arg(v)
            values[name] = v
        return values, values

    def _enqueue(self, ctx: ExecContext):
        return self._enqueue_first(ctx)[0].tensor


def launch_into(kernel, shape, dtype, tile, *args, **kwargs) -> LaunchOp:
    """``kernel(new.partition(tile), *args, **kwargs)`` with ``new`` a tensor of ``shape`` and
    ``dtype`` allocated when the launch runs; the op's result is that tensor (``.sync()`` it)."""
    return OutputLaunchOp(kernel, shape, dtype, tile, args, kwargs)


def _recent_start(info: KernelInfo, args) -> ReusableStart | None:
    """The ReusableStart of the kernel's latest start if it was of the very same argument objects."""
    r = info.recent
    f = r() if r is not None else None
    if f is not None:
        res = f.result
        if len(res) == len(args):
            for a, b in zip(args, res):
                if a is not b:
                    return None
            return f
    return None


def launch_op(kernel, args, kwargs) -> LaunchOp:
    """``kernel(*args, **kwargs)``: the lazy launch (``grid=`` is a launch option)."""
    if not kwargs:
        info = kernel.__dict__.get("_launch_info")
        if info is not None and info.kdef is kernel.definition:
            f = _recent_start(info, args)
            if f is not None:
                return LaunchOp._from_earlier_start(kernel, info, f, args, user_site(2))
    grid = None
    if "grid" in kwargs and "grid" not in kernel_info(kernel).names:
        kwargs = dict(kwargs)
        grid = kwargs.pop("grid")
    return LaunchOp(kernel, args, kwargs, grid)


# How an object that is not a kernel yet (a ``@ct.kernel`` function) becomes one: set by
# ``cutile_lab.kernel`` when it is imported (it sits above the runtime in the pipeline, so the
# runtime never imports it: the dependency is inverted through this one hook).
_KERNEL_ADAPTER: list = [None]


def set_kernel_adapter(adapt) -> None:
    """``adapt(obj) -> kernel``: how ``launch`` turns a cuTile kernel object into a kernel
    (one with a ``definition``); it raises the lab's error for what cannot be launched."""
    _KERNEL_ADAPTER[0] = adapt


def launch(kernel, *args, grid=None, **kwargs) -> LaunchOp:
    """``cl.launch(kernel, *args, grid=None)``: the same lazy launch as ``kernel(*args)``;
    ``kernel`` may also be a cuTile kernel object (``@ct.kernel``, ``ct.kernel(fn)``)."""
    if not hasattr(kernel, "definition"):
        adapt = _KERNEL_ADAPTER[0]
        if adapt is None:
            raise LaunchError(f"cannot launch {type(kernel).__name__}: not a kernel",
                              help="launch a @cl.kernel function (import cutile_lab)")
        kernel = adapt(kernel)
    if grid is None:
        return launch_op(kernel, args, kwargs)
    return LaunchOp(kernel, args, kwargs, grid)


__all__ = ["LaunchOp", "OutputLaunchOp", "ReusableStart", "launch_op", "launch", "launch_into",
           "set_kernel_adapter"]
