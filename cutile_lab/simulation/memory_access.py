"""What every memory access of a simulated kernel records, and the races it finds: per element,
the tile that last wrote it (and at which store site, in which epoch), the tiles that read it,
whether atomics touched it; a write over another tile's unordered write or read, or a read of
another tile's unordered write, is reported to the launch (``Launch.write_race`` /
``read_write_race``). Atomics with an acquire/release order add happens-before edges.

``AccessRecords`` is the base of ``memory_tiles.TileAccess`` and ``memory_pointers.PointerAccess``.
"""
from __future__ import annotations

import numpy as np

from cutile_lab.simulation.memory import (MULTI_READER, SHARED_ATOMIC, UNWRITTEN, SimArray,
                                          enum_name, permuted)
from cutile_lab.simulation.tiles import KernelError, Tile


class AccessRecords:
    """The recording half of the memory ops, bound to one launch."""

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
            bad &= ~launch.ordered_before(o, permuted(arr.maps("epoch"), perm)[sel])
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
            mine |= self.launch.ordered_before(r, permuted(arr.maps("reader_epoch"), perm)[sel])
        new = np.where(mine, tid, MULTI_READER).astype(np.int32)
        if all(type(s_) is slice for s_ in sel):
            np.copyto(r, new)
        else:
            rmap[sel] = new
        if self.launch.clocks:
            permuted(arr.maps("reader_epoch"), perm)[sel] = self.launch.epoch()

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
                bad &= ~launch.ordered_before(r, permuted(arr.maps("reader_epoch"), perm)[sel])
            if bad.any():
                launch.read_write_race(arr, np.unique(r[bad]), int(bad.sum()),
                                       reader_side=False, sites=None)
        other = (o != UNWRITTEN) & (o != tid)
        new_owner = tid
        if other.any():
            # accesses ordered before this one (through atomics: locks, flags) are no race
            unordered = other & ~launch.ordered_before(o, permuted(arr.maps("epoch"), perm)[sel])
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
            permuted(arr.maps("epoch"), perm)[sel] = launch.epoch()
        if not atomic:
            launch.progress += 1
        tr.writes[tid] = tr.writes.get(tid, 0) + count

    def _synchronize(self, arr: SimArray, sel, memory_order, before: bool, wrote=None):
        """Happens-before through this atomic (acquire before it, release after it)."""
        order = enum_name(memory_order) if memory_order is not None else "ACQ_REL"
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

