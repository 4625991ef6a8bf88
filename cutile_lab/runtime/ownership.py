"""Ownership on the host over time: moves, and borrows held by in-flight work.

Owns: ``MoveRecord`` (a tensor moved into a partition, and where), the registry of ``Flight``s
(started DeviceOp chains, each with the byte ranges it reads and writes and, once somebody asked,
an event that completes after it), and the checks that use them — host access to memory that
in-flight work writes (TL103), a launch using memory that in-flight work writes (TL104) or
writing memory that in-flight work reads (TL105), use after move (TL102). Completed work releases its borrows automatically: a flight is
done when its event says so (``cuEventQuery``; on the simulator, once it has run).

Completion events are recorded lazily: an async start records none (an event between two
kernels costs the GPU and the host time on every launch). A flight without an event is known to
be done once its stream is idle (``cuStreamQuery``) or once the first event recorded after it
completes: asking (``query``, a conflict found, the periodic ``reap``) records one such *covering*
event for every uncovered flight of that stream. Both are conservative: work queued after the
flight on the same stream delays its release, never the other way round. A repeated start of
the same launch on the same stream, while the previous one is still uncovered, joins that
flight (``LaunchOp.start``): it borrows the very same memory, from the same line.

One borrow model, owned here. The launch-level rules about one launch's own arguments
(aliasing, signature matching) belong to ``cutile_lab.checking.launch_rules``; this module adds
time, and it is the one record of what in-flight work borrows: byte ranges (``Borrow``) in each
``Flight``, checked under one lock, so that views of a borrowed tensor (``z[100:110]`` while
``z[:128]`` is written) are caught too. Nothing else keeps a copy: a conflict is worded by the
checker's ``use_diagnostic`` from the facts of the flight found (its label, line, and whether it
writes), and a move from the object's own ``MoveRecord``. The launch checks
(``runtime.launch.checks``), host access (``check_host_access``) and DeviceOps of other kinds
(``claim``) all go through this module.
"""
from __future__ import annotations

import itertools
import threading
from typing import NamedTuple

from cutile_lab.checking.borrows import BorrowFact, use_diagnostic
from cutile_lab.diagnostics import Diagnostic, Label, Span
from cutile_lab.errors import KernelDiagnosticsError
from cutile_lab.runtime.callsite import as_span, describe, user_call_site, user_name_of


class OwnershipError(KernelDiagnosticsError):
    """A host access or launch refused by the ownership rules (``diagnostics`` say why)."""

    code = "CL052"


class MoveRecord:
    """A tensor or partition used up: moved into a partition, given back, a borrow ended."""

    __slots__ = ("_where", "what", "partition_id", "label")

    def __init__(self, where, what: str, partition_id: int = 0, label: str = "moved here"):
        self._where = where       # the user's line: a ``user_site`` until a message needs a Span
        self.what = what          # "was moved into a partition of (128,) tiles"
        self.partition_id = partition_id
        self.label = label

    @property
    def where(self) -> Span | None:
        w = self._where
        if isinstance(w, tuple):
            w = self._where = as_span(w)
        return w


class Borrow(NamedTuple):
    """One byte range in-flight work reads or writes (an entry of ``Flight.entries``)."""

    lo: int                   # [lo, hi) byte addresses
    hi: int
    mut: bool                 # written (a mutable borrow), else only read
    tensor: object            # the tensor (view) the work was given
    param: str                # the kernel parameter it was passed as ("" when none)


_solo_lanes = itertools.count(-1, -1)


class Flight:
    """One started DeviceOp chain: in flight until ``event`` completes (gpu) or it ran (sim)."""

    __slots__ = ("label", "_where", "event", "stream", "backend", "done", "entries", "keep",
                 "result", "error", "lane", "ready", "covered", "reuse",
                 "pending", "__weakref__")

    def __init__(self, label: str, where, backend: str, stream=None, lane=None):
        # the stream's handle on the GPU; else a lane of its own: a negative number, never a
        # handle (not the flight itself: a cycle lives, with its result, until a collection)
        self.lane = next(_solo_lanes) if lane is None else lane
        self.label = label
        self._where = where          # a Span, or a ``user_site`` until a message needs a Span
        self.backend = backend
        self.stream = stream
        self.entries: list = []      # Borrow(lo, hi, mut, tensor, param)
        self.keep: list = []         # objects that must live until the work completes
        self.event = self.result = self.error = None
        self.done = False
        self.ready = False           # everything it runs is enqueued
        self.covered = False         # ``event`` was recorded after it for several flights
        self.reuse = None            # the launch's ReusableStart whose repeated starts may join it
        self.pending = None          # the Pending handed to the starts that joined it

    @property
    def where(self) -> Span | None:
        w = self._where
        if isinstance(w, tuple):
            w = self._where = as_span(w)
        return w

    def query(self) -> bool:
        """True once the work has completed (then its borrows are released)."""
        if self.done:
            return True
        if self.backend != "gpu":
            return False
        ev = self.event
        if ev is not None:
            if ev.is_done:
                release_through(self)
                return True
            return False
        return _query_uncovered(self)

    def describe(self) -> str:
        return f"`{self.label}` (launched at {describe(self.where)})"


_lock = threading.RLock()
# Live flights by lane: a GPU stream (its handle) orders its flights, so they complete in start
# order; every simulator flight is a lane of its own. Work queued earlier on the same stream is
# ordered before a new launch and is no conflict for it.
_lanes: dict = {}
_count = 0
_since_reap = 0
REAP_EVERY = 32
NO_LANE = object()
#: completed flights' events, recycled by ``ops`` (creating an event costs more than recording)
EVENT_POOL: list = []


def register(flight: Flight) -> None:
    global _since_reap, _count
    _lock.acquire()               # not ``with``: it costs twice as much, on every launch
    try:
        lane = _lanes.get(flight.lane)
        if lane is None:
            _lanes[flight.lane] = [flight]
        else:
            lane.append(flight)
        _count += 1
        _since_reap += 1
        if _since_reap >= REAP_EVERY:
            _since_reap = 0
            reap()
    finally:
        _lock.release()


def others_in_flight(flight: Flight | None) -> bool:
    """Is work in flight on another lane (stream) than ``flight``'s?"""
    if not _count:
        return False
    if flight is None:
        return True
    return _count > len(_lanes.get(flight.lane, ()))


def others_than_lane(lane) -> bool:
    """Is work in flight on another lane than ``lane``?"""
    return _count > len(_lanes.get(lane, ()))


def add_borrow(flight: Flight, tensor, mut: bool, param: str = "") -> None:
    lo, hi = tensor.range
    if hi > lo:
        flight.entries.append(Borrow(lo, hi, mut, tensor, param))
    flight.keep.append(tensor)


def claim(flight: Flight, args, where, lane=NO_LANE) -> None:
    """Borrow ``args`` — [(param, tensor, mut)] — for work about to be enqueued in ``flight``:
    the borrows are recorded in the flight and checked against every other flight (TL104 /
    TL105, raised as ``OwnershipError``) in one step under the registry's lock, so that of two
    threads racing for the same memory the second sees the first. Call it before enqueueing
    (what a DeviceOp of its own, e.g. a foreign kernel, does in ``_enqueue``); on a refusal the
    flight is released by the start that runs it. ``lane``: the stream's handle, whose earlier
    work is ordered before this and never conflicts (``ctx.flight.lane``)."""
    borrows = []
    for param, tensor, mut in args:
        lo, hi = tensor.range
        if hi > lo:
            borrows.append(Borrow(lo, hi, mut, tensor, param))
        flight.keep.append(tensor)
    with _lock:
        flight.entries.extend(borrows)
        if others_in_flight(flight):
            hits = check_launch_borrows(list(args), flight, where, lane)
            if hits:
                raise OwnershipError([d for _, d in hits])


def _facts(flight: Flight, tensor) -> list[BorrowFact]:
    """What ``flight`` does with the tensor object ``tensor`` (its entries of that very object,
    not of other views of the memory), as the checker's wording takes it."""
    tid = getattr(tensor, "id", None)
    return [BorrowFact(flight.label, e.mut, flight.where) for e in flight.entries
            if getattr(e.tensor, "id", None) == tid]


def _retire(f: Flight) -> None:
    """Mark a completed flight done: drop its borrows and keep-alives, recycle an event of its
    own (a covering event is shared, so it is never recycled); under ``_lock``."""
    f.done = True
    f.entries = []
    f.keep = []
    f.pending = None
    ev = f.event
    if ev is not None and f.backend == "gpu" and not f.covered and len(EVENT_POOL) < 64:
        f.event = None
        EVENT_POOL.append(ev)


def release(flight: Flight) -> None:
    global _count
    _lock.acquire()
    try:
        if flight.done:
            return
        _retire(flight)
        key = flight.lane
        lane = _lanes.get(key)
        if lane is None:
            return
        if len(lane) == 1:
            # the common case (a simulator flight's lane of its own, one flight on a stream):
            # no search of the list, no removal from it
            if lane[0] is flight:
                del _lanes[key]
                _count -= 1
        elif flight in lane:
            lane.remove(flight)
            _count -= 1
    finally:
        _lock.release()


def release_through(flight: Flight) -> None:
    """``flight`` has completed, so has every flight enqueued before it on its stream: release
    them all (a flight still being enqueued by another thread may have work after it: that one
    and those after it stay)."""
    if flight.backend != "gpu":
        release(flight)
        return
    lane = _lanes.get(flight.lane)
    try:
        first = lane[0] if lane is not None else flight
    except IndexError:                # emptied by another thread since
        first = flight
    if first is flight:
        # the common case (a sync): nothing before it on its stream, so it is released alone.
        # Seen without the lock: a flight joins a lane only after those in it, so one found
        # first has nothing before it; ``release`` itself takes the lock
        release(flight)
        return
    _lock.acquire()
    try:
        lane = _lanes.get(flight.lane)
        if lane is not None and not flight.done and lane[0] is not flight:
            try:
                n = min(lane.index(flight), _ready_prefix(lane))
            except ValueError:
                n = 0
            _release_prefix(flight.lane, lane, n)
        release(flight)
    finally:
        _lock.release()


def _release_prefix(key, lane: list, n: int) -> None:
    """Release ``lane[:n]`` (completed); under ``_lock``."""
    global _count
    if not n:
        return
    for f in lane[:n]:
        _retire(f)
    del lane[:n]
    _count -= n
    if not lane:
        del _lanes[key]


def _stream_idle(key) -> bool:
    """Has all work queued on the stream ``key`` (a CUstream handle) completed?"""
    from cutile_lab.runtime.driver import stream_idle
    return stream_idle(key)


def _ready_prefix(lane: list) -> int:
    n = 0
    for f in lane:
        if not f.ready:
            break
        n += 1
    return n


def _cover(lane: list) -> None:
    """Record one event after the enqueued flights of ``lane`` that have none; under
    ``_lock``."""
    n = _ready_prefix(lane)
    todo = [f for f in lane[:n] if f.event is None]
    if not todo:
        return
    from cutile_lab.runtime.device import make_current
    make_current()             # recording needs the context current in this thread
    ev = todo[-1].stream.record()
    for f in todo:
        f.event = ev
        f.covered = True


def _query_uncovered(flight: Flight) -> bool:
    """``query`` of a GPU flight without an event: done if its stream is idle; else record a
    covering event (so that a later question has an exact answer) and say not done yet."""
    with _lock:
        if flight.done:
            return True
        if flight.event is not None:
            return flight.query()
        lane = _lanes.get(flight.lane)
        if lane is None or not flight.ready:
            return False
        if _stream_idle(flight.lane):
            _release_prefix(flight.lane, lane, _ready_prefix(lane))
            return True
        _cover(lane)
        return False


def reap() -> None:
    """Release every flight whose work has completed. A stream completes its flights in order,
    so on each lane a binary search over the events finds where completion stops, and the
    completed prefix is released at once. Uncovered flights are released if their stream is
    idle, else covered by one new event."""
    with _lock:
        for key, lane in list(_lanes.items()):
            if not lane or lane[0].backend != "gpu":
                for f in list(lane):
                    f.query()
                continue
            ready = _ready_prefix(lane)
            if ready and any(f.event is None for f in lane[:ready]):
                if _stream_idle(key):
                    _release_prefix(key, lane, ready)
                    continue
                _cover(lane)
            lo, hi = 0, len(lane)          # lane[:lo] done, lane[hi:] not done
            while lo < hi:
                mid = (lo + hi) // 2
                f = lane[mid]
                if f.event is not None and f.event.is_done:
                    lo = mid + 1
                else:
                    hi = mid
            _release_prefix(key, lane, lo)


def live_flights() -> list[Flight]:
    reap()
    with _lock:
        return [f for lane in _lanes.values() for f in lane]


def _overlapping(tensor, *, want_mut: bool, exclude: Flight | None = None,
                 exclude_lane=NO_LANE):
    """The first (flight, entry) of unfinished work that conflicts with this access.

    ``want_mut``: the access writes (conflicts with any borrow); else it reads (conflicts with
    mutable borrows only). Every overlapping flight found done on the way is released."""
    if not _count:
        return None
    lo, hi = tensor.range
    if hi <= lo:
        return None
    found = None
    with _lock:
        for key, lane in list(_lanes.items()):
            if key == exclude_lane:
                continue    # queued earlier on the same stream: ordered before, no conflict
            for f in list(lane):
                if f is exclude or f.done:
                    continue
                for entry in f.entries:
                    elo, ehi, emut, _, _ = entry
                    if elo < hi and lo < ehi and (emut or want_mut):
                        if not f.query() and found is None:
                            found = (f, entry)
                        break
    return found


def _tensor_name(tensor) -> str:
    kind = "partition" if type(tensor).__name__ == "Partition" else "tensor"
    name = getattr(tensor, "name", None) or user_name_of(tensor)
    return f"the {kind} `{name}`" if name else f"the {kind}"


def raise_use_after_move(tensor, what: str, where: Span | None = None, how: str = "read"
                         ) -> None:
    rec = tensor.moved
    where = as_span(where) or user_call_site()
    if rec.label == "moved into a partition here":
        raise OwnershipError([use_diagnostic(
            how, where, getattr(tensor, "name", None) or user_name_of(tensor), moved=True,
            moved_at=rec.where)])
    labels = ()
    if rec.where is not None:
        labels = (Label(rec.where, rec.label),)
    diag = Diagnostic(
        "TL102", "error",
        f"cannot {what}: {_tensor_name(tensor)} {rec.what} at {describe(rec.where)}",
        where, labels,
        help="use the partition (or `p.unpartition()` to get the tensor back), or use "
             "`t.partition_mut(...)` to borrow it instead of moving it")
    raise OwnershipError([diag])


def check_host_access(tensor, what: str, *, write: bool = False) -> None:
    """Refuse host access to memory that in-flight work writes (or, for a write, touches)."""
    if not _count:
        return
    hit = _overlapping(tensor, want_mut=write)
    if hit is None:
        return
    flight, entry = hit
    where = user_call_site()
    d = use_diagnostic("write" if write else "read", where, tensor.name or user_name_of(tensor),
                       borrows=_facts(flight, tensor))
    if d is not None:
        raise OwnershipError([d])
    mut = entry.mut
    code = "TL103" if mut else "TL105"
    verb = "writing" if mut else "reading"
    labels = (Label(flight.where, f"`{flight.label}` launched here, still in flight"),) \
        if flight.where else ()
    param = f" (as `{entry.param}`)" if entry.param else ""
    diag = Diagnostic(
        code, "error",
        f"cannot {what}: in-flight work {flight.describe()} is {verb} "
        f"{_tensor_name(tensor)}{param}",
        where, labels,
        help="wait for that work first: `.sync()` / `await` the op (or `pending.wait()`), "
             "or compose the next step with `.then(...)`",
        notes=(f"the work was launched at {describe(flight.where)}",))
    raise OwnershipError([diag])


def check_launch_borrows(args, exclude: Flight | None, where,
                         exclude_lane=NO_LANE, ranges=None) -> list:
    """TL104/TL105 for one launch: ``args`` is [(param, tensor, mut)]; returns
    [(param, diagnostic)]. Work already queued on the same chain (``exclude``) or on the same
    stream (``exclude_lane``) is ordered before this launch and does not conflict.
    ``ranges``: ``launch_ranges(args)``, when the caller keeps it."""
    if not _count or not _any_conflict(ranges if ranges is not None else launch_ranges(args),
                                       exclude, exclude_lane):
        return []
    where = as_span(where)
    out = []
    for param, tensor, mut in args:
        hit = _overlapping(tensor, want_mut=mut, exclude=exclude, exclude_lane=exclude_lane)
        if hit is None:
            continue
        flight, entry = hit
        name = getattr(tensor, "name", None) or user_name_of(tensor)
        d = use_diagnostic("launch_mut" if mut else "launch", where, name or param,
                           borrows=_facts(flight, tensor), param=param)
        if d is not None:
            out.append((param, d))
            continue
        emut = entry.mut
        code = "TL104" if emut else "TL105"
        verb = "writing" if emut else "reading"
        labels = (Label(flight.where, f"`{flight.label}` launched here, still in flight"),) \
            if flight.where else ()
        what = f"`{name}` (as `{param}`)" if name and name != param else f"`{param}`"
        out.append((param, Diagnostic(
            code, "error",
            f"{what}: in-flight work {flight.describe()} is {verb} this memory"
            + (" (through another view of it)" if entry.tensor is not tensor else ""),
            where, labels,
            help="wait for that work first (`.sync()`, `await`, `pending.wait()`), or chain "
                 "this launch after it with `.then(...)` so that the stream orders them")))
    return out


def launch_ranges(args) -> tuple:
    """((lo, hi, mut), ...) of a launch's ``args`` [(param, tensor, mut)] (empty ranges left
    out): what ``_any_conflict`` scans the live flights for."""
    return tuple((t.range[0], t.range[1], mut) for _, t, mut in args if t.range[1] > t.range[0])


def _any_conflict(ranges, exclude, exclude_lane) -> bool:
    """One pass over the live flights: could any of ``ranges`` conflict with one of them? (The
    common case, none, costs one scan; a hit is then examined argument by argument.)"""
    if not ranges:
        return False
    with _lock:
        for key, lane in _lanes.items():
            if key == exclude_lane:
                continue
            for f in lane:
                if f is exclude or f.done:
                    continue
                for entry in f.entries:
                    elo, ehi, emut, _, _ = entry
                    for lo, hi, mut in ranges:
                        if elo < hi and lo < ehi and (emut or mut):
                            return True
    return False


def pending_reader_stream(tensor):
    """The stream of unfinished work reading this tensor (for a CAI export's ``stream``)."""
    if not _count:
        return None
    hit = _overlapping(tensor, want_mut=True)
    if hit is None:
        return None
    flight = hit[0]
    if flight.stream is None:
        return None
    from cutile_lab.runtime.memory import stream_handle
    return stream_handle(flight.stream) or None


def order_consumer_stream(tensor, consumer_stream: int) -> None:
    """DLPack export: make the consumer's stream wait for unfinished work reading the tensor."""
    if not _count:
        return
    hit = _overlapping(tensor, want_mut=True)
    if hit is None or hit[0].stream is None:
        return
    from cutile_lab.runtime.device import gpu
    from cutile_lab.runtime.memory import wait_event_handle
    gpu()                      # recording needs the context current in this thread
    ev = hit[0].stream.record()
    # DLPack's 1 (legacy default) and 2 (per-thread default) are the driver's own
    # CU_STREAM_LEGACY / CU_STREAM_PER_THREAD handles, so the value passes through.
    wait_event_handle(int(consumer_stream), ev.handle)


def wait_ready(storage, stream, capturing: bool = False) -> None:
    """Foreign memory whose producer had work queued: order ``stream`` after it (while a graph
    is being captured, wait on the host instead: the graph must not depend on that event)."""
    ev = getattr(storage, "ready", None)
    if ev is None:
        return
    ev = getattr(ev, "ev", ev)       # creation._OwnedEvent wraps a CUevent
    from cuda.bindings import driver
    (err,) = driver.cuEventQuery(ev)
    if int(err) == 0:
        storage.ready = None
        return
    if capturing:
        driver.cuEventSynchronize(ev)
        storage.ready = None
        return
    from cutile_lab.runtime.memory import wait_event_handle
    wait_event_handle(stream, ev)


def _reset_for_tests() -> None:
    global _count
    with _lock:
        for lane in _lanes.values():
            for f in lane:
                f.done = True
        _lanes.clear()
        _count = 0


__all__ = ["OwnershipError", "MoveRecord", "Borrow", "Flight", "register", "add_borrow", "claim",
           "release", "release_through", "reap", "live_flights", "raise_use_after_move", "check_host_access",
           "check_launch_borrows", "pending_reader_stream", "order_consumer_stream", "wait_ready"]
