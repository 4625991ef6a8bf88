"""Everything that talks to the CUDA driver library (``libcuda``) through ctypes.

Owns: loading the library (``libcuda()``, None where it cannot be loaded), the raw kernel launch
(``RawLaunch``: a launch packed once for ``cuLaunchKernel`` / ``cuLaunchKernelEx``), the
``CUfunction`` of a cuda.core kernel, stream queries (``stream_idle``), recording pooled events
(``record_event``) and the raw graph launch (``graph_launcher``).

Why ctypes and not the ``cuda.bindings`` wrappers: on the launch path every call counts. A
ctypes call with its arguments converted once (``c_void_p`` handles, a ``CUlaunchConfig`` built
per stream, the parameter array packed per launch shape) costs a fraction of the bindings'
per-call argument conversion; ``cuda.core.launch`` redoes the packing on every call. Everything
here is an optimisation with a fallback: where the library or a handle cannot be had, the caller
uses cuda.core. Nothing here knows about ownership, tensors or kernels' signatures.
"""
from __future__ import annotations

import ctypes
import functools
import threading

_LIBCUDA = [None]


def libcuda():
    """The driver library through ctypes (None where it cannot be loaded)."""
    lib = _LIBCUDA[0]
    if lib is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            lib.cuGraphLaunch.restype = ctypes.c_int
            lib.cuGraphLaunch.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        except (OSError, AttributeError):
            lib = False
        _LIBCUDA[0] = lib
    return lib or None


# --- the raw kernel launch ---------------------------------------------------------------------

class LaunchConfig(ctypes.Structure):
    """The driver's ``CUlaunchConfig`` (no launch attributes)."""

    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint),
                ("gridDimZ", ctypes.c_uint), ("blockDimX", ctypes.c_uint),
                ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.c_void_p), ("numAttrs", ctypes.c_uint)]


_MASK64 = 0xFFFFFFFFFFFFFFFF


def arg_bytes(a) -> bytes:
    """A packed argument's bytes as ``cuda.core.launch`` passes it: a Python int as a 64-bit
    pointer, a NumPy scalar at its own width."""
    if type(a) is int:
        return (a & _MASK64).to_bytes(8, "little")
    b = a.tobytes()
    if len(b) > 16:
        raise ValueError("a kernel argument wider than 16 bytes")
    return b


class RawLaunch:
    """A cached launch packed once for the driver's ``cuLaunchKernel``, called through ctypes:
    what ``cuda.core.launch`` redoes on every call (convert each argument, build the parameter
    array and the launch configuration) is done here once per launch shape.

    The parameter values sit in one buffer, a 16-byte slot each (two 64-bit words), ``ptrs``
    pointing at the slots; scalars (their values differ from op to op: a library call's new
    output pointer too) are written into their slots' words under ``lock`` right before the
    call — the driver copies the parameters when it is called."""

    __slots__ = ("launch_kernel", "buf", "ptrs", "base", "lock", "last", "ex", "func", "dims",
                 "configs")

    def __init__(self, fn, func, grid3, block: int, template, fn_ex=None):
        n = max(len(template), 1)
        self.buf = buf = (ctypes.c_uint64 * (2 * n))()
        self.base = base = ctypes.addressof(buf)
        self.ptrs = (ctypes.c_void_p * n)(*[base + 16 * i for i in range(n)])
        for i, a in enumerate(template):
            if a is not None:
                b = arg_bytes(a)
                ctypes.memmove(base + 16 * i, b, len(b))
        gx, gy, gz = grid3
        # cuLaunchKernel with everything but the stream, the parameters and ``extra`` bound
        self.launch_kernel = functools.partial(fn, func, int(gx), int(gy), int(gz), int(block),
                                               1, 1, 0)
        self.lock = threading.Lock()
        self.last = None              # the scalar slots written last (skipped when the same)
        # cuLaunchKernelEx takes 4 arguments instead of 11: with the configuration built once
        # per stream, the ctypes call converts less on every launch
        self.ex = fn_ex
        self.func = func
        self.dims = (int(gx), int(gy), int(gz), int(block))
        self.configs: dict = {}       # stream handle -> byref(LaunchConfig) naming it

    def config(self, lane: int):
        """The launch configuration for the stream ``lane`` (its CUstream as an int)."""
        cfg = self.configs.get(lane)
        if cfg is None:
            if len(self.configs) >= 64:
                self.configs.clear()
            gx, gy, gz, block = self.dims
            cfg = self.configs[lane] = ctypes.byref(
                LaunchConfig(gx, gy, gz, block, 1, 1, 0, lane, None, 0))
        return cfg

    def launch(self, handle, scalars=(), lane=None) -> int:
        """Enqueue on the stream ``handle`` (a c_void_p; ``lane``: the same stream as an int,
        for ``cuLaunchKernelEx`` with the stream's configuration where the driver has it: 4
        arguments for ctypes to convert instead of 11); ``scalars``: ``scalar_slots``' words.
        The driver's error code (0: queued)."""
        ex = self.ex if lane is not None else None
        if ex is not None:
            cfg = self.configs.get(lane)
            if cfg is None:
                cfg = self.config(lane)
        if not scalars:
            if ex is not None:
                return ex(cfg, self.func, self.ptrs, None)
            return self.launch_kernel(handle, self.ptrs, None)
        buf = self.buf
        with self.lock:
            if self.last is not scalars:
                for word, low, high in scalars:     # item stores: a fraction of a memmove
                    buf[word] = low
                    buf[word + 1] = high
                self.last = scalars
            if ex is not None:
                return ex(cfg, self.func, self.ptrs, None)
            return self.launch_kernel(handle, self.ptrs, None)

    @staticmethod
    def scalar_slots(slots) -> list:
        """[(word index, low word, high word)] of ``slots``: [(parameter index, packed value)]
        — each value's bytes (``arg_bytes``; a Python int, a pointer, as 8) as its slot's two
        64-bit words (little-endian, as every host of a CUDA device is)."""
        out = []
        for i, value in slots:
            if type(value) is int:
                out.append((2 * i, value & _MASK64, 0))
            else:
                w = int.from_bytes(arg_bytes(value), "little")
                out.append((2 * i, w & _MASK64, w >> 64))
        return out


def raw_launch(kernel, grid3, block: int, template, function=None):
    """(RawLaunch, CUfunction) for a loaded cuda.core kernel, or (False, function) where the
    driver library or the kernel's function handle cannot be had (then ``cuda.core.launch``
    launches it). ``function``: the CUfunction found before, if any."""
    lib = libcuda()
    if lib is None:
        return False, function
    try:
        if function is None:
            function = function_handle(kernel)
        if not function:
            return False, function
        return RawLaunch(lib.cuLaunchKernel, function, grid3, block, template,
                         getattr(lib, "cuLaunchKernelEx", None)), function
    except Exception:
        return False, function


def function_handle(kernel):
    """A ``CUfunction`` for a cuda.core Kernel as a ctypes.c_void_p (False when there is none):
    the library kernel's function in the current context."""
    try:
        from cuda.bindings import driver
        h = kernel.handle
        if isinstance(h, driver.CUkernel):
            err, h = driver.cuKernelGetFunction(h)
            if int(err) != 0:
                return False
        h = int(h)
        return ctypes.c_void_p(h) if h else False
    except Exception:
        return False


# --- streams, events, graphs -------------------------------------------------------------------

def stream_idle(key) -> bool:
    """Has all work queued on the stream ``key`` (a CUstream handle as an int) completed?
    (A negative key is a lane of its own, not a stream: never asked.)"""
    lib = libcuda()
    if lib is None or type(key) is not int or key < 0:
        return False
    return lib.cuStreamQuery(ctypes.c_void_p(key)) == 0


# cuEventRecord through ctypes and the events' handles, or False where the driver library cannot
# be loaded: recording a pooled event this way costs a fraction of ``Stream.record``
_RECORD: list = [None]


def record_event(s, handle=None, pool=None):
    """A completion event recorded on ``s`` (a cuda.core Stream): a recycled one from ``pool``
    (a list of cuda.core Events) when there is one, else a new one; ``handle`` is ``s``'s
    CUstream as a ``ctypes.c_void_p``."""
    try:
        ev = pool.pop() if pool else None
    except IndexError:                # another thread took the last one
        ev = None
    if ev is None:
        return s.record()
    if handle is not None:
        rec = _RECORD[0]
        if rec is None:
            rec = _event_recorder()
        if rec:
            fn, handles = rec
            hit = handles.get(id(ev))
            if hit is None or hit[0] is not ev:
                hit = _event_handle(ev, handles)
            if hit is not None and fn(hit[1], handle) == 0:
                return ev
    return s.record(ev)


def _event_recorder():
    lib = libcuda()
    rec = (lib.cuEventRecord, {}) if lib is not None else False
    _RECORD[0] = rec
    return rec


def _event_handle(ev, handles):
    try:
        h = int(ev.handle)
    except Exception:
        return None
    if len(handles) >= 256:
        handles.clear()
    hit = handles[id(ev)] = (ev, ctypes.c_void_p(h))
    return hit


def graph_launcher(graph_exec):
    """(ctypes ``cuGraphLaunch``, the ``CUgraphExec`` address) of a cuda.core Graph, or False
    to launch through cuda.core (``cuGraphLaunch`` takes two pointers: a ctypes call is cheaper
    than the bindings')."""
    try:
        lib = libcuda()
        if lib is None:
            return False
        return lib.cuGraphLaunch, int(graph_exec.handle)
    except Exception:
        return False


__all__ = ["libcuda", "RawLaunch", "LaunchConfig", "arg_bytes", "raw_launch", "function_handle",
           "stream_idle", "record_event", "graph_launcher"]
