"""Pointer-style memory ops of a simulated kernel: ``gather``/``scatter`` by index tiles (with
masks and bounds checks: SIM003, SIM004), atomics (``atomic_add`` ... ``atomic_cas``, applied one
after another where indices repeat, with their memory order), and advanced indexing
(``load_advanced_indexing``/``store_advanced_indexing`` with ``ct.Slice``).
"""
from __future__ import annotations

import numpy as np

from cutile_lab.simulation import dtypes as D
from cutile_lab.simulation.dtypes import FLOAT, INT, PromotionError
from cutile_lab.simulation.memory import (PAD_VALUES, MemoryOrder, MemoryScope, PaddingMode,
                                          SimArray, Slice, enum_name)
from cutile_lab.simulation.memory_access import AccessRecords
from cutile_lab.simulation.tile_value import operand
from cutile_lab.simulation.tiles import KernelError, Tile


class PointerAccess(AccessRecords):
    """``gather``/``scatter``, atomics and advanced indexing."""

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
        pad = PAD_VALUES.get(enum_name(padding_mode), 0.0) if arr.dtype.category == FLOAT \
            else 0
        return self.gather(arr, mesh, padding_value=pad, check_bounds=True)

    def store_advanced_indexing(self, array, indices, tile, /, *, latency=None,
                                allow_tma=None) -> None:
        arr = self._array(array, "store_advanced_indexing")
        mesh, shape = self._advanced(arr, indices, "store_advanced_indexing")
        self.scatter(arr, mesh, tile)

