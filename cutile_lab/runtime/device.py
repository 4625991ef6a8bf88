"""The GPU: lazy discovery, device facts, the current context and its streams.

Owns: ``gpu_available()`` (never raises), ``require_gpu()`` (the clear "no GPU" error),
``DeviceInfo`` (name, SM count, clocks, memory, compute capability and the ``sm_XX`` arch
string), ``describe_device()``, ``device_indices()`` (the GPUs a ``gpus=`` value names) and ``gpu()`` — the process-wide ``GpuContext`` holding the
cuda.core ``Device``, the runtime's default stream, a small stream pool and the memory pool.
Nothing here runs at import time; ``cuda.core`` is imported on first use.

Threads: a CUDA context is current per thread. ``gpu()`` — the way every runtime entry point
reaches the GPU — makes the device's primary context current in the calling thread the first
time that thread asks (a thread-local flag: one attribute read afterwards), so launches, streams,
allocations and graph replays work from any thread (a pool's worker, an event loop in another
thread) without the user calling ``set_current``. The stream pool hands out its streams under a
lock; everything else here is immutable once built.

Memory: tensors are allocated from the device's stream-ordered memory pool (the driver's
``cuMemAllocFromPoolAsync``, through cuda.core's ``DeviceMemoryResource``), with the pool's
release threshold raised to "keep everything": freed blocks stay in the pool for the next
allocation instead of going back to the OS at the next synchronisation (what makes a 1 GiB
output cost ~0.7 ms per call with the default threshold of 0). This is the caching behaviour of
PyTorch's and CuPy's allocators, chosen over a caching allocator of our own because the driver
pool is already stream-ordered (a block freed on a stream is reused on it at once, on another
stream only after the free completed or behind an inserted dependency) and shared with
everything else in the process that allocates through cuda.core.
"""
from __future__ import annotations

import operator
import threading
from dataclasses import dataclass
from typing import Iterable

from cutile_lab.errors import LaunchError, NoDeviceError
from cutile_lab.runtime.callsite import user_call_site
from cutile_lab.runtime.memory import allocate

_lock = threading.Lock()
_thread = threading.local()      # .ctx: the GpuContext made current in this thread
_probe: tuple[bool, str] | None = None   # (found, reason when not found)
_context: "GpuContext | None" = None

NO_GPU_HELP = ("the simulator backend runs the same kernels on the CPU: cl.set_backend('sim') "
               "(or CUTILE_LAB_BACKEND=sim); importing and compiling need no GPU")


def _probe_gpu() -> tuple[bool, str]:
    global _probe
    if _probe is not None:
        return _probe
    with _lock:
        if _probe is not None:
            return _probe
        try:
            from cuda.bindings import driver
            (err,) = driver.cuInit(0)
            if int(err) != 0:
                _probe = (False, f"the CUDA driver reports {_err_name(err)}")
            else:
                err, count = driver.cuDeviceGetCount()
                if int(err) != 0 or count < 1:
                    _probe = (False, "the CUDA driver sees no device")
                else:
                    _probe = (True, "")
        except ImportError:
            _probe = (False, "cuda-python (cuda.core / cuda.bindings) is not installed")
        except Exception as e:  # the driver library itself is missing, ...
            text = str(e).splitlines()[0] if str(e) else type(e).__name__
            _probe = (False, f"no NVIDIA driver ({text})")
    return _probe


def _err_name(err) -> str:
    name = getattr(err, "name", None)
    return name or str(err)


def gpu_available() -> bool:
    """True when a CUDA device can be used (cached; never raises)."""
    return _probe_gpu()[0]


def require_gpu(what: str = "this operation") -> None:
    found, reason = _probe_gpu()
    if not found:
        raise NoDeviceError(f"no GPU found for {what}: {reason}", help=NO_GPU_HELP)


@dataclass(frozen=True)
class DeviceInfo:
    index: int
    name: str
    compute_capability: tuple[int, int]
    sm_count: int
    sm_clock_mhz: float
    memory_clock_mhz: float
    memory_bus_bits: int
    total_memory: int
    l2_cache_bytes: int
    max_threads_per_block: int
    driver_version: str = ""

    @property
    def arch(self) -> str:
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"

    @property
    def theoretical_bandwidth(self) -> float:
        """Bytes/s from the memory clock and bus width (double data rate)."""
        return 2.0 * self.memory_clock_mhz * 1e6 * self.memory_bus_bits / 8

    def __str__(self) -> str:
        return (f"{self.name} ({self.arch}, {self.sm_count} SMs, {self.sm_clock_mhz:.0f} MHz, "
                f"{self.total_memory / 2**30:.1f} GiB, {self.theoretical_bandwidth / 1e12:.2f} TB/s"
                f" theoretical)")


class GpuContext:
    """The device in use, the runtime's default stream and a pool of streams for async work."""

    POOL_SIZE = 4

    def __init__(self, index: int = 0):
        from cuda.core import Device, StreamOptions
        self.device = Device(index)
        self.device.set_current()
        self.index = index
        self._stream_options = StreamOptions(nonblocking=True)
        self.default_stream = self.device.create_stream(options=self._stream_options)
        self._pool: list = []
        self._next = 0
        self._pool_lock = threading.Lock()
        self.pool_release_threshold = keep_freed_memory(self.device)
        # allocations made outside any chain (``cl.empty``) go on the default stream; work on
        # another stream is ordered after them by ``order_after_allocations``
        self.alloc_epoch = 0          # bumped after each such allocation
        self._fence = (0, None)       # (epoch, event recorded on the default stream then)
        self._ordered: dict = {}      # stream handle -> the epoch it waited for
        self._fence_lock = threading.Lock()
        self._keys: dict = {}       # id(stream) -> (stream, handle, c_void_p) for streams we hold
        self.info = _device_info(self.device, index)
        self.arch = self.info.arch

    def stream_key(self, s) -> int:
        """The ``CUstream`` handle of ``s`` (cached for long-lived streams)."""
        hit = self._keys.get(id(s))
        if hit is not None and hit[0] is s:
            return hit[1]
        return self._stream_entry(s)[1]

    def stream_handles(self, s) -> tuple:
        """(``CUstream`` handle, the same as a ``ctypes.c_void_p``) of ``s``: the launch fast
        path passes the second to the driver through ctypes."""
        hit = self._keys.get(id(s))
        if hit is not None and hit[0] is s:
            return hit[1], hit[2]
        hit = self._stream_entry(s)
        return hit[1], hit[2]

    def _stream_entry(self, s) -> tuple:
        import ctypes
        from cutile_lab.runtime.memory import stream_handle
        h = stream_handle(s)
        hit = (s, h, ctypes.c_void_p(h))
        if len(self._keys) >= 256:        # streams come and go: keep the recent ones
            self._keys.clear()
        self._keys[id(s)] = hit
        return hit

    def allocate_now(self, nbytes: int):
        """Device memory for ``cl.empty``: from the pool, stream-ordered on the default stream,
        without waiting on the host. A chain started on another stream is ordered after it
        (``order_after_allocations``); one on the default stream is ordered by the stream."""
        storage = allocate(nbytes, self.default_stream, self.device)
        self.alloc_epoch += 1         # after the allocation is enqueued (the fence follows it)
        return storage

    def order_after_allocations(self, stream, lane) -> None:
        """Make ``stream`` (CUstream handle ``lane``) wait for the allocations made on the
        default stream so far: one event recorded there per batch of allocations, one
        ``cuStreamWaitEvent`` per stream and batch (nothing when nothing was allocated since
        this stream last waited)."""
        from cutile_lab.runtime.memory import wait_event_handle
        with self._fence_lock:
            epoch = self.alloc_epoch
            if self._ordered.get(lane) == epoch:
                return
            fenced, ev = self._fence
            if fenced != epoch or ev is None:
                ev = self.default_stream.record()
                self._fence = (epoch, ev)
            wait_event_handle(stream, ev.handle)
            if len(self._ordered) >= 256:
                self._ordered.clear()
            self._ordered[lane] = epoch

    def ensure_current(self) -> None:
        """Make the device's context current in the calling thread (once per thread)."""
        if getattr(_thread, "ctx", None) is not self:
            from cuda.core import Device
            Device(self.index).set_current()      # this thread's Device object
            _thread.ctx = self

    def new_stream(self):
        return self.device.create_stream(options=self._stream_options)

    def pool_stream(self):
        """Round-robin over a few streams so independent async ops can run concurrently."""
        with self._pool_lock:
            if len(self._pool) < self.POOL_SIZE:
                s = self.new_stream()
                self._pool.append(s)
                return s
            s = self._pool[self._next % self.POOL_SIZE]
            self._next += 1
            return s


def keep_freed_memory(device) -> int:
    """Raise the release threshold of ``device``'s memory pool to the maximum (freed memory is
    kept for reuse, see the module docstring); returns the threshold now in force (0 where the
    pool could not be reached: then allocation still works, it only costs more)."""
    try:
        from cuda.bindings import driver
        pool = device.memory_resource.handle
        attr = driver.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
        (err,) = driver.cuMemPoolSetAttribute(pool, attr, driver.cuuint64_t(2**64 - 1))
        if int(err) != 0:
            return 0
        err, value = driver.cuMemPoolGetAttribute(pool, attr)
        return int(value) if int(err) == 0 else 0
    except Exception:
        return 0


def gpu() -> GpuContext:
    """The process-wide GPU context, current in the calling thread (created on first use;
    ``NoDeviceError`` without a GPU)."""
    ctx = _context
    if ctx is not None and getattr(_thread, "ctx", None) is ctx:
        return ctx
    return _gpu_for_thread()


def make_current() -> None:
    """Make the GPU context current in the calling thread if the runtime has started one (for
    driver calls on objects that exist already: recording an event on a stream)."""
    ctx = _context
    if ctx is not None and getattr(_thread, "ctx", None) is not ctx:
        ctx.ensure_current()


def _gpu_for_thread() -> GpuContext:
    global _context
    if _context is None:
        require_gpu("GPU work")
        with _lock:
            if _context is None:
                ctx = GpuContext(0)
                _thread.ctx = ctx
                _context = ctx
    ctx = _context
    ctx.ensure_current()
    return ctx


def _device_info(dev, index: int) -> DeviceInfo:
    from cuda.bindings import driver
    p = dev.properties
    cc = dev.compute_capability
    try:
        err, cu_dev = driver.cuDeviceGet(int(dev.device_id))
        err, total = driver.cuDeviceTotalMem(cu_dev)
        total = int(total) if int(err) == 0 else 0
    except Exception:
        total = 0
    try:
        err, ver = driver.cuDriverGetVersion()
        driver_version = f"{ver // 1000}.{(ver % 1000) // 10}" if int(err) == 0 else ""
    except Exception:
        driver_version = ""
    def attr(name, default=0):
        try:
            return getattr(p, name)
        except Exception:       # attributes a driver no longer reports
            return default

    return DeviceInfo(index=index, name=dev.name, compute_capability=(cc.major, cc.minor),
                      sm_count=p.multiprocessor_count, sm_clock_mhz=attr("clock_rate") / 1e3,
                      memory_clock_mhz=attr("memory_clock_rate") / 1e3,
                      memory_bus_bits=attr("global_memory_bus_width"), total_memory=total,
                      l2_cache_bytes=attr("l2_cache_size"),
                      max_threads_per_block=p.max_threads_per_block,
                      driver_version=driver_version)


def device_info() -> DeviceInfo:
    """Facts about the GPU in use (``NoDeviceError`` without one)."""
    return gpu().info


def describe_device() -> str:
    """One line about the GPU, or raises ``NoDeviceError`` saying why there is none."""
    return str(device_info())


def current_arch() -> str:
    """The ``sm_XX`` string of the GPU in use."""
    return gpu().arch


def device_indices(gpus) -> list[int]:
    """The GPUs a ``gpus=`` value names (``sweep``'s, ``GPUPool``'s): a count (the first that
    many) or distinct indices; anything else is the lab's error at the user's line."""
    bad = isinstance(gpus, (bool, str, bytes))
    if not bad:
        try:
            if isinstance(gpus, Iterable):
                items = list(gpus)
                indices = [operator.index(g) for g in items]
                bad = any(i < 0 or isinstance(g, bool) for i, g in zip(indices, items)) \
                    or len(set(indices)) != len(indices)
            else:
                indices = list(range(operator.index(gpus)))
                bad = not indices
        except TypeError:
            bad = True
    if bad:
        raise LaunchError(f"gpus={gpus!r} does not name GPUs", span=user_call_site(),
                          help='give "all", a count of 1 or more (the first that many GPUs) or '
                               "a list of distinct indices from 0, e.g. gpus=[0, 1]")
    return indices


__all__ = ["DeviceInfo", "GpuContext", "gpu", "make_current", "gpu_available", "require_gpu", "device_info",
           "describe_device", "current_arch", "device_indices"]

