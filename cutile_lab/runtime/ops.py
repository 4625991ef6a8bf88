"""Lazy device operations: build now, run later on a stream, compose with ``.then()``.

Owns ``DeviceOp`` (the lazy value: ``then``, ``sync``, ``sync_on``, ``start``, ``await``,
``partition``), ``Pending`` (started work: ``done``, ``wait``, ``await``), ``ExecContext`` (the
stream and in-flight record a chain is enqueued into), ``zip`` / ``value``, streams
(``stream()``) and ``synchronize()``. Creation ops live in ``creation``, launches in ``launch``,
graph capture in ``graph``.

How a chain runs: ``start()`` picks a stream (the runtime's default stream for ``sync()``, a pool
stream for ``start()`` / ``await``), registers a ``Flight`` (so that the chain's borrows are
visible to every other check while it runs) and enqueues every op of the chain on that one stream
(in order: nothing inside a chain needs a host wait). No completion event is recorded then: the
ownership registry records one when somebody asks (see ``ownership``). On the
simulator the work runs when it is started, and its borrows are held until the host waits for it
(``sync``, ``wait``, ``await`` or ``done()``), like work in flight on a GPU.
"""
from __future__ import annotations

import asyncio
import inspect

from cutile_lab.errors import LaunchError
from cutile_lab.language.frontend import KernelDef
from cutile_lab.runtime import device as _device
from cutile_lab.runtime import driver
from cutile_lab.runtime import ownership
from cutile_lab.runtime.backend import _OBJECTS as _BACKENDS
from cutile_lab.runtime.backend import backend as current_backend
from cutile_lab.runtime.callsite import as_span, describe, user_call_site, user_site
from cutile_lab.runtime.ownership import Flight


# ``graph(op)`` of ``runtime.graph``, set when that module is imported (the runtime package
# imports it): graph capture is built on DeviceOps, so this module cannot import it back.
GRAPH_CAPTURE: list = [None]


class ExecContext:
    """Where a chain is being enqueued: backend, stream, and its in-flight record."""

    __slots__ = ("backend", "stream", "flight", "capture", "gpu", "handle")

    def __init__(self, backend, stream, flight: Flight, capture=None, gpu=None,
                 handle=None):
        self.backend = _BACKENDS[backend]     # the Backend object (a name is accepted)
        self.stream = stream        # cuda.core Stream (gpu), None (sim)
        self.flight = flight
        self.capture = capture      # a graph.Capture while a graph is being captured
        self.gpu = gpu              # the GpuContext
        # the stream's CUstream as a ctypes.c_void_p: set where a launch may go straight to the
        # driver (a plain stream, not a capture)
        self.handle = handle


class DeviceOp:
    """A lazy piece of device work whose result is a value (a tensor, a tuple of arguments...).

    Nothing runs until ``sync()``, ``sync_on(stream)``, ``start()`` or ``await``.

    The protocol a new kind of op implements (a launch of a foreign kernel, a library call):

    - ``__init__`` calls ``super().__init__(backend)``: ``"gpu"``, ``"sim"`` or None (the
      current backend); the user's line is recorded then (``self.where`` names it in errors).
      Set ``label`` (shown in messages about the op's work in flight).
    - ``_enqueue(ctx)`` enqueues the work and returns the op's result. It runs in the thread
      that started the chain, with the device's context current, and must not wait on the host.
      ``ctx.backend`` is ``backend.GPU`` or ``backend.SIM`` (equal to ``"gpu"`` / ``"sim"``); ``ctx.stream`` the cuda.core ``Stream`` (or
      ``GraphBuilder`` while ``ctx.capture`` is set) to enqueue on, ``ctx.handle`` its
      ``CUstream`` as a ``ctypes.c_void_p`` (None while capturing); ``ctx.flight`` the
      in-flight record. Before enqueueing, borrow the memory the work reads and writes with
      ``ownership.claim(ctx.flight, [(param, tensor, mut), ...], self.where, ctx.flight.lane)``
      (it raises ``OwnershipError`` on a conflict with other work in flight) and refuse moved
      tensors (``tensor.moved is not None``: ``ownership.raise_use_after_move``). Arguments that
      are DeviceOps are enqueued first with ``arg._enqueue(ctx)`` (same stream, in order).
    - A result a later op consumes is handed back as the value ``_enqueue`` returns; ``then``,
      ``zip``, ``partition``, graphs and ``await`` then work with the op unchanged.
    """

    label = "op"

    def __init__(self, backend: str | None = None, where=None):
        self.backend = backend
        # the user's line that built the op: a ``user_site`` now, a Span when a message needs it
        self._where = where if where is not None else user_site(2)

    @property
    def where(self):
        w = self._where
        if isinstance(w, tuple):
            w = self._where = as_span(w)
        return w

    # --- to be provided by subclasses ----------------------------------------------------------
    def _enqueue(self, ctx: ExecContext):
        raise NotImplementedError

    def _backend(self) -> str:
        return self.backend or current_backend()

    # --- composition ---------------------------------------------------------------------------
    def then(self, fn) -> "DeviceOp":
        """``fn(result)`` (or ``fn(*result)`` for a tuple and a function of several parameters)
        runs after this op, on the same stream; it returns a DeviceOp (enqueued next) or a
        value."""
        return ThenOp(self, fn)

    def partition(self, tile_shape) -> "DeviceOp":
        """``cl.zeros(n).partition(128)``: the created tensor, moved into a partition."""
        return ThenOp(self, lambda t: t.partition(tile_shape), label=f"{self.label}.partition")

    def partition_mut(self, tile_shape) -> "DeviceOp":
        return ThenOp(self, lambda t: t.partition_mut(tile_shape),
                      label=f"{self.label}.partition_mut")

    # --- running -------------------------------------------------------------------------------
    def start(self, stream=None) -> "Pending":
        """Enqueue the work and return at once; the result is ``pending.wait()``."""
        return _start(self, stream, for_sync=False)

    def sync(self):
        """Run the work, wait for it, return the result."""
        return _BACKENDS[self.backend or self._backend()].start(self, None, True).wait()

    def sync_on(self, stream):
        """Run the work on ``stream`` (cuda.core, torch, CuPy or ``cl.stream()``), wait, return
        the result."""
        return _start(self, stream, for_sync=True).wait()

    def __await__(self):
        return self.start()._await().__await__()

    def wait(self):
        """An op is lazy: nothing was started, so nothing can be waited for (``Pending.wait``
        is what waits). A clear error rather than an ``AttributeError``."""
        raise LaunchError(f"`{self.label}` was never started, so there is nothing to wait for",
                          help="run it and get its result with op.sync(); or p = op.start(), "
                               "then p.wait()", span=self.where)

    def graph(self):
        """Capture this op into a CUDA graph (see ``cl.graph``)."""
        return GRAPH_CAPTURE[0](self)

    def __repr__(self) -> str:
        return f"<DeviceOp {self.label} (lazy; .sync() or await to run) from {describe(self.where)}>"


class ValueOp(DeviceOp):
    label = "value"

    def __init__(self, value, backend=None):
        super().__init__(backend)
        self.value = value

    def _enqueue(self, ctx):
        return self.value


_ARITY: dict = {}


def _arity(fn) -> int | None:
    if isinstance(getattr(fn, "definition", None), KernelDef):
        # op.then(kernel): one argument per kernel parameter (any object with a kernel's
        # ``definition``: the runtime never imports ``cutile_lab.kernel``, which sits above it)
        return len(fn.definition.params)
    code = getattr(fn, "__code__", None)
    if code is not None and code in _ARITY:
        return _ARITY[code]
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    n = _count_positional(sig)
    if code is not None and not getattr(fn, "__self__", None):
        _ARITY[code] = n
    return n


def _count_positional(sig) -> int | None:
    n = 0
    for p in sig.parameters.values():
        if p.kind == p.VAR_POSITIONAL:
            return None
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            n += 1
    return n


class ThenOp(DeviceOp):
    def __init__(self, prev: DeviceOp, fn, label: str | None = None):
        super().__init__(prev.backend, where=user_site(2))
        if not callable(fn):
            raise LaunchError(".then() takes a function: op.then(lambda result: next_op)")
        self.prev = prev
        self.fn = fn
        self._label = label
        self._n = _arity(fn)

    @property
    def label(self) -> str:
        """``prev.then(fn)`` (worded when a message needs it)."""
        return self._label or f"{self.prev.label}.then({getattr(self.fn, '__name__', 'fn')})"

    def _backend(self):
        return self.prev._backend()

    def _enqueue(self, ctx):
        result = self.prev._enqueue(ctx)
        if isinstance(result, tuple) and self._n is not None and self._n != 1 \
                and self._n == len(result):
            args = result
        else:
            args = (result,)
        try:
            nxt = self.fn(*args)
        except TypeError:
            self._refuse_arity(args)        # a function that cannot take the result
            raise                           # a TypeError from inside the user's function
        if isinstance(nxt, DeviceOp):
            return nxt._enqueue(ctx)
        return nxt


    def _refuse_arity(self, args: tuple) -> None:
        """A ``LaunchError`` when ``fn`` cannot be called with ``args`` (its signature says so);
        nothing when it can (the TypeError came from inside it) or has no signature."""
        try:
            inspect.signature(self.fn).bind(*args)
        except TypeError as e:
            name = getattr(self.fn, "__name__", "fn")
            got = (f"a tuple of {len(args[0])}" if len(args) == 1 and isinstance(args[0], tuple)
                   else f"{len(args)} value(s)" if len(args) > 1
                   else f"one {type(args[0]).__name__}")
            raise LaunchError(f"`.then({name})` cannot take the result of `{self.prev.label}` "
                              f"({got}): {e}",
                              help="give .then() a function of one parameter (the result), or "
                                   "of one parameter per item of a tuple result, e.g. "
                                   "op.then(lambda z, x, y: ...)", span=self.where) from None
        except ValueError:
            pass


class ZipOp(DeviceOp):
    label = "zip"

    def __init__(self, ops):
        super().__init__()
        self.ops = [o if isinstance(o, DeviceOp) else ValueOp(o) for o in ops]
        self.backend = next((o.backend for o in self.ops if o.backend), None)

    def _enqueue(self, ctx):
        return tuple(o._enqueue(ctx) for o in self.ops)


def zip(*ops) -> DeviceOp:  # noqa: A001  (cl.zip, as cuTile Rust's zip!)
    """One op whose result is the tuple of the results of ``ops`` (run in order, one stream)."""
    return ZipOp(ops)


def value(v, backend: str | None = None) -> DeviceOp:
    """A DeviceOp whose result is ``v`` (a starting point for ``.then`` chains)."""
    return ValueOp(v, backend)


# --- streams ---------------------------------------------------------------------------------

class SimStream:
    """The simulator's stand-in for a stream (work runs on the host, in order)."""

    def __repr__(self):
        return "<simulator stream>"

    def sync(self):
        pass


def stream():
    """A new stream: independent ops started on different streams may run concurrently."""
    if current_backend() == "sim":
        return SimStream()
    return _device.gpu().new_stream()


_STREAM = [None]


def as_core_stream(s):
    """A cuda.core Stream from a cuda.core Stream, a torch/CuPy stream, ``__cuda_stream__``
    or a raw handle."""
    Stream = _STREAM[0]
    if Stream is None:
        from cuda.core import Stream
        _STREAM[0] = Stream
    if isinstance(s, Stream):
        return s
    if hasattr(s, "__cuda_stream__"):
        return Stream.from_handle(int(s.__cuda_stream__()[1]))
    for attr in ("cuda_stream", "ptr"):     # torch.cuda.Stream, cupy.cuda.Stream
        h = getattr(s, attr, None)
        if isinstance(h, int):
            return Stream.from_handle(h)
    if isinstance(s, int):
        return Stream.from_handle(s)
    raise not_a_stream(s)


def not_a_stream(s) -> LaunchError:
    return LaunchError(f"not a stream: {s!r}", span=user_call_site(),
                       help="pass cl.stream(), a cuda.core Stream, a torch or CuPy stream")


def check_stream(s) -> None:
    """On the simulator a stream is not used, but what the GPU backend would refuse
    (``as_core_stream``) is refused here too, so a notebook that runs on the simulator runs on
    a GPU."""
    if isinstance(s, SimStream) or hasattr(s, "__cuda_stream__") or (
            isinstance(s, int) and not isinstance(s, bool)):
        return
    if any(isinstance(getattr(s, a, None), int) for a in ("cuda_stream", "ptr")):
        return
    raise not_a_stream(s)


# --- starting and waiting ----------------------------------------------------------------------

def _start(op: DeviceOp, stream, *, for_sync: bool) -> "Pending":
    """Start ``op``'s chain on its backend (``runtime.gpu.start`` / ``runtime.sim.start``)."""
    return _BACKENDS[op._backend()].start(op, stream, for_sync)


def record_event(s, handle=None):
    """A completion event recorded on ``s`` (a recycled one from ``ownership.EVENT_POOL`` when
    there is one); ``handle`` is ``s``'s CUstream as a ``ctypes.c_void_p``."""
    return driver.record_event(s, handle, ownership.EVENT_POOL)


def wait_flight(flight: Flight) -> None:
    """Block until ``flight``'s work is done and release its borrows (``Backend.wait``)."""
    if flight.done:
        return
    _BACKENDS[flight.backend].wait(flight)


class Pending:
    """Work that was started: ``wait()`` / ``await`` for its result, ``done()`` to poll."""

    __slots__ = ("flight",)

    def __init__(self, flight: Flight):
        self.flight = flight

    def done(self) -> bool:
        f = self.flight
        if f.backend == "sim" and not f.done:
            ownership.release(f)        # the simulator's work ran when it was started
        return f.query()

    def wait(self):
        """Wait for the work; return its result (the launch's arguments, a tensor, ...)."""
        f = self.flight
        result = f.result
        if not f.done:
            _BACKENDS[f.backend].wait(f)        # ``wait_flight``
        return result

    result = wait

    @property
    def stream(self):
        return self.flight.stream

    async def _await(self):
        delay = 0.0
        while not self.done():
            await asyncio.sleep(delay)
            delay = min(max(delay * 2, 5e-5), 2e-3)
        return self.wait()

    def __await__(self):
        return self._await().__await__()

    def __repr__(self) -> str:
        state = "done" if self.flight.done else "in flight"
        return f"<Pending {self.flight.label} ({state}) from {describe(self.flight.where)}>"


def synchronize() -> None:
    """Wait for all work this runtime started (and the device)."""
    for f in ownership.live_flights():
        wait_flight(f)
    if _device._context is not None:
        _device.gpu().device.sync()


__all__ = ["DeviceOp", "Pending", "ExecContext", "ValueOp", "ThenOp", "zip", "value", "stream",
           "synchronize", "wait_flight", "as_core_stream", "SimStream", "record_event"]
