"""Global memory as the simulator sees it: kernel arguments, the memory ops, and what they record.

This module owns ``SimArray`` (an array argument inside a simulated kernel: a NumPy view plus the
maps that record which tile touched which element), ``Tracker`` (those maps for one argument: the
tile that last wrote each element, the store site that wrote it, the tiles that read it), the
views of an array (``Array.slice``, ``get_raw_memory``, ``tiled_view``), ``ct.Slice`` and the
enums of the memory ops. The memory half of the ``ct`` namespace (``MemoryOps``, in
``memory_ops``) is built from ``memory_tiles`` (``load``/``store`` on the tile space with padding
and masking, ``num_tiles``, tiled views), ``memory_pointers`` (``gather``/``scatter``, atomics,
advanced indexing) and ``memory_access`` (what every access records, and the runtime diagnostics
they raise: accesses wholly out of range, out-of-bounds indices, and data races (write-write and
read-write between different tiles of one launch)).

The ops need a ``launch`` object (``launch_state.Launch``) for the current tile id, the current
store site and the diagnostics sink; they never decide what a diagnostic looks like to the user.

Semantics, as cuTile documents them (``cuda/tile/_stub.py``):

* ``load``: a tile partly outside the array is padded per ``padding_mode`` (ZERO, NEG_ZERO, NAN,
  POS_INF, NEG_INF; ``UNDETERMINED``, the default, pads with zero here: on the GPU the values are
  unspecified, so a kernel that depends on them is wrong). A tile wholly outside is undefined on
  the GPU: reported (SIM001) and padded here.
* ``store``: elements outside the array are dropped; a tile wholly outside is undefined on the GPU:
  reported (SIM002) and dropped here. The tile is converted to the array's dtype with the implicit
  casts cuTile allows (f32 into an f16 array needs an explicit ``astype``).
* ``gather``/``scatter``/atomics: with ``check_bounds=True`` out-of-range indices are skipped (a
  warning, SIM004, since it is defined but rarely intended); with ``check_bounds=False`` they are
  undefined (SIM003) and skipped here. Duplicate indices in one ``scatter`` keep the last value
  (unspecified order on the GPU); atomics with duplicate indices are applied one after another.
"""
from __future__ import annotations

import enum
import operator

import numpy as np

from cutile_lab.simulation import dtypes as D
from cutile_lab.simulation.dtypes import INT, SimDType
from cutile_lab.simulation.tile_value import operand
from cutile_lab.simulation.tiles import KernelError, Tile

# Owner-map values besides tile ids.
UNWRITTEN = -1
SHARED_ATOMIC = -2     # updated atomically by more than one tile
MULTI_READER = -3
MAX_MASKED = 4096


class PaddingMode(enum.Enum):
    UNDETERMINED = "undetermined"
    ZERO = "zero"
    NEG_ZERO = "neg_zero"
    NAN = "nan"
    POS_INF = "pos_inf"
    NEG_INF = "neg_inf"


class MemoryOrder(enum.Enum):
    WEAK = "weak"
    RELAXED = "relaxed"
    ACQUIRE = "acquire"
    RELEASE = "release"
    ACQ_REL = "acq_rel"


class MemoryScope(enum.Enum):
    NONE = "none"
    BLOCK = "block"
    DEVICE = "device"
    SYS = "sys"


class RoundingMode(enum.Enum):
    RN = "nearest_even"
    RZ = "zero"
    RM = "negative_inf"
    RP = "positive_inf"
    RA = "nearest_away"
    FULL = "full"
    APPROX = "approx"
    RZI = "nearest_int_to_zero"


PAD_VALUES = {"UNDETERMINED": 0.0, "ZERO": 0.0, "NEG_ZERO": -0.0, "NAN": float("nan"),
              "POS_INF": float("inf"), "NEG_INF": float("-inf")}


def enum_name(v) -> str:
    return getattr(v, "name", str(v))


def permuted(a: np.ndarray, perm) -> np.ndarray:
    """A record map seen in a load's or store's axis order (``perm``: None for the identity)."""
    return a.transpose(perm) if perm is not None else a


class Tracker:
    """What one launch did to one argument's elements. Maps have the argument's full shape."""

    def __init__(self, name: str, shape: tuple[int, ...]):
        self.name = name
        self.names = [name]
        self.shape = shape
        self._owner: np.ndarray | None = None
        self._site: np.ndarray | None = None
        self.reader: np.ndarray | None = None
        self.atomic: np.ndarray | None = None
        self.conflict: np.ndarray | None = None
        self.epoch: np.ndarray | None = None
        self.reader_epoch: np.ndarray | None = None
        self.writes: dict[int, int] = {}
        self.reads: dict[int, int] = {}
        # reads are marked in ``reader`` only once something writes this memory; until then
        # they wait here (most inputs are never written, so their reads cost nothing)
        self.pending: list | None = []
        # stores that crossed the edge: (tile id, nominal box ((start, stop) per axis))
        self.masked: list[tuple[int, tuple[tuple[int, int], ...]]] = []

    @property
    def owner(self) -> np.ndarray:
        """The linear id of the tile that last wrote each element (-1: none)."""
        if self._owner is None:
            self._owner = np.full(self.shape, UNWRITTEN, dtype=np.int32)
        return self._owner

    @property
    def site(self) -> np.ndarray:
        """The store site that last wrote each element (-1: none)."""
        if self._site is None:
            self._site = np.full(self.shape, -1, dtype=np.int32)
        return self._site

    def reader_map(self) -> np.ndarray:
        if self.reader is None:
            self.reader = np.full(self.shape, UNWRITTEN, dtype=np.int32)
        return self.reader

    def atomic_map(self) -> np.ndarray:
        if self.atomic is None:
            self.atomic = np.zeros(self.shape, dtype=bool)
        return self.atomic

    def conflict_map(self) -> np.ndarray:
        if self.conflict is None:
            self.conflict = np.zeros(self.shape, dtype=bool)
        return self.conflict

    def epoch_map(self) -> np.ndarray:
        """The epoch of its tile at which each element was last written (happens-before)."""
        if self.epoch is None:
            self.epoch = np.zeros(self.shape, dtype=np.int32)
        return self.epoch

    def reader_epoch_map(self) -> np.ndarray:
        if self.reader_epoch is None:
            self.reader_epoch = np.zeros(self.shape, dtype=np.int32)
        return self.reader_epoch


class SimArray:
    """An array argument inside a simulated kernel (cuTile's ``Array``): ``.shape``,
    ``.dtype``, ``.strides`` (in elements), ``.ndim``, ``.slice(axis, start, stop)``,
    ``.tiled_view(tile_shape)``. Loads and stores through it are recorded in its tracker."""

    __slots__ = ("data", "dtype", "name", "tracker", "key", "_views", "ops")

    def __init__(self, data: np.ndarray, dtype: SimDType, name: str, tracker: Tracker | None,
                 key: tuple = (), ops=None):
        self.ops = ops
        self.data = data
        self.dtype = dtype
        self.name = name
        self.tracker = tracker
        self.key = key
        self._views: dict = {}

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def strides(self) -> tuple[int, ...]:
        return tuple(s // self.data.itemsize for s in self.data.strides)

    def maps(self, which: str) -> np.ndarray:
        """The tracker's map ``which`` ('owner', 'site', 'reader', 'atomic', 'conflict'),
        viewed like this array."""
        v = self._views.get(which)
        if v is None:
            t = self.tracker
            full = {"owner": t.owner, "site": t.site}.get(which)
            if full is None:
                full = getattr(t, which + "_map")()
            v = full[self.key] if self.key else full
            self._views[which] = v
        return v

    def get_raw_memory(self) -> "RawArrayMemory":
        """cuTile's ``Array.get_raw_memory()``: loads, stores and atomics by element offset
        from the array's base pointer."""
        return RawArrayMemory(self)

    def slice(self, axis, start, stop) -> "SimArray":
        ax = operator.index(axis)
        if not -self.ndim <= ax < self.ndim:
            raise KernelError(f"slice axis {ax} is out of range for an array of rank {self.ndim}")
        ax %= self.ndim
        lo, hi = operator.index(start), operator.index(stop)
        n = self.shape[ax]
        if not (0 <= lo < n and lo <= hi <= n):
            raise KernelError(f"slice [{lo}, {hi}) is out of range for axis {ax} of "
                              f"`{self.name}` (size {n})",
                              help="it needs 0 <= start < N and start <= stop <= N")
        sl = [slice(None)] * self.ndim
        sl[ax] = slice(lo, hi)
        sl = tuple(sl)
        key = _compose_key(self.key, sl, self.tracker.shape if self.tracker else self.shape)
        return SimArray(self.data[sl], self.dtype, self.name, self.tracker, key, self.ops)

    def tiled_view(self, tile_shape, *, padding_mode=PaddingMode.UNDETERMINED,
                   traversal_steps=None) -> "TiledView":
        return TiledView(self, tile_shape, padding_mode, traversal_steps)

    def __repr__(self) -> str:
        return f"<array {self.name}: {self.dtype}{list(self.shape)}>"


def _compose_key(outer: tuple, inner: tuple, root_shape) -> tuple:
    """The slicing of the root that equals root[outer][inner] (basic slices only)."""
    if not outer:
        return inner
    out = []
    for o, i, n in zip(outer, inner, root_shape):
        o0 = o.start or 0
        if i.start is None and i.stop is None:
            out.append(o)
        else:
            out.append(slice(o0 + (i.start or 0), o0 + i.stop))
    return tuple(out)


class RawArrayMemory:
    """``array.get_raw_memory()``: element offsets from the base pointer become indices of the
    (row-major contiguous) array, so every access is recorded and checked like a gather,
    scatter or atomic; an offset outside the array is out of bounds (SIM003: the GPU does not
    check raw offsets)."""

    __slots__ = ("array",)

    def __init__(self, array: SimArray):
        self.array = array

    @property
    def dtype(self):
        return self.array.dtype

    def _indices(self, offset, what: str):
        arr = self.array
        if not arr.data.flags.c_contiguous:
            raise KernelError(f"{what}: raw memory of a non-contiguous array (`{arr.name}`) is "
                              "not simulated", help="pass a contiguous array")
        va, vd = operand(offset)
        if vd is not None and vd.category != INT:
            raise KernelError(f"{what}: the offset must be an integer, got {vd}")
        off = np.asarray(va).astype(np.int64)
        inside = (off >= 0) & (off < max(arr.data.size, 1))
        flat = np.where(inside, off, 0)
        idx = np.unravel_index(flat, arr.shape) if arr.ndim else ()
        idx = [np.where(inside, i, -1) if k == 0 else np.asarray(i) for k, i in enumerate(idx)]
        return tuple(Tile(i.astype(np.int64), D.int64) for i in idx)

    def load_offset(self, offset, /, *, mask=None, padding_value=0, latency=None) -> Tile:
        ops = self.array.ops
        return ops.gather(self.array, self._indices(offset, "load_offset"), mask=mask,
                          padding_value=padding_value, check_bounds=False)

    def store_offset(self, offset, value, /, *, mask=None, latency=None) -> None:
        self.array.ops.scatter(self.array, self._indices(offset, "store_offset"), value,
                               mask=mask, check_bounds=False)

    def atomic_cas_offset(self, offset, expected, desired, /, *, mask=None,
                          memory_order=None, memory_scope=None) -> Tile:
        return self.array.ops._atomic("cas", self.array, self._indices(offset, "atomic_cas"),
                                      desired, False, expected=expected, mask=mask,
                                      what="atomic_cas_offset", memory_order=memory_order)

    def _rmw(op):
        def method(self, offset, update, /, *, mask=None, memory_order=None,
                   memory_scope=None) -> Tile:
            return self.array.ops._atomic(op, self.array, self._indices(offset, f"atomic_{op}"),
                                          update, False, mask=mask,
                                          what=f"atomic_{op}_offset",
                                          memory_order=memory_order)
        method.__name__ = f"atomic_{op}_offset"
        return method

    atomic_xchg_offset = _rmw("xchg")
    atomic_add_offset = _rmw("add")
    atomic_max_offset = _rmw("max")
    atomic_min_offset = _rmw("min")
    atomic_and_offset = _rmw("and")
    atomic_or_offset = _rmw("or")
    atomic_xor_offset = _rmw("xor")
    del _rmw


class TiledView:
    """``array.tiled_view(tile_shape)``: load/store/num_tiles by tile index, with padding."""

    def __init__(self, array: SimArray, tile_shape, padding_mode, traversal_steps):
        self.array = array
        shape = tile_shape if isinstance(tile_shape, (tuple, list)) else (tile_shape,)
        self.tile_shape = tuple(operator.index(s) for s in shape)
        if len(self.tile_shape) != array.ndim:
            raise KernelError(f"tile shape {self.tile_shape} does not match the rank of "
                              f"`{array.name}` ({array.ndim})")
        self.padding_mode = padding_mode
        if traversal_steps is None:
            self.traversal_steps = self.tile_shape
        else:
            st = traversal_steps if isinstance(traversal_steps, (tuple, list)) \
                else (traversal_steps,)
            self.traversal_steps = tuple(operator.index(s) for s in st)

    @property
    def dtype(self) -> SimDType:
        return self.array.dtype

    def load(self, index, *, check_bounds=True, latency=None, allow_tma=None) -> Tile:
        return self.array.ops.tv_load(self, index, check_bounds=check_bounds)

    def store(self, index, tile, *, check_bounds=True, latency=None, allow_tma=None) -> None:
        self.array.ops.tv_store(self, index, tile, check_bounds=check_bounds)

    def num_tiles(self, axis) -> Tile:
        return self.array.ops.tv_num_tiles(self, axis)


class Slice:
    """``ct.Slice(start, length)``: a dense entry of advanced indexing."""

    def __init__(self, start, length, /):
        self.start = operator.index(start)
        self.length = operator.index(length)
        if self.length <= 0 or self.length & (self.length - 1):
            raise KernelError(f"Slice length {self.length} is not a power of two")

