"""Creating tensors: ``zeros/ones/full/arange/rand/randn/from_numpy`` (lazy DeviceOps) and
``asarray`` / ``empty`` (immediate).

Owns the creation ops and the zero-copy wrapping of other libraries' arrays (``asarray``: any
object with ``__cuda_array_interface__`` or ``__dlpack__`` — PyTorch, CuPy, JAX — and, on the
simulator, NumPy arrays). On the gpu backend fills are ``cuMemset*`` on the op's stream and host
data (``from_numpy``, ``arange``, ``rand``, ``randn``) is generated with NumPy and copied up.
"""
from __future__ import annotations

import math

import numpy as np

from cutile_lab.errors import LaunchError
from cutile_lab.language.dtypes import DType
from cutile_lab.runtime import device as _device
from cutile_lab.runtime import ownership
from cutile_lab.runtime.backend import backend as current_backend
from cutile_lab.runtime.callsite import user_call_site, user_site
from cutile_lab.runtime.dtypes import as_dtype, numpy_dtype
from cutile_lab.runtime.memory import DeviceStorage, HostStorage, copy, fill
from cutile_lab.runtime.ops import DeviceOp, ExecContext
from cutile_lab.runtime.tensor import Tensor, c_strides, normalize_shape


def _bit_pattern(value, dtype: DType) -> int:
    arr = np.asarray(value, dtype=numpy_dtype(dtype)) if dtype.name not in ("bf16",) else None
    if dtype.name == "bf16":
        from cutile_lab.runtime.dtypes import scalar_value
        return int(scalar_value(value, dtype))
    return int(arr.reshape(1).view({1: np.uint8, 2: np.uint16, 4: np.uint32,
                                    8: np.uint64}[dtype.itemsize])[0])


class CreateOp(DeviceOp):
    """A new tensor: filled with a constant, or with host-generated data copied up."""

    def __init__(self, kind: str, shape, dtype, *, fill_value=None, host=None, seed=None,
                 arange_args=None):
        super().__init__(current_backend())
        self.kind = kind
        self.shape = normalize_shape(shape)
        self.dtype = as_dtype(dtype)
        _check_size(self.shape, self.dtype, f"cl.{kind}")
        self.fill_value = fill_value
        self.host = host                 # from_numpy: the NumPy array
        self.seed = seed
        self.arange_args = arange_args
        self.label = f"cl.{kind}"

    def _host_data(self) -> np.ndarray:
        np_dt = numpy_dtype(self.dtype)
        if self.kind == "from_numpy":
            return np.ascontiguousarray(self.host, dtype=np_dt)
        if self.kind == "arange":
            start, stop, step = self.arange_args
            return np.arange(start, stop, step).astype(np_dt)
        if self.kind in ("rand", "randn"):
            rng = np.random.default_rng(self.seed)
            work = np.float32 if self.dtype.itemsize <= 4 else np.float64
            if self.kind == "rand":
                data = rng.random(self.shape, dtype=work)
            else:
                data = rng.standard_normal(self.shape, dtype=work)
            return data.astype(np_dt, copy=False)
        if self.kind == "full":
            return np.full(self.shape, self.fill_value, dtype=np_dt)
        raise AssertionError(self.kind)

    def _sim_data(self) -> np.ndarray:
        if self.kind == "zeros":
            return np.zeros(self.shape, dtype=numpy_dtype(self.dtype))
        if self.kind == "ones":
            return np.ones(self.shape, dtype=numpy_dtype(self.dtype))
        return np.array(self._host_data(), copy=True).reshape(self.shape)

    def _enqueue(self, ctx: ExecContext) -> Tensor:
        where = self._where           # a ``user_site``: a Span only when a message needs one
        if ctx.backend == "sim":
            try:
                data = self._sim_data()
            except MemoryError:
                raise LaunchError(f"{self.label}: no host memory for a {self.dtype} tensor of "
                                  f"shape {self.shape} on the simulator", span=self.where,
                                  help="the simulator keeps tensors in host memory: use a "
                                       "smaller shape") from None
            flat = data.reshape(-1)
            t = Tensor(HostStorage(flat.ctypes.data, flat.nbytes, flat), self.dtype, self.shape,
                       origin=where)
            ownership.add_borrow(ctx.flight, t, True, self.label)
            return t
        n = math.prod(self.shape)
        nbytes = n * self.dtype.itemsize
        capture = ctx.capture
        t = new_tensor(ctx, self.shape, self.dtype, where)
        storage = t.storage
        ownership.add_borrow(ctx.flight, t, True, self.label)
        pattern = None
        if self.kind == "zeros":
            pattern = 0
        elif self.kind in ("ones", "full"):
            v = 1 if self.kind == "ones" else self.fill_value
            pattern = _bit_pattern(v, self.dtype)
        if pattern is not None and (self.dtype.itemsize in (1, 2, 4) or pattern == 0
                                    or (pattern & 0xFFFFFFFF) == (pattern >> 32)
                                    or capture is not None):
            fill(storage.ptr, pattern, self.dtype.itemsize, n, ctx.stream)
            return t
        if capture is not None:     # 8-byte patterns are filled above while capturing
            raise LaunchError(f"`{self.label}` copies host data and cannot be captured into a "
                              "CUDA graph", help="create inputs before capturing; inside a "
                                                 "graph, create with cl.zeros/ones/full")
        data = self._host_data()
        ctx.flight.keep.append(data)
        copy(storage.ptr, data.ctypes.data, nbytes, ctx.stream)
        return t


_MAX_BYTES = 1 << 48       # 256 TiB: more than any device or host holds


def _check_size(shape: tuple, dtype: DType, what: str) -> None:
    """A shape whose bytes no memory holds is refused where it is written, not by NumPy's or
    the driver's error from inside the lab."""
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > _MAX_BYTES:
        raise LaunchError(f"{what}: shape {shape} of {dtype} is {nbytes:.3g} bytes, more than "
                          "any memory holds", span=user_call_site(),
                          help="check the shape (a size multiplied twice?)")


def _real(value, what: str, name: str):
    """``value`` if it is a real number (bool, int, float, NumPy scalar), else a LaunchError."""
    if isinstance(value, (bool, int, float, np.integer, np.floating, np.bool_)):
        return value
    raise LaunchError(f"{what}: {name}={value!r} is not a real number", span=user_call_site(),
                      help=f"give {name} as an int or a float")


def _fits(value, dtype: DType, what: str):
    """``value`` if an integer ``dtype`` holds it exactly (NumPy would wrap 300 into i8, or
    1e10 and NaN into i32, without a word, or raise inside the lab at ``.sync()``)."""
    np_dt = numpy_dtype(dtype)
    if np_dt.kind in "iu":
        info = np.iinfo(np_dt)
        v = float(value)
        if not (math.isfinite(v) and v.is_integer() and info.min <= int(v) <= info.max):
            raise LaunchError(f"{what}: the fill value {value!r} does not fit {np_dt.name} "
                              f"(an integer from {info.min} to {info.max})",
                              span=user_call_site(),
                              help="give a value the dtype holds, or a wider dtype")
    return value


def new_tensor(ctx: ExecContext, shape: tuple, dtype: DType, where=None) -> Tensor:
    """An uninitialised tensor for a chain being enqueued: from the memory pool, stream-ordered
    on the chain's stream (on the capture's allocation stream while a graph is captured: the
    graph reuses it on every replay), or a NumPy array on the simulator."""
    return ctx.backend.new_tensor(ctx, shape, dtype, where)


def zeros(shape, dtype=None) -> DeviceOp:
    """A lazy tensor of zeros (``.sync()`` to get it)."""
    return CreateOp("zeros", shape, dtype)


def ones(shape, dtype=None) -> DeviceOp:
    return CreateOp("ones", shape, dtype)


def full(shape, fill_value, dtype=None) -> DeviceOp:
    op = CreateOp("full", shape, dtype, fill_value=_real(fill_value, "cl.full", "fill_value"))
    _fits(fill_value, op.dtype, "cl.full")
    return op


def arange(start, stop=None, step=1, dtype=None) -> DeviceOp:
    """``arange(n)`` or ``arange(start, stop, step)``; dtype defaults to i32 for ints."""
    if stop is None:
        start, stop = 0, start
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        _real(v, "cl.arange", name)
    if step == 0:
        raise LaunchError("cl.arange: step=0 gives no values", span=user_call_site(),
                          help="give a non-zero step")
    n = len(range(0, math.ceil((stop - start) / step)))
    if dtype is None:
        dtype = "i32" if all(isinstance(v, (int, np.integer)) for v in (start, stop, step)) \
            else "f32"
    return CreateOp("arange", (max(n, 0),), dtype, arange_args=(start, stop, step))


def rand(shape, dtype=None, *, seed=None) -> DeviceOp:
    """Uniform [0, 1) random numbers (fresh each call unless ``seed`` is given)."""
    return CreateOp("rand", shape, dtype, seed=_seed(seed, "rand"))


def randn(shape, dtype=None, *, seed=None) -> DeviceOp:
    """Standard normal random numbers (fresh each call unless ``seed`` is given)."""
    return CreateOp("randn", shape, dtype, seed=_seed(seed, "randn"))


def _seed(seed, name: str):
    """None or a non-negative int; anything else is refused here, not by NumPy at ``.sync()``."""
    if seed is None or (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool)
                        and seed >= 0):
        return seed
    raise LaunchError(f"cl.{name}: seed={seed!r} is not a non-negative int",
                      span=user_call_site(),
                      help=f"cl.{name}(shape, seed=0) repeats its numbers; leave seed out for "
                           "fresh ones")


def _host_array(obj, what: str) -> np.ndarray:
    """``np.asarray(obj)`` for ``cl.asarray`` / ``cl.from_numpy``: what is not an array of
    numbers (None, a string, a dict, a ragged list) is a ``LaunchError`` that says so, not
    NumPy's ValueError or an "unknown dtype" of NumPy's object dtype."""
    try:
        arr = np.asarray(obj)
    except ValueError as e:
        raise LaunchError(f"{what}: cannot make a tensor of this {type(obj).__name__}: {e}",
                          span=user_call_site(),
                          help="rows of a nested list must all have the same length") from None
    if arr.dtype.kind in "OSU":     # not "V": ml_dtypes' bfloat16 is a void kind
        raise LaunchError(f"{what}: cannot make a tensor of {type(obj).__name__} "
                          f"({str(obj)[:40]!s})", span=user_call_site(),
                          help="pass a NumPy, PyTorch, CuPy or JAX array, or a (nested) list "
                               "of numbers")
    return arr


def from_numpy(array, dtype=None) -> DeviceOp:
    """A lazy copy of a NumPy array into a new tensor (dtype: the array's unless given)."""
    array = _host_array(array, "cl.from_numpy")
    dt = as_dtype(dtype if dtype is not None else array.dtype)
    return CreateOp("from_numpy", array.shape, dt, host=array)


def empty(shape, dtype=None) -> Tensor:
    """An uninitialised tensor, allocated now from the memory pool, stream-ordered on the
    runtime's default stream and without a host wait: work started on another stream is
    ordered after the allocation when it starts (``GpuContext.order_after_allocations``)."""
    shape = normalize_shape(shape)
    dt = as_dtype(dtype)
    _check_size(shape, dt, "cl.empty")
    if current_backend() == "sim":
        flat = np.empty(math.prod(shape), dtype=numpy_dtype(dt))
        return Tensor(HostStorage(flat.ctypes.data, flat.nbytes, flat), dt, shape,
                      origin=user_site())
    storage = _device.gpu().allocate_now(math.prod(shape) * dt.itemsize)
    return Tensor.contiguous(storage, dt, shape, user_site())


# --- wrapping other libraries' arrays ----------------------------------------------------------

def _is_torch(obj) -> bool:
    t = type(obj)
    return t.__module__.startswith("torch") and hasattr(obj, "data_ptr") and \
        hasattr(obj, "is_cuda")


def _span_bytes(shape, strides, itemsize) -> int:
    if math.prod(shape) == 0:
        return 0
    return (sum((n - 1) * s for n, s in zip(shape, strides)) + 1) * itemsize


def _record_ready_on(stream_handle: int):
    """An event recorded now on a foreign producer stream (for ``DeviceStorage.ready``)."""
    from cuda.bindings import driver
    from cutile_lab.runtime.device import gpu
    gpu()                      # creating an event needs the context current in this thread
    err, ev = driver.cuEventCreate(driver.CUevent_flags.CU_EVENT_DISABLE_TIMING)
    if int(err) != 0:
        return None
    driver.cuEventRecord(ev, stream_handle)
    return _OwnedEvent(ev)


class _OwnedEvent:
    """A driver event destroyed when collected; usable where a CUevent is expected."""

    __slots__ = ("ev",)

    def __init__(self, ev):
        self.ev = ev

    def __int__(self):
        return int(self.ev)

    def __del__(self):
        try:
            from cuda.bindings import driver
            driver.cuEventDestroy(self.ev)
        except Exception:
            pass


def _check_strides(strides, what):
    if any(s < 0 for s in strides):
        raise LaunchError(f"{what} has negative strides, which kernel arguments cannot have",
                          help="make a contiguous copy first")


def _wrap_torch(obj, dtype) -> Tensor:
    dt = as_dtype(obj.dtype)
    shape = tuple(obj.shape)
    strides = tuple(obj.stride())
    _check_strides(strides, "the torch tensor")
    if obj.is_cuda:
        import torch
        nbytes = _span_bytes(shape, strides, dt.itemsize)
        stream = torch.cuda.current_stream(obj.device)
        ready = _record_ready_on(int(stream.cuda_stream))
        st = DeviceStorage(obj.data_ptr(), nbytes, obj, obj.device.index or 0, ready, True)
        return Tensor(st, dt, shape, strides, origin=user_site())
    return _wrap_host(obj.numpy() if dt.name != "bf16" else obj.view(__import__("torch").int16)
                      .numpy().view(numpy_dtype(dt)), dt)


def _wrap_cai(obj) -> Tensor:
    cai = obj.__cuda_array_interface__
    from cutile_lab.runtime.dtypes import from_typestr
    dt = from_typestr(cai["typestr"], cai.get("descr"))
    shape = tuple(cai["shape"])
    if cai.get("mask") is not None:
        raise LaunchError("masked __cuda_array_interface__ arrays are not supported")
    if cai.get("strides") is None:
        strides = c_strides(shape)
    else:
        strides = tuple(s // dt.itemsize for s in cai["strides"])
    _check_strides(strides, "the array")
    ptr = int(cai["data"][0])
    stream = cai.get("stream")
    ready = _record_ready_on(int(stream)) if stream not in (None, 0) else None
    st = DeviceStorage(ptr, _span_bytes(shape, strides, dt.itemsize), obj, _device_of(ptr),
                       ready, True)
    return Tensor(st, dt, shape, strides, origin=user_site())


def _device_of(ptr: int) -> int:
    try:
        from cuda.bindings import driver
        err, ordinal = driver.cuPointerGetAttribute(
            driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr)
        return int(ordinal) if int(err) == 0 else 0
    except Exception:
        return 0


def _wrap_dlpack(obj) -> Tensor:
    from cutile_lab.runtime.dlpack import KDL_CPU, KDL_CUDA, KDL_CUDA_MANAGED, import_capsule
    from cutile_lab.runtime.dtypes import from_dlpack
    dev_type, dev_id = obj.__dlpack_device__()
    if dev_type == KDL_CPU:
        return _wrap_host(np.from_dlpack(obj), None)
    if dev_type not in (KDL_CUDA, KDL_CUDA_MANAGED):
        raise LaunchError(f"DLPack device type {dev_type} is not supported")
    from cutile_lab.runtime.device import gpu
    g = gpu()
    consumer = int(g.default_stream.handle)
    try:
        capsule = obj.__dlpack__(stream=consumer, max_version=(1, 1))
    except TypeError:
        capsule = obj.__dlpack__(stream=consumer)
    imp = import_capsule(capsule, obj)
    dt = from_dlpack(imp.code, imp.bits, imp.lanes)
    _check_strides(imp.strides, "the array")
    # the producer ordered our default stream after its work: mark that point
    ready = _record_ready_on(consumer)
    st = DeviceStorage(imp.data_ptr, _span_bytes(imp.shape, imp.strides, dt.itemsize), imp,
                       dev_id, ready, True)
    return Tensor(st, dt, imp.shape, imp.strides, origin=user_site())


def _wrap_host(array: np.ndarray, dtype) -> Tensor:
    """A host array: zero-copy on the simulator where the array can be wrapped as it is, else
    a copy (another dtype, negative or misaligned strides); uploaded (synchronously) on the GPU."""
    dt = as_dtype(dtype if dtype is not None else array.dtype)
    if current_backend() == "sim":
        np_dt = numpy_dtype(dt)
        if array.dtype != np_dt or any(s < 0 for s in array.strides) \
                or array.strides and any(s % array.itemsize for s in array.strides):
            array = np.ascontiguousarray(array, dtype=np_dt)
        # keep the caller's memory (zero-copy): a 1-D element view starting at its data
        strides = tuple(s // array.itemsize for s in array.strides)
        span = _span_bytes(array.shape, strides, array.itemsize)
        flat = np.lib.stride_tricks.as_strided(array, (span // array.itemsize,),
                                               (array.itemsize,))
        st = HostStorage(array.ctypes.data, span, flat)
        return Tensor(st, dt, array.shape, strides, origin=user_site())
    return from_numpy(array, dt).sync()


def asarray(obj, dtype=None) -> Tensor:
    """A ``Tensor`` over ``obj``'s memory, without copying when it is on the tensor's backend.

    Accepts our own tensors, torch/CuPy/JAX arrays (``__dlpack__`` or
    ``__cuda_array_interface__``), NumPy arrays and nested lists (copied to the device on the
    gpu backend; wrapped on the simulator, except a NumPy array of another dtype than asked or
    with negative strides, which is copied as on the GPU: what a kernel writes into such a
    tensor does not reach the array — read it back with ``to_numpy()``).
    """
    if isinstance(obj, Tensor):
        t = obj
    elif isinstance(obj, DeviceOp):
        t = obj.sync()
    elif _is_torch(obj):
        t = _wrap_torch(obj, dtype)
    elif hasattr(obj, "__cuda_array_interface__") and not isinstance(obj, np.ndarray):
        t = _wrap_cai(obj)
    elif hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__") \
            and not isinstance(obj, np.ndarray):
        t = _wrap_dlpack(obj)
    else:
        arr = _host_array(obj, "cl.asarray")
        if dtype is None and arr.dtype == np.float64 and not isinstance(obj, np.ndarray):
            dtype = "f32"       # Python floats become f32, as in the kernels
        if dtype is None and arr.dtype == np.int64 and not isinstance(obj, np.ndarray):
            dtype = "i32"
        return _wrap_host(arr, dtype)
    if dtype is not None and as_dtype(dtype) is not t.dtype:
        raise LaunchError(f"asarray: the array is {t.dtype}, not {as_dtype(dtype)}",
                          help="convert it in its own library first (zero-copy means no casts)")
    return t


__all__ = ["zeros", "ones", "full", "arange", "rand", "randn", "from_numpy", "empty", "asarray",
           "CreateOp", "new_tensor"]
