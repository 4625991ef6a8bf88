"""A fake GPU for the CPU: the GPU backend's own Python (``runtime.gpu``: start, the output's
stream-ordered allocation, the raw scalar-slot launch, the wait) driven against fakes of what
lies below it — cuda.core's device, streams, events and buffers, the driver library that
``runtime.driver`` calls through ctypes, and the compiler (``launch.plan._load_plan``). Shared by
``profile_hostpath.py --fake-gpu`` (to measure the GPU path's host cost here) and the tests that
check the GPU path's guarantees on a CPU (``tests/runtime/test_fake_gpu.py``).

    with FakeGpu() as fake:            # the automatic backend choice now finds "the GPU"
        x = fake.tensor(np.random.rand(1024).astype(np.float32))
        K.add(x, x).sync()
        fake.pool.log                  # ("alloc", addr, nbytes, lane), ("launch", lane, word 0),
                                       # ("free", addr, lane), in order

What is fake: no kernel runs (the launch is a call of a Python function returning 0) and the
memory holds no data (a tensor's values cannot be read back). What is real: every line of the
lab between the user's call and those calls. The pool is stream-ordered as the driver's is: a
block freed on a stream is reused at once by allocations on that stream, by allocations on
another stream only once the stream it was freed on was synchronized.
"""
from __future__ import annotations

import ctypes
import functools
import importlib
import itertools
import threading
from types import SimpleNamespace

import numpy as np


class FakeEvent:
    """A cuda.core Event: complete unless the pool says the device is ``busy``."""

    def __init__(self, handle: int, pool: "FakePool"):
        self.handle = handle
        self.pool = pool

    @property
    def is_done(self) -> bool:
        return not self.pool.busy

    def sync(self):
        pass


class FakeStream:
    """A cuda.core Stream: a CUstream handle; ``sync`` also completes the frees queued on it."""

    def __init__(self, handle: int, pool: "FakePool"):
        self.handle = handle
        self.pool = pool
        self.syncs = 0

    def __cuda_stream__(self):
        return (0, self.handle)

    def sync(self):
        self.syncs += 1
        self.pool.completed(self.handle)

    def record(self, event=None, options=None):
        return event if event is not None else FakeEvent(next(self.pool.handles), self.pool)


class FakeBuffer:
    """A cuda.core Buffer from the pool: freed (stream-ordered, on the stream it was allocated
    on) when closed or collected, as cuda.core's are."""

    def __init__(self, pool: "FakePool", handle: int, size: int, lane: int):
        self.pool, self.handle, self.size, self.lane = pool, handle, size, lane
        self.closed = False

    def close(self, stream=None):
        if not self.closed:
            self.closed = True
            lane = self.lane if stream is None else stream.handle
            self.pool.free(self.handle, self.size, lane)

    def __del__(self):
        self.close()


class FakePool:
    """The device's stream-ordered memory pool (``cuMemAllocFromPoolAsync`` / ``cuMemFreeAsync``):
    ``log`` lists every allocation and free with its stream."""

    def __init__(self):
        self.handles = itertools.count(0x7F00_0000_0000, 0x1_0000)
        self.log: list = []
        self.keep_log = True
        self._free: dict = {}          # lane -> [(size, handle)] freed there, not yet complete
        self._done: list = []          # [(size, handle)] whose free completed: any stream
        self._lock = threading.Lock()

    def allocate(self, size: int, lane: int) -> int:
        with self._lock:
            for blocks in (self._free.get(lane), self._done):
                for i, (n, h) in enumerate(blocks or ()):
                    if n >= size:
                        del blocks[i]
                        break
                else:
                    continue
                break
            else:
                h = next(self.handles)
            if self.keep_log:
                self.log.append(("alloc", h, size, lane))
            return h

    def free(self, handle: int, size: int, lane: int) -> None:
        with self._lock:
            self._free.setdefault(lane, []).append((size, handle))
            if self.keep_log:
                self.log.append(("free", handle, lane))

    def completed(self, lane: int) -> None:
        """Everything queued on ``lane`` ran: its frees are complete (any stream may reuse)."""
        with self._lock:
            self._done.extend(self._free.pop(lane, ()))


class FakeDevice:
    """A cuda.core Device: streams and stream-ordered allocations from ``pool``."""

    device_id = 0

    def __init__(self, pool: FakePool):
        self.pool = pool
        self.syncs = 0

    def set_current(self):
        pass

    def create_stream(self, options=None):
        return FakeStream(next(self.pool.handles), self.pool)

    def allocate(self, size: int, stream=None):
        lane = stream.handle
        return FakeBuffer(self.pool, self.pool.allocate(size, lane), size, lane)

    def sync(self):
        self.syncs += 1


class FakeLibcuda:
    """What ``runtime.driver`` calls through ctypes: each launch logged in the pool's ``log``
    as ("launch", stream, the first parameter word), its parameters in ``params``; every call but a query of a ``busy``
    device answers 0 (success)."""

    def __init__(self, pool: FakePool):
        self.pool = pool
        self.params: list = []        # each logged launch's parameter slots (bytes)

    def cuLaunchKernelEx(self, cfg, func, ptrs, extra):
        if self.pool.keep_log:
            self._log(cfg._obj.hStream, ptrs)
        return 0

    def cuLaunchKernel(self, func, gx, gy, gz, bx, by, bz, shmem, stream, ptrs, extra):
        if self.pool.keep_log:
            self._log(stream.value, ptrs)
        return 0

    def _log(self, lane, ptrs) -> None:
        """The launch in the pool's log; its parameters' bytes (16 a slot) in ``params``."""
        self.pool.log.append(("launch", lane, ctypes.c_uint64.from_address(ptrs[0]).value))
        self.params.append([ctypes.string_at(p, 16) for p in ptrs])

    def cuStreamQuery(self, stream):
        return 600 if self.pool.busy else 0       # CUDA_ERROR_NOT_READY

    def cuEventRecord(self, event, stream):
        return 0

    def cuGraphLaunch(self, graph, stream):
        return 0


class FakeBindings:
    """What ``runtime.memory`` calls through ``cuda.bindings.driver`` (waits, fills, copies):
    each call recorded in ``calls`` (name, arguments) while ``keep_log``; every call succeeds."""

    def __init__(self):
        self.calls: list = []
        self.keep_log = True

    def __getattr__(self, name):
        if not name.startswith("cu"):
            raise AttributeError(name)

        def call(*args):
            if self.keep_log:
                self.calls.append((name, args))
            return (0,)
        return call


class FakeKernel:
    """A loaded cuda.core Kernel: a function handle ``driver.function_handle`` accepts."""

    handle = 0xF00


def _load_plan(infos, kernel, info, key, consts, layouts, arch):
    """``launch.plan._load_plan`` without the compiler: the plan's parameters are those the
    compiler gives (``compiling.driver._bytecode``): each non-constant parameter, in order.
    ``info`` is added to ``infos`` (what ``FakeGpu`` forgets on exit)."""
    infos.add(info)
    from cutile_lab.compiling.artifact import LaunchParam
    from cutile_lab.runtime.launch.plan import LaunchPlan
    params = []
    for name, lay in layouts.items():
        if name in consts:
            continue
        if hasattr(lay, "ndim"):
            params.append(LaunchParam(name, "array", lay.dtype, lay.ndim, lay.index_bits))
        else:
            params.append(LaunchParam(name, "scalar", lay.dtype))
    compiled = SimpleNamespace(params=params, cubin=b"", symbol=kernel.definition.name,
                               max_threads_per_block=128)
    plan = info.plans[key] = LaunchPlan(compiled, FakeKernel(), 128, arch)
    return plan


class FakeGpu:
    """Installs the fakes (``with FakeGpu() as fake:``), and takes them out again on exit: the
    backend choice, the device probe, the GPU context, the driver library, the ``cuda.bindings``
    calls of ``runtime.memory``, the compiler and the pool of recycled events. On exit it also
    forgets the plans and launch entries made meanwhile (``infos``), so that in a process with a
    real GPU neither side ever uses the other's."""

    def __init__(self):
        self.pool = FakePool()
        self.lib = FakeLibcuda(self.pool)
        self.device = FakeDevice(self.pool)
        self.bindings = FakeBindings()
        self.infos: set = set()       # KernelInfos holding fake plans and launches

    def context(self):
        from cutile_lab.runtime.device import DeviceInfo, GpuContext
        g = GpuContext.__new__(GpuContext)
        g.device, g.index = self.device, 0
        g._stream_options = None
        g.default_stream = self.device.create_stream()
        g._pool, g._next, g._pool_lock = [], 0, threading.Lock()
        g.pool_release_threshold = 2**64 - 1
        g.alloc_epoch, g._fence, g._ordered = 0, (0, None), {}
        g._fence_lock = threading.Lock()
        g._keys = {}
        g.info = DeviceInfo(index=0, name="Fake H200", compute_capability=(9, 0), sm_count=132,
                            sm_clock_mhz=1980.0, memory_clock_mhz=2619.0, memory_bus_bits=6144,
                            total_memory=141 * 2**30, l2_cache_bytes=60 * 2**20,
                            max_threads_per_block=1024, driver_version="fake")
        # the compiled plans' key: not a real architecture, so that no plan a real GPU loaded
        # in this process is used with the fakes, nor a fake one on the GPU (tuning, keyed by
        # ``info``, sees the H200's sm_90)
        g.arch = "fake_" + g.info.arch
        return g

    def __enter__(self):
        B = importlib.import_module("cutile_lab.runtime.backend")
        GPU = B.GPU
        from cutile_lab.runtime import device, driver, memory
        plan = importlib.import_module("cutile_lab.runtime.launch.plan")
        self._saved = (memory._driver, device._probe, device._context, getattr(device._thread, "ctx", None),
                       driver._LIBCUDA[0], driver._RECORD[0], plan._load_plan,
                       B._explicit, B._automatic)
        self.gpu = self.context()
        memory._driver = lambda: self.bindings
        device._probe = (True, "")
        device._context = device._thread.ctx = self.gpu
        driver._LIBCUDA[0], driver._RECORD[0] = self.lib, None
        plan._load_plan = functools.partial(_load_plan, self.infos)
        from cutile_lab.runtime import ownership
        self._saved_events = ownership.EVENT_POOL[:]     # a real GPU's recycled events
        ownership.EVENT_POOL.clear()
        prepare = self._saved_prepare = GPU.__dict__["prepare_launch"]

        def prepare_launch(op, entry, values, ctx):     # every new launch entry: forgotten
            self.infos.add(op.info)                      # on exit
            return prepare(op, entry, values, ctx)
        GPU.__dict__["prepare_launch"] = prepare_launch
        B._reset_for_tests()
        B._announced = True
        return self

    def __exit__(self, *exc):
        B = importlib.import_module("cutile_lab.runtime.backend")
        GPU = B.GPU
        from cutile_lab.runtime import device, driver, memory, ownership
        plan = importlib.import_module("cutile_lab.runtime.launch.plan")
        ownership._reset_for_tests()
        GPU.__dict__["prepare_launch"] = self._saved_prepare
        ownership.EVENT_POOL[:] = self._saved_events
        for info in self.infos:       # no fake plan or packed launch outlives the fakes
            info.plans.clear()
            info.entries.clear()
            info.recent = None
        (memory._driver, device._probe, device._context, device._thread.ctx, driver._LIBCUDA[0],
         driver._RECORD[0], plan._load_plan, B._explicit, B._automatic) = self._saved
        return False

    def tensor(self, array: np.ndarray):
        """A GPU tensor of ``array``'s shape and dtype, allocated on the default stream (its
        values are not copied: the fake device holds none)."""
        from cutile_lab.runtime.dtypes import as_dtype
        from cutile_lab.runtime.tensor import Tensor
        array = np.ascontiguousarray(array)
        storage = self.gpu.allocate_now(array.nbytes)
        return Tensor.contiguous(storage, as_dtype(array.dtype), tuple(array.shape))

    def quiet(self):
        """Stop logging allocations and launches (a long measurement)."""
        self.pool.keep_log = self.bindings.keep_log = False
        return self
