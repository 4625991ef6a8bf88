"""``Tensor``: a typed, strided view of device memory (gpu backend) or of a NumPy array (sim).

Owns the tensor's metadata (tile-language dtype, shape, strides in elements, offset), views and
slices, host read-back (``to_numpy``), and the export protocols: ``__cuda_array_interface__``
(v3, with a stream) and ``__dlpack__`` on the gpu backend, ``__array_interface__`` and
``__dlpack__`` (CPU) on the simulator. Every data access first asks ``ownership`` whether the
tensor is still alive (not moved into a partition) and not mutably borrowed by in-flight work.
Creation functions live in ``creation``; partitions in ``partition``.
"""
from __future__ import annotations

import functools
import itertools
import math
import operator

import numpy as np

from cutile_lab.diagnostics import Span
from cutile_lab.errors import LaunchError, TensorIndexError
from cutile_lab.language.dtypes import DType
from cutile_lab.runtime import ownership
from cutile_lab.runtime import partition as _partition
from cutile_lab.runtime.callsite import user_call_site, user_site
from cutile_lab.runtime.dtypes import numpy_dtype, to_dlpack, typestr
from cutile_lab.runtime.memory import HostStorage, Storage

_ids = itertools.count(1)


def c_strides(shape) -> tuple[int, ...]:
    """The element strides of a C-contiguous tensor of ``shape`` (kept per shape: every
    allocation and contiguity test asks)."""
    if type(shape) is tuple:
        return _c_strides(shape)
    return _c_strides.__wrapped__(shape)


@functools.lru_cache(maxsize=4096)
def _c_strides(shape) -> tuple[int, ...]:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(int(n), 1)
    return tuple(reversed(strides))


def _index_error(message: str, help: str = "index a tensor with ints, slices and one "
                                            "`...`, e.g. t[0], t[2:8], t[..., 0]"):
    """A ``TensorIndexError`` at the user's line (the lab's error, still an IndexError)."""
    return TensorIndexError(message, help=help, span=user_call_site())


def normalize_shape(shape) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    try:
        out = tuple(operator.index(n) for n in shape)
    except TypeError:
        raise LaunchError(f"bad shape {shape!r}: use an int or a tuple of ints") from None
    if any(n < 0 for n in out):
        raise LaunchError(f"bad shape {out}: sizes must be >= 0")
    return out


class Tensor:
    """A tensor on the gpu or sim backend. ``strides`` count elements, not bytes."""

    __slots__ = ("dtype", "shape", "strides", "offset", "storage", "id", "moved", "_origin",
                 "name", "ptr", "range", "key", "born", "__weakref__")

    def __init__(self, storage: Storage, dtype: DType, shape, strides=None, offset: int = 0,
                 origin: Span | None = None, name: str | None = None):
        self.storage = storage
        self.dtype = dtype
        self.shape = tuple(int(n) for n in shape)
        self.strides = c_strides(self.shape) if strides is None else tuple(int(s) for s in strides)
        self.offset = int(offset)
        self.id = next(_ids)
        self.moved = None            # a MoveRecord once moved into a partition
        # how many moves of this memory came before this view: a later one that overlaps it
        # ends it (see ``dead_view``)
        self.born = len(storage.moves) if storage.moves is not None else 0
        self._origin = origin        # where the user created it: a Span, or a ``user_site``
        self.name = name
        # derived once (the metadata never changes): address of element [0, ...], the byte
        # range the view can touch, and the launch cache's key for it
        self.ptr = ptr = storage.ptr + self.offset * dtype.itemsize
        if strides is None:           # C-contiguous: the range is the elements' bytes
            self.range = (ptr, ptr + math.prod(self.shape) * dtype.itemsize)
        else:
            self.range = self.byte_range()
        self.key = (self.ptr, self.shape, self.strides, dtype.name, storage.backend,
                    getattr(storage, "foreign", False))

    # --- metadata (always allowed, even after a move) -----------------------------------------
    @property
    def origin(self) -> Span | None:
        """Where the user created the tensor (made a ``Span`` when first asked)."""
        o = self._origin
        if isinstance(o, tuple):
            from cutile_lab.runtime.callsite import as_span
            o = self._origin = as_span(o)
        return o

    @origin.setter
    def origin(self, value) -> None:
        self._origin = value

    def __reduce_ex__(self, protocol):
        # a ``user_site`` holds the caller's code object, which pickle cannot carry: the place
        # travels as the ``Span`` it stands for
        self.origin
        if self.moved is not None:
            self.moved.where
        return super().__reduce_ex__(protocol)

    @property
    def backend(self) -> str:
        return self.storage.backend

    @property
    def device(self) -> str:
        if self.backend == "gpu":
            return f"cuda:{self.storage.device_id}"
        return "cpu (simulator)"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def is_contiguous(self) -> bool:
        return self.strides == c_strides(self.shape) or self.size <= 1

    def byte_range(self) -> tuple[int, int]:
        """[lo, hi) byte addresses this view can touch (empty views: lo == hi)."""
        ptr = self.storage.ptr + self.offset * self.dtype.itemsize
        if any(n == 0 for n in self.shape):
            return ptr, ptr
        last = sum((n - 1) * s for n, s in zip(self.shape, self.strides))
        return ptr, ptr + (last + 1) * self.dtype.itemsize

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self) -> str:
        dims = ", ".join(map(str, self.shape))
        text = f"Tensor({self.dtype}[{dims}], {self.device}"
        if not self.is_contiguous:
            text += f", strides={self.strides}"
        if self.moved is not None:
            from cutile_lab.runtime.callsite import describe
            text += f", moved into a partition at {describe(self.moved.where)}"
        return text + ")"

    # --- liveness -----------------------------------------------------------------------------
    def _check(self, what: str, *, host: bool = True, write: bool = False) -> None:
        if self.moved is not None:
            ownership.raise_use_after_move(self, what)
        if self.storage.moves is not None and self.dead_view() is not None:
            from cutile_lab.runtime.partition import raise_dead_view
            raise_dead_view(self, what)
        if host:
            ownership.check_host_access(self, what, write=write)

    def dead_view(self):
        """The move that ended this view (rustc's E0505: a value moved while a borrow of it is
        alive ends the borrow): a move into a partition, after this view was taken, of another
        view of the same memory that overlaps this one. ``None`` while the view is alive."""
        moves = self.storage.moves
        if moves is None or len(moves) <= self.born:
            return None
        lo, hi = self.range
        for rec in moves[self.born:]:
            if rec[0] != self.id and lo < rec[2] and rec[1] < hi:
                return rec
        return None

    # --- views --------------------------------------------------------------------------------
    def _view(self, shape, strides, offset) -> "Tensor":
        return Tensor(self.storage, self.dtype, shape, strides, offset, origin=self._origin)

    @classmethod
    def contiguous(cls, storage: Storage, dtype: DType, shape: tuple[int, ...],
                   origin=None) -> "Tensor":
        """A C-contiguous tensor over all of ``storage`` (``storage.nbytes`` are its elements'
        bytes) with ``shape`` already a tuple of ints (what allocation makes): ``__init__``
        without its normalisation of the arguments."""
        t = cls.__new__(cls)
        t.storage, t.dtype, t.shape = storage, dtype, shape
        t.strides = strides = _c_strides(shape)
        t.offset = 0
        t.id = next(_ids)
        t.moved = None
        t.born = len(storage.moves) if storage.moves is not None else 0
        t._origin = origin
        t.name = None
        t.ptr = ptr = storage.ptr
        t.range = (ptr, ptr + storage.nbytes)
        t.key = (ptr, shape, strides, dtype.name, storage.backend, False)
        return t

    def _alias(self) -> "Tensor":
        """A tensor object of its own over exactly this view (what a partition holds): the
        derived metadata is copied, not recomputed."""
        t = Tensor.__new__(Tensor)
        t.storage, t.dtype, t.shape, t.strides = self.storage, self.dtype, self.shape, self.strides
        t.offset, t.ptr, t.range, t.key = self.offset, self.ptr, self.range, self.key
        t.id = next(_ids)
        t.moved = None
        moves = self.storage.moves
        t.born = len(moves) if moves is not None else 0
        t._origin = self._origin
        t.name = self.name
        return t

    def __getitem__(self, key) -> "Tensor":
        self._check("slice", host=False)
        if not isinstance(key, tuple):
            key = (key,)
        n_ellipsis = sum(k is Ellipsis for k in key)
        if n_ellipsis > 1:
            raise _index_error("an index can only have a single ellipsis ('...')")
        if n_ellipsis:
            i = next(j for j, k in enumerate(key) if k is Ellipsis)
            fill = self.ndim - (len(key) - 1)
            key = key[:i] + (slice(None),) * fill + key[i + 1:]
        if len(key) > self.ndim:
            raise _index_error(f"too many indices for a {self.ndim}-d tensor {self.shape}")
        key = key + (slice(None),) * (self.ndim - len(key))
        shape, strides, offset = [], [], self.offset
        for k, n, s in zip(key, self.shape, self.strides):
            if isinstance(k, slice):
                try:
                    start, stop, step = k.indices(n)
                except TypeError:
                    raise _index_error(f"unsupported slice {k!r}: its bounds and step must be "
                                       "ints or None") from None
                if step < 0:
                    raise _index_error("negative slice steps are not supported (kernel "
                                       "arguments need non-negative strides)",
                                       "copy the reversed data with to_numpy()[::-1]")
                length = len(range(start, stop, step))
                offset += start * s if length else 0
                shape.append(length)
                strides.append(s * step)
            elif k is None:
                raise _index_error("None (new axis) is not supported",
                                   "use t.reshape(...) to add an axis of size 1")
            else:
                try:
                    i = operator.index(k)
                except TypeError:
                    raise _index_error(f"unsupported index {k!r}: use ints and slices") from None
                if i < 0:
                    i += n
                if not 0 <= i < n:
                    raise _index_error(f"index {k} is out of bounds for a dimension of size "
                                       f"{n}", f"an index of this axis is from {-n} to {n - 1}")
                offset += i * s
        return self._view(shape, strides, offset)

    def reshape(self, *shape) -> "Tensor":
        """A view with a new shape (contiguous tensors only); one dimension may be -1."""
        self._check("reshape", host=False)
        try:
            if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
                shape = tuple(shape[0])
            shape = [operator.index(n) for n in shape]
        except TypeError:
            raise LaunchError(f"reshape: bad shape {shape[0] if len(shape) == 1 else shape!r}",
                              span=user_call_site(),
                              help="give ints (one of them may be -1), e.g. t.reshape(4, -1) "
                                   "or t.reshape((4, 8))") from None
        if any(n < -1 for n in shape):
            raise LaunchError(f"reshape: bad shape {tuple(shape)}: sizes must be >= 0 (or one "
                              "-1)", span=user_call_site(),
                              help="give sizes >= 0, and at most one -1 for the size to infer, "
                                   "e.g. t.reshape(4, -1)")
        if shape.count(-1) > 1:
            raise LaunchError("reshape: only one dimension can be -1")
        if -1 in shape:
            rest = math.prod(n for n in shape if n != -1)
            shape[shape.index(-1)] = self.size // rest if rest else 0
        if math.prod(shape) != self.size:
            raise LaunchError(f"cannot reshape a tensor of shape {self.shape} into {tuple(shape)}")
        if not self.is_contiguous:
            raise LaunchError("reshape needs a contiguous tensor",
                              help="copy it first, or slice after reshaping")
        return self._view(shape, c_strides(shape), self.offset)

    @property
    def T(self) -> "Tensor":
        """The transpose (a strided view: reversed shape and strides)."""
        self._check("transpose", host=False)
        return self._view(self.shape[::-1], self.strides[::-1], self.offset)

    # --- host access --------------------------------------------------------------------------
    def to_numpy(self) -> np.ndarray:
        """A NumPy copy of the data (waits for nothing: in-flight writers make this an error)."""
        self._check("read it on the host (to_numpy)")
        np_dt = numpy_dtype(self.dtype)
        if self.backend == "sim":
            return np.array(self._host_view(), copy=True)
        from cutile_lab.runtime import device as _dev
        from cutile_lab.runtime.memory import copy as _copy
        ctx = _dev.gpu()
        lo, hi = self.byte_range()
        span = hi - lo
        flat = np.empty(span // self.itemsize, dtype=np_dt)
        if span:
            stream = ctx.default_stream
            ownership.wait_ready(self.storage, stream)
            _copy(flat.ctypes.data, lo, span, stream)
            stream.sync()
        if self.size == 0:
            return np.empty(self.shape, dtype=np_dt)
        view = np.lib.stride_tricks.as_strided(
            flat, self.shape, tuple(s * self.itemsize for s in self.strides))
        return np.array(view, copy=True)

    numpy = to_numpy

    def __array__(self, dtype=None, copy=None):
        out = self.to_numpy()
        return out.astype(dtype) if dtype is not None else out

    def item(self):
        if self.size != 1:
            raise LaunchError(f"item() needs a one-element tensor, this one has {self.size}")
        return self.to_numpy().reshape(()).item()

    def tolist(self):
        return self.to_numpy().tolist()

    def _host_view(self) -> np.ndarray:
        """Sim backend: the NumPy view of this tensor's elements (writable, no copy)."""
        assert isinstance(self.storage, HostStorage)
        base = self.storage.array
        if self.size == 0:
            return np.empty(self.shape, dtype=base.dtype)
        return np.lib.stride_tricks.as_strided(
            base[self.offset:], self.shape, tuple(s * base.itemsize for s in self.strides))

    # --- export protocols ---------------------------------------------------------------------
    @property
    def __cuda_array_interface__(self) -> dict:
        if self.backend != "gpu":
            raise AttributeError("a simulator tensor lives in host memory: use "
                                 "__array_interface__ / np.asarray(t)")
        self._check("export it (__cuda_array_interface__)")
        stream = ownership.pending_reader_stream(self)
        if stream is None and not self.storage.foreign:
            from cutile_lab.runtime import device as _dev
            g = _dev._context
            if g is not None and g.alloc_epoch:
                # ``cl.empty`` allocates on the default stream without a host wait: the consumer
                # orders its work after that stream
                stream = _dev.gpu().stream_key(g.default_stream)
        return {
            "shape": self.shape,
            "typestr": typestr(self.dtype),
            "data": (self.ptr, False),
            "version": 3,
            "strides": None if self.is_contiguous else
            tuple(s * self.itemsize for s in self.strides),
            "stream": stream,
        }

    @property
    def __array_interface__(self) -> dict:
        if self.backend != "sim":
            raise AttributeError("a GPU tensor is not in host memory: use t.to_numpy()")
        self._check("export it (__array_interface__)")
        return self._host_view().__array_interface__

    def __dlpack_device__(self) -> tuple[int, int]:
        from cutile_lab.runtime.dlpack import KDL_CPU, KDL_CUDA
        if self.backend == "gpu":
            return (KDL_CUDA, self.storage.device_id)
        return (KDL_CPU, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        from cutile_lab.runtime.dlpack import export_capsule
        self._check("export it (__dlpack__)")
        if copy:
            raise BufferError("cutile_lab tensors are exported without copying (copy=True asked)")
        mine = self.__dlpack_device__()
        if dl_device is not None and tuple(dl_device) != mine:
            raise BufferError(f"this tensor is on DLPack device {mine}, not {tuple(dl_device)}")
        if self.backend == "gpu" and stream is not None and stream != -1:
            ownership.order_consumer_stream(self, stream)
            from cutile_lab.runtime import device as _dev
            g = _dev.gpu()
            if g.alloc_epoch:         # memory ``cl.empty`` made on the default stream
                g.order_after_allocations(int(stream), int(stream))
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        return export_capsule(data_ptr=self.ptr, shape=self.shape, strides=self.strides,
                              dl_dtype=to_dlpack(self.dtype), device_type=mine[0],
                              device_id=mine[1], owner=self, versioned=versioned)

    # --- partitions (see runtime.partition) ---------------------------------------------------
    def partition(self, tile_shape):
        """Move this tensor into a ``Partition`` of ``tile_shape`` tiles (this name dies)."""
        return _partition.partition(self, tile_shape, user_site(2))

    def partition_mut(self, tile_shape):
        """Borrow this tensor mutably as a ``Partition``; usable again once the work is done.
        Also a context manager: ``with t.partition_mut(128) as p: ...``."""
        return _partition.partition_mut(self, tile_shape, user_site(2))


__all__ = ["Tensor", "c_strides", "normalize_shape"]
