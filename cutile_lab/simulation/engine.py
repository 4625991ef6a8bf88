"""Running a kernel on the CPU: ``simulate()``.

Owns binding a launch's arguments and const generics to the lowered kernel's parameters, the
per-launch state (``Launch``: current tile, store sites, diagnostics), running the lowered cuTile
Python text once per tile of the grid against the NumPy ``ct`` namespace, and turning what went
wrong into diagnostics and ``SimulationError``s at the user's own line.

The text that runs is exactly what ``cutile_lab.compiling.lowering.lower`` produces for the
compiler (compiled once per kernel and cached), so the simulated kernel is the compiled kernel.
"""
from __future__ import annotations

import __future__
import ast
import builtins
import inspect
import sys
import time
import types
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from cutile_lab.errors import Diagnostic, Label, SimulationError, Span
from cutile_lab.simulation import dtypes as D
from cutile_lab.simulation.memory import SimArray, Tracker
from cutile_lab.simulation.namespace import kernel_builtins, make_namespace, printf_text
from cutile_lab.simulation.result import SimResult
from cutile_lab.simulation.tiles import KernelError, Tile

_MAX_TILES_LISTED = 4


class _Abort(Exception):
    """A device-side assert failed: the launch stops, as it does on the GPU."""


@dataclass(frozen=True)
class Site:
    """A place in the lowered text (an op call) and the user's span of it."""

    line: int
    span: Span


@dataclass
class _Program:
    lowered: Any
    code: Any
    unsafe_lines: tuple[tuple[int, int], ...]


_PROGRAMS: "OrderedDict[tuple, _Program]" = OrderedDict()


def _program(kdef) -> _Program:
    """The lowered kernel and its compiled code object (cached by source text)."""
    src = kdef.source
    key = (src.filename, src.line_offset, src.text, kdef.name, kdef.kind)
    prog = _PROGRAMS.get(key)
    if prog is not None:
        _PROGRAMS.move_to_end(key)
        return prog
    from cutile_lab.compiling.lowering import lower
    lowered = lower(kdef)
    try:
        code = compile(lowered.text, lowered.filename, "exec",
                       flags=__future__.annotations.compiler_flag, dont_inherit=True)
    except SyntaxError as e:   # the frontend accepted it, so this is a lowering bug
        raise SimulationError(f"the lowered kernel does not compile: {e.msg}",
                              span=lowered.user_span(e.lineno or 1, (e.offset or 1) - 1)) \
            from None
    unsafe = []
    for n in ast.walk(kdef.node):
        if isinstance(n, ast.With) and any(_is_unsafe(i.context_expr) for i in n.items):
            unsafe.append((n.lineno + src.line_offset, n.end_lineno + src.line_offset))
    prog = _Program(lowered, code, tuple(unsafe))
    _PROGRAMS[key] = prog
    if len(_PROGRAMS) > 64:
        _PROGRAMS.popitem(last=False)
    return prog


def _is_unsafe(expr) -> bool:
    target = expr.func if isinstance(expr, ast.Call) else expr
    return (isinstance(target, ast.Name) and target.id == "unsafe") or \
        (isinstance(target, ast.Attribute) and target.attr == "unsafe")


class Launch:
    """State of one simulated launch, shared by the ``ct`` namespace and the memory ops."""

    def __init__(self, program: _Program, kdef, grid: tuple[int, ...], record: bool):
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
            raise _Abort()

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


# --- tiles that wait for each other ------------------------------------------------------------

class _Cooperative:
    """Runs the tiles of a launch that uses atomics one at a time, each in its own thread, in
    grid order. A tile whose atomic changed nothing (a failed compare-and-swap: a lock held by
    another tile; a flag not set yet) pauses, and the next tile runs (a new one first, then the
    paused ones in turn), so spin locks and flags between tiles make progress as on the GPU.
    When every unfinished tile is paused and a whole round of them changes no memory, they wait
    for each other forever: SIM022, and the launch stops."""

    MAX_THREADS = 4096

    def __init__(self, launch: Launch, fn, call_args):
        import threading
        self.launch = launch
        self.fn = fn
        self.args = call_args
        self.back = threading.Semaphore(0)
        self.current = None
        self.aborting = False
        self._threading = threading
        launch.scheduler = self

    def pause(self) -> None:
        t = self.current
        if t is None:
            return
        t.paused = True
        t.site = self.launch.site()
        self.back.release()
        t.go.acquire()
        if self.aborting:
            raise _Abort()
        self.launch.enter_tile(t.tid, t.bids)

    def _start(self, tid, bids):
        t = types.SimpleNamespace(tid=tid, bids=bids, go=self._threading.Semaphore(0),
                                  paused=False, done=False, error=None)

        def body():
            t.go.acquire()
            with np.errstate(all="ignore"):
                try:
                    self.launch.enter_tile(tid, bids)
                    self.fn(*self.args)
                except _Abort as e:
                    t.error = e
                except Exception as exc:
                    t.error = self.launch.located_error(exc)
            t.done = True
            self.back.release()
        t.thread = self._threading.Thread(target=body, daemon=True,
                                          name=f"cutile_lab sim tile {tid}")
        t.thread.start()
        return t

    def _resume(self, t) -> None:
        self.current = t
        t.paused = False
        t.go.release()
        self.back.acquire()
        self.current = None

    def run(self, order) -> int:
        import collections
        pending = iter(order)
        waiting: "collections.deque" = collections.deque()
        finished = 0
        error = None
        idle_round, mark = 0, self.launch.progress
        while True:
            nxt = next(pending, None)
            if nxt is not None:
                if len(waiting) >= self.MAX_THREADS:
                    error = SimulationError(
                        f"more than {self.MAX_THREADS} tiles are waiting at once",
                        span=self.launch.kdef.span)
                    break
                t = self._start(*nxt)
                idle_round, mark = 0, self.launch.progress
            elif waiting:
                t = waiting.popleft()
                idle_round += 1
            else:
                break
            self._resume(t)
            if t.error is not None:
                error = t.error
                break
            if t.done:
                finished += 1
                idle_round, mark = 0, self.launch.progress
                continue
            waiting.append(t)
            if self.launch.progress != mark:
                idle_round, mark = 0, self.launch.progress
            elif nxt is None and idle_round > len(waiting) + 1:
                self.launch.tid = t.tid
                self.launch.report(
                    "SIM022", "error", "tiles wait for each other forever (deadlock)",
                    detail=f"{len(waiting)} tile(s) spin on atomics that no running tile "
                           "will change",
                    help="a tile waits for a lock or flag that no other tile releases or sets; "
                         "on the GPU this launch hangs", site=getattr(t, "site", -1))
                self.launch.aborted = True
                break
        self.aborting = True
        for t in waiting:          # let the paused threads end
            t.go.release()
        if error is not None and not isinstance(error, _Abort):
            raise error
        return finished


# --- arguments ---------------------------------------------------------------------------------

def _definition(kernel_or_kdef):
    from cutile_lab.language.frontend import KernelDef
    if isinstance(kernel_or_kdef, KernelDef):
        return kernel_or_kdef, {}
    kdef = getattr(kernel_or_kdef, "definition", None)
    if isinstance(kdef, KernelDef):
        return kdef, dict(getattr(kernel_or_kdef, "globals", None) or {})
    fn = getattr(kernel_or_kdef, "_pyfunc", None)          # a @ct.kernel from cuda.tile
    if fn is None and isinstance(kernel_or_kdef, types.FunctionType):
        fn = kernel_or_kdef
    if fn is not None:
        from cutile_lab.simulation.adapters import function_kernel as make_kernel
        k = make_kernel(fn)
        return k.definition, dict(k.globals)
    raise SimulationError(f"simulate() takes a kernel (cl.kernel, kernels_from_source, a "
                          f"@ct.kernel function) or a KernelDef, got "
                          f"{type(kernel_or_kdef).__name__}")


def _grid(grid) -> tuple[int, ...]:
    g = (grid,) if isinstance(grid, (int, np.integer)) else tuple(grid)
    if not 1 <= len(g) <= 3 or any(isinstance(n, bool) or not isinstance(n, (int, np.integer))
                                   or n < 1 for n in g):
        raise SimulationError(f"the grid must be 1 to 3 positive integers, got {grid!r}",
                              help="e.g. grid=(8,) or grid=(4, 4)")
    return tuple(int(n) for n in g)


def _user_params(kdef, lowered) -> tuple[list[str], set[str]]:
    """(declared parameter names in order, the const ones among them and the implicit ones)."""
    if kdef.kind == "cutile":
        return list(lowered.param_names), set(lowered.const_params)
    declared = [p.name for p in kdef.params]
    return declared, set(lowered.const_params)


def _bind(kdef, lowered, args: Sequence, consts: Mapping[str, int] | None):
    declared, const_names = _user_params(kdef, lowered)
    runtime = [n for n in declared if n not in const_names]
    consts = dict(consts or {})
    args = list(args)
    if len(args) == len(runtime):
        by_name = dict(zip(runtime, args))
    elif len(args) == len(declared) and len(declared) != len(runtime):
        by_name = dict(zip(declared, args))
        for n in declared:
            if n in const_names:
                if n in consts and consts[n] != by_name[n]:
                    raise SimulationError(f"const `{n}` is given twice ({by_name[n]!r} and "
                                          f"{consts[n]!r})", span=kdef.span)
                consts[n] = by_name.pop(n)
    else:
        raise SimulationError(
            f"`{kdef.name}` takes {len(runtime)} argument(s) ({', '.join(runtime) or 'none'}), "
            f"got {len(args)}", span=kdef.span,
            help="pass arrays and scalars in the kernel's parameter order; const generics go in "
                 "consts={...}" + (f" ({', '.join(sorted(const_names))})" if const_names
                                      else ""))
    unknown = sorted(set(consts) - const_names)
    if unknown:
        raise SimulationError(
            f"`{kdef.name}` has no const generic named {', '.join(f'`{u}`' for u in unknown)}",
            span=kdef.span, help=f"its const generics are: "
                                 f"{', '.join(sorted(const_names)) or 'none'}")
    bound_consts: dict[str, Any] = {}
    missing = []
    for n in lowered.param_names:
        if n not in const_names:
            continue
        if n in consts:
            v = consts[n]
        else:
            p = kdef.param(n) if kdef.kind == "tile" else None
            default = p.default if p is not None else _cutile_default(kdef, n)
            if default is None:
                missing.append(n)
                continue
            v = default
        if kdef.kind == "tile" and (isinstance(v, bool) or not isinstance(v, (int, np.integer))):
            raise SimulationError(f"const generic `{n}` must be an integer, got {v!r}",
                                  span=kdef.span, help=f"e.g. consts={{'{n}': 128}}")
        bound_consts[n] = int(v) if isinstance(v, np.integer) else v
    if missing:
        raise SimulationError(
            f"`{kdef.name}` needs a value for {', '.join(f'`{m}`' for m in missing)}",
            span=kdef.span,
            help="give it in consts, e.g. consts={" + ", ".join(f"'{m}': 128" for m in missing)
                 + "} (a GPU launch binds tile shapes from the output's partition)")
    return by_name, bound_consts


def _cutile_default(kdef, name):
    a = kdef.node.args
    defaults = [None] * (len(a.args) - len(a.defaults)) + list(a.defaults)
    for arg, d in zip(a.args, defaults):
        if arg.arg == name and d is not None:
            try:
                return ast.literal_eval(d)
            except ValueError:
                return None
    return None


def _scalar_value(name: str, v, dtype: D.SimDType | None, span) -> Tile:
    if isinstance(v, Tile):
        return v
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    if dtype is None:          # plain cuTile kernel: infer as cuTile's launcher does
        if isinstance(v, np.generic):
            d = D.of_numpy(v.dtype)
            if d is None:
                raise SimulationError(f"argument `{name}`: unsupported scalar type {v.dtype}",
                                      span=span)
            return Tile(np.asarray(v), d)
        if isinstance(v, (bool, int, float)):
            d = D.constant_dtype(v) if not isinstance(v, float) else D.float32
            return Tile(np.asarray(v, dtype=d.np), d)
        raise SimulationError(f"argument `{name}` must be an array or a number, got "
                              f"{type(v).__name__}", span=span)
    if not isinstance(v, (bool, int, float, np.generic)):
        raise SimulationError(f"argument `{name}` is a {dtype.short} scalar, got "
                              f"{type(v).__name__}", span=span)
    if dtype.category == D.INT:
        if isinstance(v, (float, np.floating)):
            raise SimulationError(f"argument `{name}` is an integer ({dtype.short}), got {v!r}",
                                  span=span)
        lo, hi = D.int_range(dtype)
        if not lo <= int(v) <= hi:
            raise SimulationError(f"argument `{name}` = {v} is out of range of {dtype.short}",
                                  span=span)
        v = int(v)
    if isinstance(v, np.generic):
        v = v.item()
    return Tile(np.asarray(D.convert(v, None, dtype)), dtype)


def _array_value(name, v, param, span) -> np.ndarray:
    if param is not None and param.role == "mut":
        if not isinstance(v, np.ndarray):
            raise SimulationError(f"argument `{name}` is an output: pass a NumPy array (it is "
                                  f"written in place), got {type(v).__name__}", span=span)
        if not v.flags.writeable:
            raise SimulationError(f"argument `{name}` is an output but its array is read-only",
                                  span=span)
        return v
    if isinstance(v, np.ndarray):
        return v
    if hasattr(v, "__array__") or isinstance(v, (list, tuple)):
        return np.asarray(v)
    raise SimulationError(f"argument `{name}` must be a NumPy array, got {type(v).__name__}",
                          span=span)


def _check_tile_kernel_array(kdef, p, a: np.ndarray, consts: dict, grid, diags: list) -> None:
    want = p.dtype
    got = D.of_numpy(a.dtype)
    if want is not None and (got is None or got.name != want.cutile and
                             not (want.name == "tf32" and got is D.float32)):
        raise SimulationError(
            f"argument `{p.name}` has dtype {a.dtype}, but the kernel declares {want.name}",
            span=p.span, help=f"convert it, e.g. `{p.name}.astype(np.{want.numpy})`"
            if want.numpy in ("float16", "float32", "float64", "int32", "int64") else None)
    if a.ndim != len(p.shape):
        raise SimulationError(
            f"argument `{p.name}` has {a.ndim} dimension(s), but the kernel declares "
            f"{len(p.shape)} ({', '.join('?' if d is None else str(d) for d in p.shape)})",
            span=p.span)
    if p.role == "mut":
        tile = []
        for d in p.shape:
            n = consts.get(d, d) if isinstance(d, str) else d
            if not isinstance(n, int) or n <= 0 or n & (n - 1):
                raise SimulationError(
                    f"the tile shape of `{p.name}` is {tuple(consts.get(x, x) for x in p.shape)}:"
                    f" dimension {d}={n} is not a power of two", span=p.span,
                    help="tile dimensions must be powers of two, e.g. 64, 128, 256")
            tile.append(n)
        inferred = tuple(-(-s // t) for s, t in zip(a.shape, tile))
        from cutile_lab.compiling import lowering
        if getattr(lowering, "tile_order", lambda _k: None)(kdef) is not None:
            inferred = (int(np.prod(inferred)),)      # grouped tile order: a 1-D launch
        if tuple(grid) != inferred:
            diags.append(Diagnostic(
                "SIM030", "note",
                f"the grid {tuple(grid)} is not the one the partition of `{p.name}` (shape "
                f"{a.shape}, tiles {tuple(tile)}) infers: {inferred}", p.span,
                help="a launch on the GPU infers the grid from the Mut outputs' partitions"))
    else:
        for i, d in enumerate(p.shape):
            n = consts.get(d) if isinstance(d, str) else d
            if isinstance(n, int) and a.shape[i] != n:
                raise SimulationError(
                    f"argument `{p.name}` has shape {a.shape}, but the kernel declares "
                    f"dimension {i} to be {d}" + (f" = {n}" if isinstance(d, str) else ""),
                    span=p.span)


def _trackers(names_arrays: list[tuple[str, np.ndarray]]) -> dict[str, Tracker]:
    """One tracker per distinct memory: two arguments that are the same array share one."""
    out: dict[str, Tracker] = {}
    seen: list[tuple[tuple, Tracker]] = []
    for name, a in names_arrays:
        ident = (a.__array_interface__["data"][0], a.shape, a.strides, a.dtype.str)
        tr = next((t for i, t in seen if i == ident), None)
        if tr is None:
            tr = Tracker(name, a.shape)
            seen.append((ident, tr))
        else:
            tr.names.append(name)
        out[name] = tr
    return out


def _is_cuda_tile(v) -> bool:
    return isinstance(v, types.ModuleType) and v.__name__ == "cuda.tile"


def _rebind_globals(globals_: Mapping[str, Any], ns, memo: dict) -> dict[str, Any]:
    """The kernel's module globals with ``cuda.tile`` replaced by the simulator's ``ct``, also
    inside the helper functions (``@ct.function``) a plain cuTile kernel calls."""
    out = dict(globals_)
    for k, v in out.items():
        if not k.startswith("__"):
            out[k] = _rebind_value(v, ns, memo)
    return out


def _rebind_value(v, ns, memo: dict, depth: int = 0):
    """``v`` with ``cuda.tile`` replaced by the simulator's ``ct``: the module itself, a
    function (helpers), and functions kept in tuples, lists and dicts (tables of
    ``@ct.function``s that kernels pick with ``ct.static_eval``)."""
    if _is_cuda_tile(v):
        return ns
    if isinstance(v, types.FunctionType):
        if (v.__module__ or "").startswith("cuda.tile") and hasattr(ns, v.__name__):
            return getattr(ns, v.__name__)          # `from cuda.tile import load`
        return _rebind_function(v, ns, memo)
    if depth < 3 and type(v) in (tuple, list, dict) and len(v) <= 256:
        items = v.items() if type(v) is dict else enumerate(v)
        new = {k: _rebind_value(x, ns, memo, depth + 1) for k, x in items}
        if all(new[k] is x for k, x in (v.items() if type(v) is dict else enumerate(v))):
            return v
        return new if type(v) is dict else type(v)(new[i] for i in range(len(v)))
    return v


def _rebind_function(f, ns, memo: dict):
    base = inspect.unwrap(f)
    module = getattr(base, "__module__", None) or ""
    if not isinstance(base, types.FunctionType) or module == "builtins" or \
            module.startswith(("cutile_lab.", "numpy", "cuda.")):
        return f
    g = base.__globals__
    device_only = getattr(f, "_cutile_function_wrapper", False)     # @ct.function
    if not device_only and not any(
            _is_cuda_tile(v) or (isinstance(v, types.FunctionType)
                                 and (v.__module__ or "").startswith("cuda.tile"))
            for v in g.values()):
        return f
    key = id(base)
    if key in memo:
        return memo[key]
    new_globals = dict(g)
    clone = types.FunctionType(base.__code__, new_globals, base.__name__, base.__defaults__,
                               base.__closure__)
    clone.__kwdefaults__ = base.__kwdefaults__
    memo[key] = clone
    for name in _names_used(base.__code__):
        if name in g:
            new_globals[name] = _rebind_value(g[name], ns, memo)
    return clone


def _names_used(code) -> set[str]:
    """Global names a function's code reads, nested code (comprehensions, lambdas) included."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _names_used(c)
    return names


# --- simulate ----------------------------------------------------------------------------------

def simulate(kernel_or_kdef, args: Sequence, grid, consts: Mapping[str, int] | None = None, *,
             record: bool = True, check_types: bool = True) -> SimResult:
    """Run a kernel on the CPU, tile by tile, with NumPy.

    ``args`` are the kernel's runtime parameters in declared order: NumPy arrays for tensor
    parameters (outputs are written in place) and Python/NumPy numbers for scalars. ``consts``
    binds the const generics (a tile-language kernel's shape names and ``Const[int]``
    parameters; a plain cuTile kernel's ``ct.Constant`` parameters); they may also be given
    positionally when ``args`` lists every declared parameter. ``grid`` is the number of tiles
    per axis (a tile-language launch infers it from the outputs' partitions: ceil(shape / tile)).

    A plain cuTile kernel is first type-checked by cuTile's own front end for these argument
    types (``check_types``; ``typecheck``): what cuTile rejects raises its message here too.

    With ``record`` (the default) every access is recorded: the result's ownership maps, race
    detection and per-tile counts; without it only out-of-range accesses are reported.

    Raises ``SimulationError`` (at the user's line) for bad use: wrong arguments, a missing
    const, a non-power-of-two tile shape, mismatched shapes or dtypes in an op.
    """
    t0 = time.perf_counter()
    kdef, globals_ = _definition(kernel_or_kdef)
    errors = [d for d in kdef.diagnostics if d.is_error]
    if errors:
        e = errors[0]
        raise SimulationError(f"`{kdef.name}` has errors: [{e.code}] {e.message}", span=e.span,
                              help=e.help)
    grid_t = _grid(grid)
    prog = _program(kdef)
    lowered = prog.lowered
    by_name, bound_consts = _bind(kdef, lowered, args, consts)

    launch = Launch(prog, kdef, grid_t, record)
    ns = make_namespace(launch)
    mem = launch.memory
    pre_diags: list[Diagnostic] = []

    arrays: list[tuple[str, np.ndarray]] = []
    values: dict[str, Any] = {}
    for name, v in by_name.items():
        p = kdef.param(name) if kdef.kind == "tile" else None
        span = p.span if p is not None else kdef.span
        is_array = p.is_array if p is not None else (
            isinstance(v, np.ndarray) and v.ndim > 0 or isinstance(v, (list, tuple)))
        if is_array:
            a = _array_value(name, v, p, span)
            if D.of_numpy(a.dtype) is None:
                raise SimulationError(f"argument `{name}` has dtype {a.dtype}, which cuTile "
                                      "does not have", span=span)
            if p is not None:
                _check_tile_kernel_array(kdef, p, a, bound_consts, grid_t, pre_diags)
            arrays.append((name, a))
        else:
            sd = D.as_dtype(p.dtype) if p is not None and p.dtype is not None else None
            values[name] = _scalar_value(name, v, sd, span)
    trackers = _trackers(arrays) if record else {}
    noted: set = set()
    for i, (n1, a1) in enumerate(arrays):
        for n2, a2 in arrays[i + 1:]:
            if not record or trackers[n1] is trackers[n2]:
                continue
            pair = frozenset((id(trackers[n1]), id(trackers[n2])))
            if pair not in noted and np.may_share_memory(a1, a2):
                noted.add(pair)
                pre_diags.append(Diagnostic(
                    "SIM040", "note",
                    f"arguments `{n1}` and `{n2}` overlap in memory; the simulator records "
                    "them separately, so races between them are not detected", kdef.span,
                    help="pass distinct arrays (the launch checker rejects a mutable "
                         "argument that aliases another)"))
    for name, a in arrays:
        values[name] = SimArray(a, D.of_numpy(a.dtype), name, trackers.get(name), (), mem)
    values.update(bound_consts)
    call_args = [values[n] for n in lowered.param_names]
    if kdef.kind == "cutile" and check_types:
        from cutile_lab.simulation.typecheck import check_with_cutile
        check_with_cutile(kdef, lowered, values, bound_consts, globals_)
        launch.types_checked = True

    namespace: dict[str, Any] = _rebind_globals(globals_, ns, {})
    for k, v in kernel_builtins(launch).items():
        namespace.setdefault(k, v)
    namespace.update({"ct": ns, "__name__": f"cutile_lab.simulated.{kdef.name}"})
    import linecache
    linecache.cache[lowered.filename] = (len(lowered.text), None,
                                         lowered.text.splitlines(keepends=True),
                                         lowered.filename)
    exec(prog.code, namespace)
    fn = namespace[kdef.name]

    tiles_run = 0
    g = grid_t
    if len(g) == 1:
        order = ((i, (i,)) for i in range(g[0]))
    else:
        order = enumerate(np.ndindex(*g))
    if "atomic_" in lowered.text and int(np.prod(g)) > 1:
        # tiles may wait for each other (spin locks, flags): run them as coroutines
        tiles_run = _Cooperative(launch, fn, call_args).run(order)
    else:
        with np.errstate(all="ignore"):
            try:
                for tid, bids in order:
                    launch.enter_tile(tid, bids)
                    try:
                        fn(*call_args)
                    except _Abort:
                        raise
                    except Exception as exc:
                        raise launch.located_error(exc) from None
                    tiles_run += 1
            except _Abort:
                pass

    result = SimResult(kernel=kdef.name, grid=grid_t, elapsed=0.0, tiles_run=tiles_run,
                       aborted=launch.aborted, recorded=record)
    result.diagnostics = launch.diagnostics() + pre_diags
    outputs = [p.name for p in kdef.outputs] if kdef.kind == "tile" else []
    result.outputs = outputs
    if record:
        done: set[int] = set()
        for name, _a in arrays:
            tr = trackers[name]
            if name in outputs or tr.writes:
                result.ownership[name] = tr.owner
                if tr.conflict is not None and tr.conflict.any():
                    result.conflicts[name] = tr.conflict
                if tr.masked:
                    result.masked[name] = list(tr.masked)
                if name not in outputs and name not in result.outputs:
                    result.outputs.append(name)
            if id(tr) in done:
                continue
            done.add(id(tr))
            for tid, n in tr.writes.items():
                result.writes_by_tile.setdefault(tid, {})[tr.name] = n
            for tid, n in tr.reads.items():
                result.reads_by_tile.setdefault(tid, {})[tr.name] = n
    result.elapsed = time.perf_counter() - t0
    return result
