"""The lazy completion events of the ownership registry, without a GPU: flights on one stream
(a lane) get a covering event only when somebody asks, are released when their stream is idle,
and a completed flight releases the enqueued flights before it — never one still being
enqueued."""
import pytest

from cutile_lab.runtime import ownership
from cutile_lab.runtime.ownership import Flight

LANE = 0x5EED


class FakeEvent:
    def __init__(self):
        self.is_done = False

    def sync(self):
        self.is_done = True


class FakeStream:
    def __init__(self):
        self.recorded: list[FakeEvent] = []

    def record(self):
        ev = FakeEvent()
        self.recorded.append(ev)
        return ev


@pytest.fixture
def stream(monkeypatch):
    ownership._reset_for_tests()
    ownership.EVENT_POOL.clear()
    s = FakeStream()
    s.idle = False
    monkeypatch.setattr(ownership, "_stream_idle", lambda key: key == LANE and s.idle)
    monkeypatch.setattr(ownership, "REAP_EVERY", 10**9)   # reap only when a test asks
    yield s
    ownership._reset_for_tests()
    ownership.EVENT_POOL.clear()


def start(stream, label, ready=True) -> Flight:
    f = Flight(label, None, "gpu", stream, LANE)
    ownership.register(f)
    f.ready = ready
    return f


def live():
    return [f.label for f in ownership._lanes.get(LANE, ())]


def test_asking_records_one_covering_event_for_the_uncovered_flights(stream):
    a, b, c = (start(stream, n) for n in "abc")
    assert not a.query()                             # stream busy: not done yet...
    assert len(stream.recorded) == 1                 # ...and one event now covers all three
    assert a.event is b.event is c.event and a.covered and c.covered
    assert not b.query() and len(stream.recorded) == 1
    a.event.is_done = True
    assert b.query()                                 # b and everything before it
    assert live() == ["c"]
    assert c.query() and live() == []
    assert ownership.EVENT_POOL == []                # a shared event is never recycled


def test_an_idle_stream_releases_the_enqueued_flights(stream):
    a, b = start(stream, "a"), start(stream, "b")
    stream.idle = True
    assert a.query()
    assert live() == [] and b.done and stream.recorded == []


def test_a_flight_still_being_enqueued_is_neither_covered_nor_released(stream):
    a = start(stream, "a")
    b = start(stream, "b", ready=False)              # another thread is still enqueuing b
    c = start(stream, "c")
    assert not a.query()
    assert a.covered and b.event is None             # the covering event stops before b
    a.event.is_done = True                           # the covering event completed
    assert a.query()
    assert not b.done and live() == ["b", "c"]       # b may have work after that event
    ownership.release_through(c)                     # c completed: a is done, b is not known
    assert c.done and not b.done and live() == ["b"]


def test_reap_covers_when_busy_and_releases_when_idle(stream):
    a, b = start(stream, "a"), start(stream, "b")
    ownership.reap()
    assert a.event is b.event is not None and not a.done
    a.event.is_done = True
    ownership.reap()
    assert live() == []


def test_an_event_of_its_own_is_recycled(stream):
    a = start(stream, "a")
    a.event = ev = FakeEvent()                       # a graph replay records its own
    ev.is_done = True
    assert a.query() and ownership.EVENT_POOL == [ev]


def test_a_completed_flight_releases_itself_and_the_enqueued_ones_before_it(stream):
    """``release_through`` (a wait on the GPU): the first flight of its stream is released
    alone (nothing before it; what comes after stays), a later one with every enqueued flight
    before it; a flight released already, or of a lane emptied meanwhile, is released again
    without harm."""
    a, b, c, d = (start(stream, n) for n in "abcd")
    ownership.release_through(a)
    assert a.done and live() == ["b", "c", "d"] and not b.done
    ownership.release_through(c)
    assert b.done and c.done and live() == ["d"] and not d.done
    ownership.release_through(c)
    assert live() == ["d"]
    ownership.release_through(d)
    assert d.done and live() == [] and LANE not in ownership._lanes
    ownership.release_through(d)                     # its lane is gone: nothing to do
    assert ownership._count == 0


def test_releasing_a_flight_leaves_the_lanes_other_flight_in_flight(stream):
    # the lone-flight case of ``release`` (no search of the lane) must remove only that flight
    a = Flight("a", None, "gpu", stream, LANE)        # never registered (or released before)
    b = start(stream, "b")
    ownership.release(a)
    assert live() == ["b"] and ownership._count == 1 and not b.done
    c = start(stream, "c")
    ownership.release(c)                             # the last of two: searched and removed
    assert live() == ["b"] and ownership._count == 1
    ownership.release(b)                             # the lone flight: its lane goes
    assert live() == [] and ownership._count == 0 and LANE not in ownership._lanes
