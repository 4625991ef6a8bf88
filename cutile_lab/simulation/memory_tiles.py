"""Tile-space memory ops of a simulated kernel: ``load``/``store`` of a tile by tile index, with
``order`` (axis permutation), padding of tiles partly outside the array and ``num_tiles``, and the
same through a tiled view (``array.tiled_view(...)``). A tile wholly outside the array is
reported (SIM001 for a load, SIM002 for a store).
"""
from __future__ import annotations

import operator

import numpy as np

from cutile_lab.simulation import dtypes as D
from cutile_lab.simulation.dtypes import FLOAT, INT, PromotionError
from cutile_lab.simulation.memory import (MAX_MASKED, PAD_VALUES, MemoryOrder, MemoryScope,
                                          PaddingMode, SimArray, TiledView, enum_name)
from cutile_lab.simulation.memory_access import AccessRecords
from cutile_lab.simulation.tile_shapes import axis_arg
from cutile_lab.simulation.tile_value import operand
from cutile_lab.simulation.tiles import KernelError, Tile, check_pow2_shape


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


class TileAccess(AccessRecords):
    """``load``/``store``/``num_tiles`` on the tile space, and tiled views."""

    def _unchecked_edge(self, what: str, arr: SimArray, idx, tshape, data) -> None:
        """SIM005: a tile that crosses the array's edge, accessed with check_bounds=False."""
        self.launch.report("SIM005", "error",
                           f"{what} with check_bounds=False reaches outside `{arr.name}`",
                           detail=f"tile index {idx}, tile shape {tshape}, array shape "
                                  f"{data.shape}",
                           help="keep check_bounds=True (the default) for tiles that can cross "
                                "the array's edge")

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
            pname = enum_name(padding_mode)
            pad = PAD_VALUES.get(pname, 0.0)
            if dt.category != FLOAT:
                pad = 0
            out = np.full(tshape, pad, dtype=dt.np)
            if status == 1:
                out[tsel] = data[sel]
                count = int(np.prod([s.stop - s.start for s in sel]))
                if check_bounds is False:
                    self._unchecked_edge(what, arr, idx, tshape, data)
            else:
                count = 0
                self.launch.report(
                    "SIM001", "error",
                    f"{what} of a tile wholly outside `{arr.name}`",
                    detail=f"tile index {idx} with tile shape {tshape} lies outside shape "
                           f"{data.shape}",
                    help="on the GPU this is undefined (the simulator returns padding); "
                         "check the index, or the grid")
        if count and self.launch.record and enum_name(memory_order) == "WEAK":
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
                self._unchecked_edge(what, arr, idx, tshape, data)
            values = values[tsel]
            if self.launch.record and perm is None and arr.tracker is not None \
                    and len(arr.tracker.masked) < MAX_MASKED:
                st = steps or tshape
                offs = [k.start or 0 for k in arr.key] if arr.key else [0] * len(idx)
                arr.tracker.masked.append(
                    (self.launch.tid, tuple((o + i * t, o + i * t + n)
                                            for o, i, t, n in zip(offs, idx, st, tshape))))
        if not data.flags.writeable:
            raise KernelError(f"{what}: `{arr.name}` is read-only (its NumPy array is not "
                              "writeable)")
        data[sel] = values
        if self.launch.record and enum_name(memory_order) == "WEAK":
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

