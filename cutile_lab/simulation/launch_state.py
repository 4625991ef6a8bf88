"""The state of one simulated launch (``Launch``), shared by the ``ct`` namespace, the memory ops
and the tile scheduler: the current tile and its block ids, the store sites of the lowered text
and the user's spans of them, happens-before between tiles through atomics (vector clocks), and
the diagnostics the launch collects (races, out-of-range accesses, failed asserts), turned into
``Diagnostic``s and ``SimulationError``s at the user's own line.
"""
from __future__ import annotations

import builtins
import sys
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from cutile_lab.diagnostics import Diagnostic, Label, Span
from cutile_lab.errors import SimulationError
from cutile_lab.simulation import dtypes as D
from cutile_lab.simulation.memory import SimArray
from cutile_lab.simulation.namespace import printf_text
from cutile_lab.simulation.program import Program
from cutile_lab.simulation.tiles import KernelError, Tile

_MAX_TILES_LISTED = 4


class Abort(Exception):
    """A device-side assert failed: the launch stops, as it does on the GPU."""


@dataclass(frozen=True)
class Site:
    """A place in the lowered text (an op call) and the user's span of it."""

    line: int
    span: Span


class Launch:
    """State of one simulated launch, shared by the ``ct`` namespace and the memory ops."""

    def __init__(self, program: Program, kdef, grid: tuple[int, ...], record: bool):
        self.program = program
        self.lowered = program.lowered
        self.filename = program.lowered.filename
        self.kdef = kdef
        self.grid = grid
        self.grid3 = tuple(grid) + (1,) * (3 - len(grid))
        self.record = record
        self.tid = 0
        self.bids: tuple[int, ...] = (0,) * len(grid)
        self._bid_tiles: tuple[Tile, ...] = ()
        self._nblocks = tuple(Tile(np.asarray(n, dtype=np.int32), D.int32) for n in self.grid3)
        self.sites: list[Site] = []
        self._site_cache: dict = {}
        self._positions: dict = {}
        self._diags: "OrderedDict[tuple, dict]" = OrderedDict()
        self.memory = None
        self.aborted = False
        # cuTile's front end accepted the kernel for these types: stores and atomics convert
        # as cuTile's do, without the simulator's own (stricter) dtype checks
        self.types_checked = False
        # happens-before between tiles through atomics (locks, flags): a vector clock per tile
        # and per atomic location; accesses ordered by them are not races
        self.clocks: dict[int, dict[int, int]] = {}
        self.location_clocks: dict[tuple, dict[int, int]] = {}
        self.progress = 0              # memory changes so far: a spin that sees none waits
        self.scheduler = None          # the cooperative scheduler when tiles may wait

    # --- synchronisation between tiles -----------------------------------------------------
    def clock(self, tid: int) -> dict[int, int]:
        c = self.clocks.get(tid)
        if c is None:
            c = self.clocks[tid] = {tid: 1}
        return c

    def epoch(self) -> int:
        return self.clock(self.tid)[self.tid]

    def ordered_before(self, tiles: np.ndarray, epochs: np.ndarray) -> np.ndarray:
        """Which (tile, epoch) accesses happen before the current tile's present point."""
        c = self.clock(self.tid)
        if len(c) == 1:
            return np.zeros(np.shape(tiles), dtype=bool)
        keys = np.fromiter(c.keys(), dtype=np.int64, count=len(c))
        vals = np.fromiter(c.values(), dtype=np.int64, count=len(c))
        order = np.argsort(keys)
        keys, vals = keys[order], vals[order]
        t = np.asarray(tiles, dtype=np.int64)
        pos = np.clip(np.searchsorted(keys, t), 0, len(keys) - 1)
        known = np.where(keys[pos] == t, vals[pos], 0)
        return (t >= 0) & (known >= np.asarray(epochs))

    def synchronize(self, locations, acquire: bool, release: bool) -> None:
        """An atomic on ``locations`` (hashable keys): acquire joins what was released there
        into the tile's clock; release publishes the tile's clock there and starts a new
        epoch of the tile."""
        c = self.clock(self.tid)
        if acquire:
            for loc in locations:
                lc = self.location_clocks.get(loc)
                if lc:
                    for t, e in lc.items():
                        if c.get(t, 0) < e:
                            c[t] = e
        if release:
            for loc in locations:
                lc = self.location_clocks.setdefault(loc, {})
                for t, e in c.items():
                    if lc.get(t, 0) < e:
                        lc[t] = e
            c[self.tid] += 1

    def wait_point(self) -> None:
        """An atomic that changed nothing (a failed compare-and-swap, a spin on a flag): let
        the other tiles run before this one tries again."""
        if self.scheduler is not None:
            self.scheduler.pause()

    # --- the current tile ------------------------------------------------------------------
    def enter_tile(self, tid: int, bids: tuple[int, ...]) -> None:
        self.tid = tid
        self.bids = bids
        b3 = tuple(bids) + (0,) * (3 - len(bids))
        self._bid_tiles = tuple(Tile(np.asarray(b, dtype=np.int32), D.int32) for b in b3)

    def describe_tile(self, tid: int) -> str:
        if tid < 0:
            return "several tiles"
        if len(self.grid) == 1:
            return f"tile {tid}"
        coords = tuple(int(c) for c in np.unravel_index(int(tid), self.grid))
        return f"tile {tid} (bid {coords})"

    def bid(self, axis) -> Tile:
        try:
            return self._bid_tiles[axis]
        except (IndexError, TypeError):
            raise KernelError(f"ct.bid({axis!r}): the axis must be 0, 1 or 2") from None

    def num_blocks(self, axis) -> Tile:
        try:
            return self._nblocks[axis]
        except (IndexError, TypeError):
            raise KernelError(f"ct.num_blocks({axis!r}): the axis must be 0, 1 or 2") from None

    # --- output ops ------------------------------------------------------------------------
    def printf(self, format, *args) -> None:
        sys.stdout.write(printf_text(format, args))

    def print(self, *args, sep: str = " ", end: str = "\n") -> None:
        builtins.print(*args, sep=sep, end=end)

    def assert_(self, cond, message=None) -> None:
        ok = bool(np.all(cond.a)) if type(cond) is Tile else bool(cond)
        if not ok:
            self.report("SIM020", "error",
                        "assertion failed" + (f": {message}" if message else ""),
                        help="on the GPU a failed assert stops the whole launch; so does the "
                             "simulator")
            self.aborted = True
            raise Abort()

    # --- where are we in the user's source -------------------------------------------------
    def site(self) -> int:
        """The id of the op call being executed in the kernel's own text."""
        f = sys._getframe(1)
        fn = self.filename
        while f is not None and f.f_code.co_filename != fn:
            f = f.f_back
        if f is None:
            return -1
        key = (id(f.f_code), f.f_lasti)
        sid = self._site_cache.get(key)
        if sid is None:
            sid = len(self.sites)
            self.sites.append(Site(f.f_lineno, self._span_of(f.f_code, f.f_lasti, f.f_lineno)))
            self._site_cache[key] = sid
        return sid

    def _span_of(self, code, lasti: int, line: int) -> Span:
        pos = self._positions.get(id(code))
        if pos is None:
            pos = self._positions[id(code)] = list(code.co_positions())
        i = lasti // 2
        if 0 <= i < len(pos) and pos[i][0] is not None:
            l0, l1, c0, c1 = pos[i]
            for e in self.lowered.positions.entries:
                if e[0] == l0 and e[1] == c0 and e[2] == l1 and e[3] == c1:
                    return e[4]
            return self.lowered.user_span(l0, c0)
        return self.lowered.user_span(line, None)

    def in_unsafe(self, line: int) -> bool:
        return any(a <= line <= b for a, b in self.program.unsafe_lines)

    # --- diagnostics -----------------------------------------------------------------------
    def report(self, code: str, severity: str, message: str, *, detail: str | None = None,
               help: str | None = None, site: int | None = None) -> None:
        sid = self.site() if site is None else site
        key = (code, sid, message)
        entry = self._diags.get(key)
        if entry is None:
            entry = self._diags[key] = {"code": code, "severity": severity, "message": message,
                                        "site": sid, "tiles": [], "ntiles": 0, "count": 0,
                                        "detail": detail, "help": help}
        entry["count"] += 1
        if entry.get("last") != self.tid:        # tiles run in order: a new one is new
            entry["last"] = self.tid
            entry["ntiles"] += 1
            if len(entry["tiles"]) < _MAX_TILES_LISTED:
                entry["tiles"].append(self.tid)

    def write_race(self, arr: SimArray, prev_tiles: np.ndarray, prev_sites: np.ndarray,
                   site: int, count: int) -> None:
        pairs, counts = np.unique(np.stack([prev_tiles, prev_sites]), axis=1,
                                  return_counts=True)
        for (prev_tile, prev_site), n in zip(pairs.T, counts):
            key = ("SIM010", arr.tracker.name, int(prev_site), site)
            entry = self._diags.get(key)
            if entry is None:
                entry = self._diags[key] = {"code": "SIM010", "array": arr.tracker.name,
                                            "site": site, "prev_site": int(prev_site),
                                            "pairs": [], "pair_set": set(), "count": 0}
            self._add_pair(entry, (int(prev_tile), self.tid))
            entry["count"] += int(n)

    def read_write_race(self, arr: SimArray, others: np.ndarray, count: int, *,
                        reader_side: bool, sites) -> None:
        site = self.site()
        key = ("SIM011", arr.tracker.name, site)
        entry = self._diags.get(key)
        if entry is None:
            entry = self._diags[key] = {"code": "SIM011", "array": arr.tracker.name,
                                        "site": site, "pairs": [], "pair_set": set(),
                                        "count": 0, "other_sites": set()}
        if sites is not None:
            entry["other_sites"].update(int(s) for s in np.asarray(sites).ravel() if s >= 0)
        for o in np.asarray(others).ravel().tolist():
            if o < 0:          # several readers (-3) or atomics (-2): not one tile to name
                o = -1
            self._add_pair(entry, (self.tid, o) if reader_side else (o, self.tid))
        entry["count"] += count

    @staticmethod
    def _add_pair(entry: dict, pair: tuple[int, int]) -> None:
        if pair not in entry["pair_set"]:
            entry["pair_set"].add(pair)
            if len(entry["pairs"]) < _MAX_TILES_LISTED:
                entry["pairs"].append(pair)

    def _tiles_text(self, tiles: list[int], ntiles: int) -> str:
        shown = ", ".join(self.describe_tile(t) for t in tiles)
        if ntiles > len(tiles):
            shown += f" and {ntiles - len(tiles)} more"
        return shown

    def _notes_for(self, site: int) -> tuple[str, ...]:
        if site < 0:
            return ()
        line = self.sites[site].line
        if self.kdef.kind == "cutile":
            return ("in a plain cuTile kernel: its memory accesses are not ownership-checked",)
        if self.in_unsafe(line):
            return ("in a `with unsafe():` block: the ownership checker does not verify these "
                    "accesses",)
        return ()

    def _span(self, site: int) -> Span | None:
        return self.sites[site].span if site >= 0 else None

    def diagnostics(self) -> list[Diagnostic]:
        out = []
        for e in self._diags.values():
            code = e["code"]
            if code == "SIM010":
                a, b = e["pairs"][0]
                more = len(e["pair_set"]) - 1
                who = f"{self.describe_tile(a)} and {self.describe_tile(b)}"
                if more:
                    who += f" (and {more} more pair{'s' if more > 1 else ''} of tiles)"
                msg = (f"data race on `{e['array']}`: {who} write the same "
                       f"{e['count']} element(s)")
                labels = []
                if e["prev_site"] >= 0 and e["prev_site"] != e["site"]:
                    labels.append(Label(self._span(e["prev_site"]),
                                        f"{self.describe_tile(a)} wrote them here"))
                notes = (f"{self.describe_tile(b)} wrote them here, after "
                         f"{self.describe_tile(a)}" + (" (the same store)"
                                                       if e["prev_site"] == e["site"] else ""),
                         ) + self._notes_for(e["site"])
                out.append(Diagnostic(
                    "SIM010", "error", msg, self._span(e["site"]), tuple(labels),
                    help="each element must be written by exactly one tile: index stores by "
                         "the tile's own id (`z.store(...)`, `tile_id(axis)`), or use atomics "
                         "for shared updates",
                    notes=notes))
            elif code == "SIM011":
                r, w = e["pairs"][0]
                more = len(e["pair_set"]) - 1
                msg = (f"data race on `{e['array']}`: {self.describe_tile(r)} reads "
                       f"element(s) that {self.describe_tile(w)} writes in the same launch"
                       + (f" (and {more} more pair{'s' if more > 1 else ''})" if more else ""))
                labels = tuple(Label(self._span(s), "written here")
                               for s in sorted(e["other_sites"])[:2] if s != e["site"])
                out.append(Diagnostic(
                    "SIM011", "error", msg, self._span(e["site"]), labels,
                    help="tiles of one launch run in no fixed order: a tile must not read what "
                         "another tile of the same launch writes; split the work into two "
                         "launches",
                    notes=self._notes_for(e["site"])))
            else:
                tiles = e["tiles"]
                msg = f"{e['message']} in {self._tiles_text(tiles, e['ntiles'])}"
                notes = ()
                if e["detail"]:
                    notes += (e["detail"] + (" (first occurrence)" if e["count"] > 1 else ""),)
                if e["count"] > 1:
                    notes += (f"{e['count']} occurrence(s) in {e['ntiles']} tile(s)",)
                notes += self._notes_for(e["site"])
                out.append(Diagnostic(code, e["severity"], msg, self._span(e["site"]),
                                      help=e["help"], notes=notes))
        out.sort(key=lambda d: ({"error": 0, "warning": 1}.get(d.severity, 2),
                                d.span.line if d.span else 0))
        return out

    # --- turning a failure into a SimulationError ------------------------------------------
    def located_error(self, exc: BaseException) -> SimulationError:
        tb = exc.__traceback__
        span = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.filename:
                span = self._span_of(tb.tb_frame.f_code, tb.tb_lasti, tb.tb_lineno)
            tb = tb.tb_next
        if isinstance(exc, KernelError):
            message, help_ = exc.message, exc.help
        elif isinstance(exc, SimulationError):
            message, help_ = exc.message, exc.help
            span = span or exc.span
        elif isinstance(exc, RecursionError):
            message, help_ = "recursion is too deep", None
        elif isinstance(exc, NameError):
            message, help_ = str(exc), "kernels can use their parameters, cuTile's ops and " \
                                       "the kernel's module globals"
        else:
            message, help_ = f"{type(exc).__name__}: {exc}", None
        err = SimulationError(f"{message} (in {self.describe_tile(self.tid)} of grid "
                              f"{self.grid})", span=span, help=help_)
        err.tile_id = self.tid
        err.original = exc
        return err

