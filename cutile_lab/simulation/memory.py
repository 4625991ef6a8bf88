"""Global memory as the simulator sees it: kernel arguments, the memory ops, and what they record.

Owns ``SimArray`` (an array argument inside a simulated kernel: a NumPy view plus the maps that
record which tile touched which element), ``Tracker`` (those maps for one argument: the tile that
last wrote each element, the store site that wrote it, the tiles that read it), the memory half of
the ``ct`` namespace (``load``/``store`` on the tile space with padding and masking,
``gather``/``scatter``, atomics, ``num_tiles``, tiled views, ``Array.slice``) and the runtime
diagnostics they raise: accesses wholly out of range, out-of-bounds indices, and data races
(write-write and read-write between different tiles of one launch).

It needs a ``launch`` object (``engine.Launch``) for the current tile id, the current store site
and the diagnostics sink; it never decides what a diagnostic looks like to the user.

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
from cutile_lab.simulation.dtypes import FLOAT, INT, PromotionError, SimDType
from cutile_lab.simulation.tile_shapes import axis_arg
from cutile_lab.simulation.tile_value import operand
from cutile_lab.simulation.tiles import KernelError, Tile, check_pow2_shape

# Owner-map values besides tile ids.
UNWRITTEN = -1
SHARED_ATOMIC = -2     # updated atomically by more than one tile
_MULTI_READER = -3
_MAX_MASKED = 4096


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


_PAD_VALUES = {"UNDETERMINED": 0.0, "ZERO": 0.0, "NEG_ZERO": -0.0, "NAN": float("nan"),
               "POS_INF": float("inf"), "NEG_INF": float("-inf")}


def _enum_name(v) -> str:
    return getattr(v, "name", str(v))


def _view(a: np.ndarray, perm) -> np.ndarray:
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
                 key: tuple = (), ops: "MemoryOps | None" = None):
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


def _index_items(index, ndim: int, what: str) -> tuple[int, ...]:
    items = index if isinstance(index, (tuple, list)) else (index,)
    if len(items) != ndim:
        raise KernelError(f"{what}: index {tuple(items)!r} has {len(items)} item(s) but the "
                          f"array has rank {ndim}")
    out = []
    for v in items:
        if type(v) is int:
            out.append(v)
        elif type(v) is Tile:
            if v.a.ndim or v.dtype.category not in (INT,):
                raise KernelError(f"{what}: an index must be an integer scalar, got a "
                                  f"{v.dtype} tile of shape {v.shape}")
            out.append(int(v.a))
        else:
            try:
                out.append(operator.index(v))
            except TypeError:
                raise KernelError(f"{what}: an index must be an integer, got {v!r}") from None
    return tuple(out)


def _order(order, ndim: int) -> tuple[int, ...] | None:
    """None for the identity order; else the axis permutation."""
    if order == "C" or order is None:
        return None
    if order == "F":
        perm = tuple(range(ndim - 1, -1, -1))
    else:
        perm = tuple(operator.index(o) for o in order)
        if sorted(perm) != list(range(ndim)):
            raise KernelError(f"order {order!r} is not a permutation of the array's {ndim} axes")
    return None if perm == tuple(range(ndim)) else perm


def _region(extent, index, shape, steps):
    """(array slices, tile slices, status) with status 0: inside, 1: partly, 2: wholly outside."""
    arr, til = [], []
    status = 0
    for n, i, s, st in zip(extent, index, shape, steps):
        start = i * st
        stop = start + s
        lo = start if start > 0 else 0
        hi = stop if stop < n else n
        if lo >= hi:
            return None, None, 2
        if lo != start or hi != stop:
            status = 1
        arr.append(slice(lo, hi))
        til.append(slice(lo - start, hi - start))
    return tuple(arr), tuple(til), status


class MemoryOps:
    """The memory half of the ``ct`` namespace, bound to one launch."""

    def __init__(self, launch):
        self.launch = launch

    # --- helpers ---------------------------------------------------------------------------
    def _array(self, a, what: str) -> SimArray:
        if type(a) is SimArray:
            return a
        raise KernelError(f"{what} needs an array argument of the kernel, got "
                          f"{'a tile' if type(a) is Tile else type(a).__name__}",
                          help="load from / store to the kernel's tensor parameters")

    def _record_read(self, arr: SimArray, sel, perm, count: int) -> None:
        launch = self.launch
        tid = launch.tid
        tr = arr.tracker
        if tr is None:
            return
        tr.reads[tid] = tr.reads.get(tid, 0) + count
        if tr.pending is not None:     # nothing written yet: remember, mark on the first write
            tr.pending.append((tid, arr, sel, perm))
            return
        own = arr.maps("owner")
        if perm is not None:
            own = own.transpose(perm)
        o = own[sel]
        bad = (o != UNWRITTEN) & (o != tid)
        if bad.any():
            bad &= ~launch.ordered_before(o, _view(arr.maps("epoch"), perm)[sel])
        if bad.any():
            smap = arr.maps("site")
            if perm is not None:
                smap = smap.transpose(perm)
            launch.read_write_race(arr, np.unique(o[bad]), int(bad.sum()), reader_side=True,
                                   sites=np.unique(smap[sel][bad]))
        self._mark_read(arr, sel, perm, tid)

    def _mark_read(self, arr: SimArray, sel, perm, tid: int) -> None:
        rmap = arr.maps("reader")
        if perm is not None:
            rmap = rmap.transpose(perm)
        r = rmap[sel]
        mine = (r == UNWRITTEN) | (r == tid)
        if self.launch.clocks and not mine.all():   # an earlier reader ordered before us
            mine |= self.launch.ordered_before(r, _view(arr.maps("reader_epoch"), perm)[sel])
        new = np.where(mine, tid, _MULTI_READER).astype(np.int32)
        if all(type(s_) is slice for s_ in sel):
            np.copyto(r, new)
        else:
            rmap[sel] = new
        if self.launch.clocks:
            _view(arr.maps("reader_epoch"), perm)[sel] = self.launch.epoch()

    def _record_write(self, arr: SimArray, sel, perm, count: int, *, atomic=False) -> None:
        launch = self.launch
        tid = launch.tid
        tr = arr.tracker
        if tr is None:
            return
        if tr.pending is not None:     # the first write: mark the reads made so far
            for rtid, rarr, rsel, rperm in tr.pending:
                self._mark_read(rarr, rsel, rperm, rtid)
            tr.pending = None
        site = launch.site()
        own = arr.maps("owner")
        smap = arr.maps("site")
        if perm is not None:
            own = own.transpose(perm)
            smap = smap.transpose(perm)
        o = own[sel]
        if tr.reader is not None:
            rmap = arr.maps("reader")
            r = (rmap.transpose(perm) if perm is not None else rmap)[sel]
            bad = (r != UNWRITTEN) & (r != tid)
            if bad.any():
                bad &= ~launch.ordered_before(r, _view(arr.maps("reader_epoch"), perm)[sel])
            if bad.any():
                launch.read_write_race(arr, np.unique(r[bad]), int(bad.sum()),
                                       reader_side=False, sites=None)
        other = (o != UNWRITTEN) & (o != tid)
        new_owner = tid
        if other.any():
            # accesses ordered before this one (through atomics: locks, flags) are no race
            unordered = other & ~launch.ordered_before(o, _view(arr.maps("epoch"), perm)[sel])
            if tr.atomic is not None:
                amap = arr.maps("atomic")
                a_prev = (amap.transpose(perm) if perm is not None else amap)[sel]
            else:
                a_prev = np.zeros(o.shape, dtype=bool)
            # atomics by several tiles on one element are fine; anything else is a race
            racy = unordered & ~a_prev if atomic else unordered
            if racy.any():
                prev_sites = smap[sel][racy]
                prev_tiles = o[racy]
                cmap = arr.maps("conflict")
                cm = cmap.transpose(perm) if perm is not None else cmap
                if all(type(s_) is slice for s_ in sel):
                    cm[sel][racy] = True
                else:
                    cm[tuple(np.broadcast_to(ix, racy.shape)[racy] for ix in sel)] = True
                launch.write_race(arr, prev_tiles, prev_sites, site, int(racy.sum()))
            if atomic:
                new_owner = np.where(other & a_prev, SHARED_ATOMIC, tid).astype(np.int32)
        if atomic:
            amap = arr.maps("atomic")
            am = amap.transpose(perm) if perm is not None else amap
            am[sel] = True
        own[sel] = new_owner
        smap[sel] = site
        if launch.clocks:
            _view(arr.maps("epoch"), perm)[sel] = launch.epoch()
        if not atomic:
            launch.progress += 1
        tr.writes[tid] = tr.writes.get(tid, 0) + count

    # --- tile-space load / store -----------------------------------------------------------
    def load(self, array, /, index, shape, *, order="C", padding_mode=PaddingMode.UNDETERMINED,
             check_bounds=True, latency=None, allow_tma=None, memory_order=MemoryOrder.WEAK,
             memory_scope=MemoryScope.NONE) -> Tile:
        arr = self._array(array, "load")
        ndim = arr.data.ndim
        idx = _index_items(index, ndim, "load")
        if isinstance(shape, (tuple, list)):
            tshape = tuple(shape)
        else:
            tshape = (shape,)
        for s in tshape:
            if type(s) is not int or s <= 0 or s & (s - 1):
                check_pow2_shape(tshape)
        scalar = len(tshape) == 0
        if scalar:
            tshape = (1,) * ndim
        elif len(tshape) != ndim:
            raise KernelError(f"load: tile shape {tshape} does not match the rank of "
                              f"`{arr.name}` ({ndim})",
                              help="give one tile dimension per array dimension")
        perm = _order(order, ndim) if order != "C" else None
        data = arr.data if perm is None else arr.data.transpose(perm)
        return self._load_region(arr, data, perm, idx, tshape, tshape, padding_mode,
                                 check_bounds, memory_order, scalar, "load")

    def _load_region(self, arr, data, perm, idx, tshape, steps, padding_mode, check_bounds,
                     memory_order, scalar, what) -> Tile:
        sel, tsel, status = _region(data.shape, idx, tshape, steps)
        dt = arr.dtype
        if status == 0:
            out = np.array(data[sel])
            count = out.size
        else:
            pname = _enum_name(padding_mode)
            pad = _PAD_VALUES.get(pname, 0.0)
            if dt.category != FLOAT:
                pad = 0
            out = np.full(tshape, pad, dtype=dt.np)
            if status == 1:
                out[tsel] = data[sel]
                count = int(np.prod([s.stop - s.start for s in sel]))
                if check_bounds is False:
                    self.launch.report("SIM005", "error",
                                       f"{what} with check_bounds=False reaches outside "
                                       f"`{arr.name}`",
                                       detail=f"tile index {idx}, tile shape {tshape}, array "
                                              f"shape {data.shape}",
                                       help="keep check_bounds=True (the default) for tiles "
                                            "that can cross the array's edge")
            else:
                count = 0
                self.launch.report(
                    "SIM001", "error",
                    f"{what} of a tile wholly outside `{arr.name}`",
                    detail=f"tile index {idx} with tile shape {tshape} lies outside shape "
                           f"{data.shape}",
                    help="on the GPU this is undefined (the simulator returns padding); "
                         "check the index, or the grid")
        if count and self.launch.record and _enum_name(memory_order) == "WEAK":
            self._record_read(arr, sel, perm, count)
        if scalar:
            out = out.reshape(())
        return Tile(out, dt)

    def store(self, array, /, index, tile, *, order="C", check_bounds=True, latency=None,
              allow_tma=None, memory_order=MemoryOrder.WEAK,
              memory_scope=MemoryScope.NONE) -> None:
        arr = self._array(array, "store")
        ndim = arr.data.ndim
        idx = _index_items(index, ndim, "store")
        values = self._stored_values(tile, arr, "store")
        if values.ndim == 0:
            values = values.reshape((1,) * ndim)
        elif values.ndim != ndim:
            raise KernelError(f"store: a tile of shape {values.shape} cannot be stored into "
                              f"`{arr.name}` of rank {ndim}",
                              help="the tile's rank must match the array's (reshape it, e.g. "
                                   "`t.reshape((1, N))`), or store a scalar")
        perm = _order(order, ndim) if order != "C" else None
        data = arr.data if perm is None else arr.data.transpose(perm)
        self._store_region(arr, data, perm, idx, values, values.shape, check_bounds, "store",
                           memory_order)

    def _stored_values(self, tile, arr: SimArray, what: str) -> np.ndarray:
        va, vd = operand(tile)
        try:
            if not self.launch.types_checked:    # else cuTile's own front end checked it
                D.check_implicit_cast(vd, va, arr.dtype)
        except PromotionError as e:
            raise KernelError(f"{what}: the tile is incompatible with `{arr.name}`'s dtype: {e}",
                              help=f"convert explicitly, e.g. `t.astype({arr.dtype.short})`") \
                from None
        if vd is None:
            return np.asarray(D.convert(va, None, arr.dtype))
        if vd is arr.dtype:
            return np.asarray(va)
        return np.asarray(D.convert(va, vd, arr.dtype))

    def _store_region(self, arr, data, perm, idx, values, tshape, check_bounds, what,
                      memory_order, steps=None) -> None:
        sel, tsel, status = _region(data.shape, idx, tshape, steps or tshape)
        if status == 2:
            self.launch.report(
                "SIM002", "error", f"{what} of a tile wholly outside `{arr.name}`",
                detail=f"tile index {idx} with tile shape {tshape} lies outside shape "
                       f"{data.shape}",
                help="on the GPU this is undefined (the simulator drops it); check the index, "
                     "or the grid")
            return
        if status == 1:
            if check_bounds is False:
                self.launch.report("SIM005", "error",
                                   f"{what} with check_bounds=False reaches outside "
                                   f"`{arr.name}`",
                                   detail=f"tile index {idx}, tile shape {tshape}, array shape "
                                          f"{data.shape}",
                                   help="keep check_bounds=True (the default) for tiles that "
                                        "can cross the array's edge")
            values = values[tsel]
            if self.launch.record and perm is None and arr.tracker is not None \
                    and len(arr.tracker.masked) < _MAX_MASKED:
                st = steps or tshape
                offs = [k.start or 0 for k in arr.key] if arr.key else [0] * len(idx)
                arr.tracker.masked.append(
                    (self.launch.tid, tuple((o + i * t, o + i * t + n)
                                            for o, i, t, n in zip(offs, idx, st, tshape))))
        if not data.flags.writeable:
            raise KernelError(f"{what}: `{arr.name}` is read-only (its NumPy array is not "
                              "writeable)")
        data[sel] = values
        if self.launch.record and _enum_name(memory_order) == "WEAK":
            self._record_write(arr, sel, perm, values.size)

    def num_tiles(self, array, /, axis, shape, order="C") -> Tile:
        arr = self._array(array, "num_tiles")
        ndim = arr.ndim
        tshape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        if len(tshape) == 0:
            tshape = (1,) * ndim
        if len(tshape) != ndim:
            raise KernelError(f"num_tiles: tile shape {tshape} does not match the rank of "
                              f"`{arr.name}` ({ndim})")
        check_pow2_shape(tshape)
        ax = axis_arg(axis, ndim)
        perm = _order(order, ndim)
        ext = arr.shape if perm is None else tuple(arr.shape[p] for p in perm)
        n = -(-ext[ax] // tshape[ax])
        return Tile(np.asarray(n, dtype=np.int32), D.int32)

    # --- tiled views -----------------------------------------------------------------------
    def tv_load(self, tv: TiledView, index, *, check_bounds=True, latency=None,
                allow_tma=None) -> Tile:
        arr = tv.array
        idx = _index_items(index, arr.ndim, "tiled_view.load")
        return self._load_region(arr, arr.data, None, idx, tv.tile_shape, tv.traversal_steps,
                                 tv.padding_mode, check_bounds, MemoryOrder.WEAK, False,
                                 "tiled_view.load")

    def tv_store(self, tv: TiledView, index, tile, *, check_bounds=True, latency=None,
                 allow_tma=None) -> None:
        arr = tv.array
        idx = _index_items(index, arr.ndim, "tiled_view.store")
        values = self._stored_values(tile, arr, "tiled_view.store")
        try:
            values = np.broadcast_to(values, tv.tile_shape)
        except ValueError:
            raise KernelError(f"tiled_view.store: a tile of shape {values.shape} does not "
                              f"broadcast to the view's tile shape {tv.tile_shape}") from None
        self._store_region(arr, arr.data, None, idx, values, tv.tile_shape, check_bounds,
                           "tiled_view.store", MemoryOrder.WEAK, steps=tv.traversal_steps)

    def tv_num_tiles(self, tv: TiledView, axis) -> Tile:
        ax = axis_arg(axis, tv.array.ndim)
        n, s, st = tv.array.shape[ax], tv.tile_shape[ax], tv.traversal_steps[ax]
        count = 1 if n <= s else -(-(n - s) // st) + 1
        return Tile(np.asarray(count, dtype=np.int32), D.int32)

    # --- pointer-style access: gather, scatter, atomics ----------------------------------------
    def _pointer_indices(self, arr: SimArray, indices, mask, check_bounds, what):
        """(flat index arrays per axis, in-bounds & mask, shape, n out of bounds)."""
        items = indices if isinstance(indices, (tuple, list)) else (indices,)
        if len(items) != arr.ndim:
            raise KernelError(f"{what}: `{arr.name}` has rank {arr.ndim}, so indices must be a "
                              f"tuple of {arr.ndim}" + (", or a single tile" if arr.ndim == 1
                                                         else ""))
        arrays = []
        for i, v in enumerate(items):
            va, vd = operand(v)
            if vd is None:
                if not isinstance(va, int) or isinstance(va, bool):
                    raise KernelError(f"{what}: index {i} must be an integer")
                arrays.append(np.asarray(va, dtype=np.int64))
            else:
                if vd.category != INT:
                    raise KernelError(f"{what}: index {i} has non-integer dtype {vd}")
                arrays.append(np.asarray(va).astype(np.int64))
        try:
            shape = np.broadcast_shapes(*(a.shape for a in arrays))
        except ValueError:
            raise KernelError(f"{what}: index shapes {[a.shape for a in arrays]} do not "
                              "broadcast to a common shape") from None
        arrays = [np.broadcast_to(a, shape) for a in arrays]
        inb = np.ones(shape, dtype=bool)
        for a, n in zip(arrays, arr.shape):
            inb &= (a >= 0) & (a < n)
        m = inb
        if mask is not None:
            ma, md = operand(mask)
            if md is not None and md is not D.bool_:
                raise KernelError(f"{what}: the mask must be a bool tile, got {md}")
            try:
                mb = np.broadcast_to(np.asarray(ma, dtype=bool), shape)
            except ValueError:
                raise KernelError(f"{what}: the mask's shape {np.shape(ma)} does not broadcast "
                                  f"to the index shape {shape}") from None
            m = inb & mb
            n_oob = int((~inb & mb).sum())
        else:
            n_oob = int((~inb).sum())
        if n_oob:
            if check_bounds is False:
                self.launch.report(
                    "SIM003", "error", f"{what} with out-of-bounds indices into `{arr.name}`",
                    detail=f"{n_oob} index(es) outside shape {arr.shape} with "
                           "check_bounds=False",
                    help="undefined on the GPU (the simulator skips them); clamp or mask the "
                         "indices, or keep check_bounds=True")
            else:
                self.launch.report(
                    "SIM004", "warning",
                    f"{what} with out-of-bounds indices into `{arr.name}` (skipped)",
                    detail=f"{n_oob} index(es) outside shape {arr.shape}",
                    help="bounds checking skips them; mask them explicitly if that is "
                         "intended")
        return arrays, m, shape

    def _values_for(self, value, shape, arr: SimArray, what, name="value", cast=True):
        va, vd = operand(value)
        if cast:
            try:
                if not self.launch.types_checked:    # else cuTile's own front end checked it
                    D.check_implicit_cast(vd, va, arr.dtype)
            except PromotionError as e:
                raise KernelError(f"{what}: the {name} is incompatible with `{arr.name}`'s "
                                  f"dtype: {e}",
                                  help=f"convert explicitly, e.g. "
                                       f"`t.astype({arr.dtype.short})`") from None
            v = np.asarray(D.convert(va, vd, arr.dtype))
        else:
            v = np.asarray(va)
        try:
            return np.broadcast_to(v, shape)
        except ValueError:
            raise KernelError(f"{what}: the {name}'s shape {v.shape} does not broadcast to the "
                              f"index shape {shape}") from None

    def gather(self, array, indices, /, *, mask=None, padding_value=0, check_bounds=True,
               latency=None) -> Tile:
        arr = self._array(array, "gather")
        idx, m, shape = self._pointer_indices(arr, indices, mask, check_bounds, "gather")
        pad = self._values_for(padding_value, shape, arr, "gather", "padding value")
        out = np.array(pad, dtype=arr.dtype.np)
        sel = tuple(a[m] for a in idx)
        out[m] = arr.data[sel]
        if self.launch.record and m.any():
            self._record_read(arr, sel, None, int(m.sum()))
        return Tile(out, arr.dtype)

    def scatter(self, array, indices, value, /, *, mask=None, check_bounds=True,
                latency=None) -> None:
        arr = self._array(array, "scatter")
        idx, m, shape = self._pointer_indices(arr, indices, mask, check_bounds, "scatter")
        v = self._values_for(value, shape, arr, "scatter")
        sel = tuple(a[m] for a in idx)
        arr.data[sel] = v[m]
        if self.launch.record and m.any():
            self._record_write(arr, sel, None, int(m.sum()))

    def _synchronize(self, arr: SimArray, sel, memory_order, before: bool, wrote=None):
        """Happens-before through this atomic (acquire before it, release after it)."""
        order = _enum_name(memory_order) if memory_order is not None else "ACQ_REL"
        wanted = ("ACQ_REL", "ACQUIRE") if before else ("ACQ_REL", "RELEASE")
        if order not in wanted:
            return
        lanes = sel if wrote is None else tuple(s_[wrote] for s_ in sel)
        if not lanes or not np.size(lanes[0]):
            return
        # a location is an element's address: the same element through two arguments is one
        addr = arr.data.__array_interface__["data"][0] + sum(
            np.asarray(ix, dtype=np.int64) * st for ix, st in zip(lanes, arr.data.strides))
        locations = set(np.unique(np.asarray(addr)).tolist())
        self.launch.synchronize(locations, acquire=before, release=not before)

    def _atomic(self, op: str, array, indices, update, check_bounds, expected=None,
                mask=None, what=None, memory_order=None) -> Tile:
        what = what or f"atomic_{op}"
        arr = self._array(array, what)
        dt = arr.dtype
        allowed = {"xchg": "i32 i64 u32 u64 f32 f64", "add": "i32 i64 u32 u64 f32 f64 f16 bf16",
                   "cas": "i32 i64 u32 u64 f32 f64"}.get(op, "i32 i64 u32 u64")
        if dt.short not in allowed.split():
            raise KernelError(f"{what} does not support `{arr.name}`'s dtype {dt} "
                              f"(supported: {allowed})")
        idx, m, shape = self._pointer_indices(arr, indices, mask, check_bounds, what)
        if op in ("and", "or", "xor"):
            ua, ud = operand(update)
            if ud is not None and ud is not dt:
                raise KernelError(f"{what} needs an update of exactly {dt}, got {ud}")
        upd = self._values_for(update, shape, arr, what, "update")
        sel = tuple(a[m] for a in idx)
        data = arr.data
        u = upd[m]
        n = u.shape[0]
        self._synchronize(arr, sel, memory_order, before=True)
        dups = n > 1 and np.unique(np.ravel_multi_index(sel, arr.shape)).size != n
        if op == "cas":
            exp_full = self._values_for(expected, shape, arr, what, "expected value")
            e = exp_full[m]
            result = np.array(exp_full)      # out-of-bounds lanes return `expected`
        else:
            result = np.zeros(shape, dtype=dt.np)
        if op in ("cas", "xchg"):
            if dups:
                prev = np.empty(u.shape, dtype=dt.np)
                for k in range(n):
                    p = tuple(int(s_[k]) for s_ in sel)
                    prev[k] = data[p]
                    if op == "xchg" or data[p] == e[k]:
                        data[p] = u[k]
            else:
                prev = np.array(data[sel])
                if op == "xchg":
                    data[sel] = u
                else:
                    hit = prev == e
                    data[tuple(s_[hit] for s_ in sel)] = u[hit]
        else:
            uf = {"add": np.add, "max": np.maximum, "min": np.minimum,
                  "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
            prev = self._serial_old(data, sel, u, uf) if dups else np.array(data[sel])
            uf.at(data, sel, u)
        result[m] = prev
        if op == "cas":
            wrote = prev == e
        else:
            wrote = np.ones(prev.shape, dtype=bool)
        if self.launch.record and n:
            if op == "cas" and not wrote.all():      # a failed compare-and-swap only reads
                if wrote.any():
                    self._record_write(arr, tuple(s_[wrote] for s_ in sel), None,
                                       int(wrote.sum()), atomic=True)
            else:
                self._record_write(arr, sel, None, n, atomic=True)
        self._synchronize(arr, sel, memory_order, before=False, wrote=wrote)
        if dups:
            changed = bool(wrote.any())
        else:
            changed = bool(n) and not np.array_equal(prev[wrote], data[sel][wrote])
        if changed:
            self.launch.progress += 1
        elif n:
            self.launch.wait_point()      # a spin: let the tile it waits for run
        return Tile(result, dt)

    @staticmethod
    def _serial_old(data, sel, u, uf):
        """The values each atomic saw when several hit one element (applied in order)."""
        prev = np.empty(u.shape, dtype=data.dtype)
        seen: dict = {}
        for k in range(u.shape[0]):
            p = tuple(int(s[k]) for s in sel)
            cur = seen.get(p, data[p])
            prev[k] = cur
            seen[p] = uf(cur, u[k])
        return prev

    def atomic_add(self, array, indices, update, /, *, check_bounds=True,
                   memory_order=MemoryOrder.ACQ_REL, memory_scope=MemoryScope.DEVICE):
        return self._atomic("add", array, indices, update, check_bounds, memory_order=memory_order)

    def atomic_max(self, array, indices, update, /, *, check_bounds=True,
                   memory_order=MemoryOrder.ACQ_REL, memory_scope=MemoryScope.DEVICE):
        return self._atomic("max", array, indices, update, check_bounds, memory_order=memory_order)

    def atomic_min(self, array, indices, update, /, *, check_bounds=True,
                   memory_order=MemoryOrder.ACQ_REL, memory_scope=MemoryScope.DEVICE):
        return self._atomic("min", array, indices, update, check_bounds, memory_order=memory_order)

    def atomic_and(self, array, indices, update, /, *, check_bounds=True,
                   memory_order=MemoryOrder.ACQ_REL, memory_scope=MemoryScope.DEVICE):
        return self._atomic("and", array, indices, update, check_bounds, memory_order=memory_order)

    def atomic_or(self, array, indices, update, /, *, check_bounds=True,
                  memory_order=MemoryOrder.ACQ_REL, memory_scope=MemoryScope.DEVICE):
        return self._atomic("or", array, indices, update, check_bounds, memory_order=memory_order)

    def atomic_xor(self, array, indices, update, /, *, check_bounds=True,
                   memory_order=MemoryOrder.ACQ_REL, memory_scope=MemoryScope.DEVICE):
        return self._atomic("xor", array, indices, update, check_bounds, memory_order=memory_order)

    def atomic_xchg(self, array, indices, update, /, *, check_bounds=True,
                    memory_order=MemoryOrder.ACQ_REL, memory_scope=MemoryScope.DEVICE):
        return self._atomic("xchg", array, indices, update, check_bounds, memory_order=memory_order)

    def atomic_cas(self, array, indices, expected, desired, /, *, check_bounds=True,
                   memory_order=MemoryOrder.ACQ_REL, memory_scope=MemoryScope.DEVICE):
        return self._atomic("cas", array, indices, desired, check_bounds, expected=expected,
                            memory_order=memory_order)

    # --- advanced indexing ------------------------------------------------------------------
    def _advanced(self, arr: SimArray, indices, what):
        items = indices if isinstance(indices, (tuple, list)) else (indices,)
        if len(items) != arr.ndim:
            raise KernelError(f"{what}: needs {arr.ndim} index entries for `{arr.name}`")
        grids, shape = [], []
        sparse = [i for i, v in enumerate(items) if type(v) is Tile]
        if len(sparse) != 1:
            raise KernelError(f"{what}: exactly one index entry must be a 1-D integer tile, the "
                              "others Slice(start, length)")
        for i, v in enumerate(items):
            if type(v) is Tile:
                if v.ndim != 1 or v.dtype.category != INT:
                    raise KernelError(f"{what}: the sparse index must be a 1-D integer tile")
                ix = v.a.astype(np.int64)
            elif isinstance(v, Slice):
                ix = int(v.start) + np.arange(v.length, dtype=np.int64)
            else:
                raise KernelError(f"{what}: index entry {i} must be a tile or a Slice")
            shape.append(ix.size)
            grids.append(ix)
        mesh = np.meshgrid(*grids, indexing="ij")
        return tuple(Tile(m, D.int64) for m in mesh), tuple(shape)

    def load_advanced_indexing(self, array, indices, /, *,
                               padding_mode=PaddingMode.UNDETERMINED, latency=None,
                               allow_tma=None) -> Tile:
        arr = self._array(array, "load_advanced_indexing")
        mesh, shape = self._advanced(arr, indices, "load_advanced_indexing")
        pad = _PAD_VALUES.get(_enum_name(padding_mode), 0.0) if arr.dtype.category == FLOAT \
            else 0
        return self.gather(arr, mesh, padding_value=pad, check_bounds=True)

    def store_advanced_indexing(self, array, indices, tile, /, *, latency=None,
                                allow_tma=None) -> None:
        arr = self._array(array, "store_advanced_indexing")
        mesh, shape = self._advanced(arr, indices, "store_advanced_indexing")
        self.scatter(arr, mesh, tile)


class Slice:
    """``ct.Slice(start, length)``: a dense entry of advanced indexing."""

    def __init__(self, start, length, /):
        self.start = operator.index(start)
        self.length = operator.index(length)
        if self.length <= 0 or self.length & (self.length - 1):
            raise KernelError(f"Slice length {self.length} is not a power of two")
