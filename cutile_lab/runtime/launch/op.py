"""The launch op: what ``kernel(*args)`` builds, and the one path every start of it takes.

Owns ``LaunchOp`` (the lazy launch; its result is the tuple of its arguments: ownership handed
back), ``ReusableStart`` and the public entry points ``launch_op`` / ``launch``. A launch into a
new tensor allocated when it is enqueued (``OutputLaunchOp``, ``launch_into``: the kernel
library's host functions) is a ``LaunchOp`` of ``output``.

Every start — the first, a repeated one, one of a new op of the very same argument objects, one
that joins the flight of the previous start on its stream — runs ``LaunchOp._enqueue``, in this
order:

1. the arguments resolved (DeviceOps enqueued first on the same stream, foreign arrays wrapped);
2. their ``ReusableStart``: the op's own when these are the objects of its last start (or of the
   kernel's latest start, ``launch_op``), else a new one keyed by their layout (``_start_of``);
3. the move checks (TL102) over its objects, on every start (a new record's while it is made);
4. the entry of the layout (``KernelInfo.entries``: a dict hit when it was seen, else
   ``plan.prepare_entry``: launch rules, consts, grid, the loaded kernel, the packing template)
   and the byte ranges the launch borrows (made with the start record, in the same pass);
5. those borrows published in the flight and checked against work in flight on other streams
   (TL104 / TL105), both under the ownership registry's lock;
6. the launch, through the backend's one call (``Backend.launch``: the simulator, or the GPU's
   ctypes ``driver.RawLaunch`` with a ``cuda.core.launch`` fallback); on the GPU, a start of a
   record whose launch the driver queued on this very stream before calls that launch, packed
   whole on the record (``ReusableStart.ready``), directly — after steps 3-5, like any other.

The caches (the entries per layout, the start record per argument objects, the packed launch in
it) are data this one path looks up; none is a path of its own. A start joins the previous
flight of its stream (``LaunchOp.start``) only in which flight it records itself in: it runs the
same path, with the lock held from the decision to the launch.
"""
from __future__ import annotations

import time
import weakref

from cutile_lab.errors import LaunchError
from cutile_lab.runtime import device as _device
from cutile_lab.runtime import ownership
from cutile_lab.runtime import sim as _sim
from cutile_lab.runtime.backend import GPU
from cutile_lab.runtime.callsite import user_site
from cutile_lab.runtime.launch import checks
from cutile_lab.runtime.launch.binding import (as_arg, bind_arguments, kernel_info,
                                               normalize_grid, plain_backend)
from cutile_lab.runtime.launch.checks import MEASURE, STATS, as_borrow, tensor_mut
from cutile_lab.runtime.launch.packing import launch_core
from cutile_lab.runtime.launch.plan import align, prepare_entry
from cutile_lab.runtime.ops import DeviceOp, ExecContext, Pending, _start, as_core_stream
from cutile_lab.runtime.ownership import OwnershipError
from cutile_lab.runtime.partition import Partition
from cutile_lab.runtime.tensor import Tensor

FRESH = "new output"          # the entry key's mark of a library call's new output


class ReusableStart:
    """What the start path computed for one set of argument objects, reused by every later
    start of the very same objects: the layout's entry, the objects whose moves each start
    checks, the byte ranges the launch borrows, the result, and the backend's packed launch.
    The checks that can change between two starts — moves (TL102) and in-flight work
    (TL103-TL105) — are not kept: they run on every start."""

    __slots__ = ("backend", "values", "key", "entry", "objects", "borrows", "result",
                 "raw", "scalars", "packed", "in_flight", "join_ctx", "ready", "__weakref__")

    def __init__(self, backend, values, key, entry, objects, result):
        self.backend = backend
        self.values = values          # parameter name -> argument (never mutated: shared)
        self.key = key                # the layout's key in ``KernelInfo.entries``
        self.entry = entry            # the LaunchEntry (None until prepared)
        # the tensors and partitions: kept alive by the work; their moves checked every start
        self.objects = objects
        self.borrows = None           # the in-flight record's entries: Borrow(lo, hi, mut, t, name)
        self.result = result          # what the start hands back
        self.raw = None               # gpu: the entry's RawLaunch, False where none is used
        self.scalars = ()             # gpu, raw: [(address, bytes)] of the scalar slots
        self.packed = None            # gpu, cuda.core: the packed arguments
        self.in_flight = None         # ([(param, tensor, mut)], ranges): TL104/TL105 checks
        self.join_ctx = None          # gpu: the ExecContext a join enqueues in (``_join``)
        # gpu, raw, no scalar slots: (lane, launch), this record's launch on the stream ``lane``
        # packed whole by ``gpu.launch`` after the driver queued it: a call with no arguments
        # that returns the driver's error code (0: queued); dropped when the driver refuses
        self.ready = None


class LaunchOp(DeviceOp):
    """A lazy kernel launch. Its result is the tuple of its arguments (ownership handed back)."""

    _entry = None                     # the LaunchEntry of the latest start
    _reuse = None                     # the ReusableStart of the latest start (plain arguments)
    _args = None                      # the positional arguments when they bind one to one
    _plain = True
    sim_result = None
    compiled = None
    grid = None
    diagnostics: list = []            # replaced, never mutated
    explicit_consts: dict = {}        # never mutated (``_consts`` copies it)
    # the parameter that gets a new tensor when the launch is enqueued (``OutputLaunchOp``): its
    # part of the entry key is its layout, not its address, and its pointer is packed per launch
    _fresh = None
    _consts_key = ()

    def __init__(self, kernel, args, kwargs, grid=None, where=None):
        self.kernel = kernel
        info = kernel.__dict__.get("_launch_info")            # ``kernel_info``, inlined
        if info is None or info.kdef is not kernel.definition:
            info = kernel_info(kernel)
        self.info = info
        self.label = info.name
        self._where = where if where is not None else user_site(2)
        if grid is not None:
            self.grid = normalize_grid(grid)
        if not kwargs and not info.consts and len(args) == len(info.names):
            self.bound = dict(zip(info.names, args))
            if grid is None:
                # the arguments bind one to one, in order: they are the result
                self._args = args if type(args) is tuple else tuple(args)
        else:
            self.bound, consts = self._bind(args, kwargs)
            if consts:
                self.explicit_consts = consts
                self._consts_key = tuple(sorted(consts.items()))
        self.backend, plain = plain_backend(self.bound.values())
        if not plain:
            self._plain = False
            self._args = None

    # --- binding arguments to parameters -------------------------------------------------------
    def _bind(self, args, kwargs):
        try:
            return bind_arguments(self.info, args, kwargs, self._where)
        except OwnershipError as e:
            self.diagnostics = list(e.diagnostics)
            raise

    # --- starting ------------------------------------------------------------------------------
    def start(self, stream=None):
        """Enqueue the launch on ``stream`` and return at once (see ``DeviceOp.start``).

        Starting the same launch again on the same stream, while its previous start is still
        in flight with no completion event recorded and no work in flight on other streams,
        joins the previous start's flight: same memory borrowed, same line, ordered after it.
        The start itself runs the one start path (``_enqueue``) like any other; the join is
        decided, and the launch enqueued, under the ownership registry's lock: no other thread
        can register a conflicting flight, or see the joined flight complete, in between."""
        s = self._reuse
        if s is not None and stream is not None and s.raw and s.entry is self._entry:
            pending = self._join(s, stream)
            if pending is not None:
                return pending
        pending = _start(self, stream, for_sync=False)
        s = self._reuse
        if s is not None and s.raw:
            pending.flight.reuse = s
        return pending

    def _join(self, s, stream):
        """The Pending of the lane's last flight with this launch enqueued in it, when the join
        applies (this thread's context current; nothing in flight on other streams, so no
        conflict is possible; the lane's last flight is a start of these objects from this
        line, enqueued, uncovered); else None (then an ordinary start runs)."""
        g = _device._context
        if g is None or getattr(_device._thread, "ctx", None) is not g:
            return None
        hit = g._keys.get(id(stream))
        if hit is not None and hit[0] is stream:
            lane, handle = hit[1], hit[2]
        else:
            lane, handle = g.stream_handles(as_core_stream(stream))
        lock = ownership._lock
        lock.acquire()
        try:
            flights = ownership._lanes.get(lane)
            if not flights or ownership._count != len(flights):
                return None
            last = flights[-1]
            if last.reuse is not s or last.event is not None or not last.ready or last.done \
                    or not (last._where is self._where or last._where == self._where):
                return None
            # the context of a join: kept on the start record and pointed at the lane's last
            # flight here, under the lock (it is used only until ``_enqueue`` returns)
            ctx = s.join_ctx
            if ctx is None or ctx.handle is not handle or ctx.gpu is not g:
                ctx = s.join_ctx = ExecContext(GPU, last.stream, last, None, g, handle)
            elif ctx.flight is not last:
                ctx.stream = last.stream
                ctx.flight = last
            self._enqueue(ctx)
            p = last.pending
            if p is None:
                p = last.pending = Pending(last)
            return p
        finally:
            lock.release()

    # --- the one start path --------------------------------------------------------------------
    def _enqueue(self, ctx: ExecContext):
        """Start the launch in ``ctx`` (see the module's docstring for the order of the steps)."""
        if self._plain:
            values = returned = self.bound
        else:
            values, returned = self._resolve(ctx)
        measure = MEASURE[0]
        if measure:
            t0 = time.perf_counter()
        s = self._reuse
        if s is None or s.values is not values or s.backend is not ctx.backend:
            s = self._start_of(values, returned, ctx)       # its moves checked on the way
        else:
            for o in s.objects:
                if o.moved is not None or (type(o) is Tensor and o.storage.moves is not None
                                           and o.dead_view() is not None):
                    checks.raise_moved(self.label, values, self.where)
        entry = s.entry
        if entry is None:
            entry = s.entry = prepare_entry(self, values, ctx, s.key)
        if self._entry is not entry:
            self._entry = entry
            self.diagnostics = entry.diagnostics
        flight = ctx.flight
        # a joined flight holds these borrows already, and ``_join`` holds the registry's lock
        # and found nothing in flight on other streams: nothing to publish or check
        joined = flight.reuse is s
        if not joined:
            # published before the check, both under the registry's lock: of two threads
            # racing for the same memory, the second to take the lock sees the first's borrows
            lock = ownership._lock
            lock.acquire()
            try:
                flight.entries.extend(s.borrows)
                if ownership._count > len(ownership._lanes.get(flight.lane, ())):
                    checks.check_in_flight(s, ctx, self._where)
            finally:
                lock.release()
        if measure:
            STATS["check_s"] += time.perf_counter() - t0
            STATS["checks"] += 1
        if entry.run:                         # an empty grid launches nothing
            # this record's launch packed whole for this very stream (set by ``gpu.launch``):
            # straight to the driver, after every check above; else the backend's one call
            ready = s.ready
            if ready is not None and ready[0] == flight.lane and ctx.handle is not None:
                if ready[1]():
                    self._raw_failed(entry, ctx, values, s)
            else:
                ctx.backend.launch(self, values, s, ctx)
        if not joined:
            flight.keep.extend(s.objects)
            flight.keep.append(s)             # shared with later starts of the same objects
        return s.result

    def _resolve(self, ctx: ExecContext):
        """(values for the kernel, values handed back) of bound arguments that are not all
        plain (DeviceOps enqueued first, foreign arrays wrapped)."""
        values: dict = {}
        returned: dict = {}
        for name, v in self.bound.items():
            if isinstance(v, DeviceOp):
                v = v._enqueue(ctx)
            returned[name] = v
            values[name] = as_arg(v)
        return values, returned

    def _start_of(self, values, returned, ctx) -> ReusableStart:
        """A new ReusableStart of ``values``, in one pass over the arguments: the entry cache's
        key of their layout (the entry itself when the layout was seen), their tensors and
        partitions — each checked for a move (TL102) or a dead view on the way — and the byte
        ranges the launch borrows (what ``checks.borrows_of`` makes from the entry: a borrowing
        partition borrows the tensor it lends; a partition is written, a tensor as
        ``checks.tensor_mut`` says)."""
        info = self.info
        muts = info.tensor_mut
        if muts is None:
            muts = tensor_mut(info)
        parts = []
        objects = []
        borrows = []
        for name in info.names:
            v = values.get(name)
            cls = type(v)
            if cls is Partition:
                t = v.tensor
                if v.moved is not None or t.moved is not None or (
                        t.storage.moves is not None and t.dead_view() is not None):
                    checks.raise_moved(self.label, values, self.where)
                if name == self._fresh:
                    # memory allocated for this launch aliases nothing: what the entry depends
                    # on is its layout (alignment included), not where it is
                    parts.append((FRESH, align(t.ptr), t.shape, t.dtype.name, v.tile_shape))
                else:
                    parts.append((t.key, v.tile_shape))
                objects.append(v)
                objects.append(t)
                if v._source is not None:
                    t = v._source
                lo, hi = t.range
                if hi > lo:
                    borrows.append(as_borrow((lo, hi, True, t, name)))
            elif cls is Tensor:
                if v.moved is not None or (v.storage.moves is not None
                                           and v.dead_view() is not None):
                    checks.raise_moved(self.label, values, self.where)
                parts.append(v.key)
                objects.append(v)
                lo, hi = v.range
                if hi > lo:
                    borrows.append(as_borrow((lo, hi, muts[name], v, name)))
            elif name in values:
                parts.append((cls, v) if name in info.consts else cls)
        key = (ctx.backend, tuple(parts), self._consts_key, self.grid)
        s = ReusableStart(ctx.backend, values, key, info.entries.get(key), objects,
                          self._args if self._args is not None else self._result_of(returned))
        s.borrows = borrows
        if returned is self.bound:
            self._reuse = s
            if self._args is not None:
                info.recent = weakref.ref(s)
        return s

    def _result_of(self, returned):
        """What a start hands back: the arguments, partitions included (ownership back)."""
        if self._args is not None:
            return self._args
        return tuple(returned[n] for n in self.info.names if n in returned)

    # --- the backends' side of a launch ---------------------------------------------------------
    def _raw_failed(self, entry, ctx, values, s):
        """The driver refused the ctypes launch (a thread without the context current, ...):
        launch through cuda.core, which raises the driver's error if it persists."""
        s.packed = self._run_gpu(values, entry, ctx, s.packed)
        entry.raw = False             # cuda.core launched it: use cuda.core from now on
        s.raw = False
        s.ready = None

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

    @classmethod
    def _of_start(cls, kernel, info, s: ReusableStart, args, where) -> "LaunchOp":
        """A new op of the very same plain positional arguments as the kernel's latest start
        ``s``: what ``__init__`` would bind and find is ``s``'s already (a kernel's latest start
        is recorded only for arguments that bind one to one, in order, with no consts)."""
        op = cls.__new__(cls)
        op.kernel = kernel
        op.info = info
        op.label = info.name
        op._where = where
        op.bound = s.values
        op._args = args if type(args) is tuple else tuple(args)
        op.backend = s.backend
        op._adopt(s)
        return op

    def _adopt(self, s: ReusableStart) -> None:
        """The ReusableStart of an earlier op of the very same arguments: this op's too."""
        self._reuse = s
        entry = s.entry
        if entry is not None:
            self._entry = entry
            self.diagnostics = entry.diagnostics
            if entry.plan is not None:
                self.compiled = entry.plan.compiled

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

def _recent_start(s: ReusableStart | None, args) -> ReusableStart | None:
    """``s`` (the kernel's latest start, while alive) if it was of the very same objects."""
    if s is not None:
        res = s.result
        if len(res) == len(args):
            for a, b in zip(args, res):
                if a is not b:
                    return None
            return s
    return None


def launch_op(kernel, args, kwargs) -> LaunchOp:
    """``kernel(*args, **kwargs)``: the lazy launch (``grid=`` is a launch option). A new op of
    the very same objects as the kernel's latest start shares that start's record (what a
    ``kernel(p, x, y).start(s)`` in a loop costs on the host)."""
    where = user_site(2)
    if not kwargs:
        info = kernel.__dict__.get("_launch_info")
        if info is not None and info.recent is not None and info.kdef is kernel.definition:
            s = info.recent()
            if s is not None and _recent_start(s, args) is not None:
                return LaunchOp._of_start(kernel, info, s, args, where)
    if kwargs:
        grid = None
        if "grid" in kwargs and "grid" not in kernel_info(kernel).names:
            kwargs = dict(kwargs)
            grid = kwargs.pop("grid")
        return LaunchOp(kernel, args, kwargs, grid, where)
    return LaunchOp(kernel, args, kwargs, None, where)


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
    return LaunchOp(kernel, args, kwargs, grid, user_site(2))


__all__ = ["LaunchOp", "ReusableStart", "launch_op", "launch", "set_kernel_adapter"]
