"""The GPU launch packed whole per stream (``ReusableStart.ready``), driven through the one start
path (``LaunchOp._enqueue``) against a fake driver: ``gpu.launch`` packs the launch of a start
record for the stream the driver queued it on; the next start of that very record on that very
stream calls it straight from the start path, after every check; another record, another stream
or a refusal by the driver goes back through ``gpu.launch``; a move (TL102) or work in flight
(TL104 / TL105) still refuses the start before anything reaches the driver."""
import ctypes
import importlib
from types import SimpleNamespace

import numpy as np
import pytest

import cutile_lab as cl
from cutile_lab.lang import Mut, Tensor, f32, load_tile_like
from cutile_lab.runtime import OwnershipError, gpu, ownership
from cutile_lab.runtime.backend import SIM
from cutile_lab.runtime.driver import RawLaunch
from cutile_lab.runtime.ops import ExecContext
from cutile_lab.runtime.ownership import Flight

L = importlib.import_module("cutile_lab.runtime.launch")
op_module = importlib.import_module("cutile_lab.runtime.launch.op")

pytestmark = pytest.mark.usefixtures("sim")


@cl.kernel
def copy_into(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z))


def codes(excinfo) -> list[str]:
    return [d.code for d in excinfo.value.diagnostics]


@pytest.fixture
def driver(monkeypatch, rng):
    """The simulator's tensors and ownership, launched by ``gpu.launch`` through a fake
    ``cuLaunchKernelEx`` (each call: the stream of its configuration); ``cuda.core``'s fallback
    (``_run_gpu``) recorded; every ``gpu.launch`` call counted."""
    d = SimpleNamespace(calls=[], answer=0, backend_calls=0, fallback=[])

    def fake_ex(cfg, func, ptrs, extra):
        d.calls.append(cfg._obj.hStream)
        return d.answer

    def prepare(op, entry, values, ctx):
        entry.plan = SimpleNamespace(compiled="cubin")
        entry.raw = RawLaunch(lambda *a: 99, ctypes.c_void_p(0xF00), (2, 1, 1), 128,
                              [0x7F00_0000_1000, 0x7F00_0000_2000], fake_ex)

    def launch(op, values, start, ctx):
        d.backend_calls += 1
        gpu.launch(op, values, start, ctx)

    def run_gpu(self, values, entry, ctx, args=None):
        d.fallback.append(ctx.flight.lane)
        return "packed"
    L.kernel_info(copy_into).entries.clear()
    monkeypatch.setattr(SIM, "prepare_launch", prepare)
    monkeypatch.setattr(SIM, "launch", launch)
    monkeypatch.setattr(op_module.LaunchOp, "_run_gpu", run_gpu)
    first = int(rng.integers(1, 1 << 40))
    d.lanes = [first, first + 1 + int(rng.integers(0, 1 << 20)), first + (1 << 21)]
    return d


def start_on(op, lane):
    """What ``gpu.start`` does, on the stream ``lane`` (its CUstream as an int): a flight
    registered, the op enqueued with the stream's handle; returns the flight (in flight)."""
    flight = Flight(op.label, op._where, SIM, None, lane)
    ownership.register(flight)
    ctx = ExecContext(SIM, None, flight, None, None, ctypes.c_void_p(lane))
    try:
        flight.result = op._enqueue(ctx)
    except BaseException:
        ownership.release(flight)
        raise
    flight.ready = True
    return flight


def test_the_packed_launch_serves_only_its_own_record_on_its_own_stream(driver, rng):
    a, b, c = driver.lanes
    x = cl.from_numpy(rng.standard_normal(256).astype(np.float32)).sync()
    z = cl.zeros(256).sync()
    op = copy_into(z.partition_mut(128), x)
    ownership.release(start_on(op, a))              # first start: through gpu.launch
    s = op._reuse
    assert driver.backend_calls == 1 and driver.calls == [a] and s.ready[0] == a
    for _ in range(3):                              # the same record, the same stream
        ownership.release(start_on(op, a))
    assert driver.backend_calls == 1 and driver.calls == [a] * 4
    ownership.release(start_on(op, b))              # another stream: gpu.launch, packed anew
    assert driver.backend_calls == 2 and driver.calls[-1] == b and s.ready[0] == b
    ownership.release(start_on(op, b))
    assert driver.backend_calls == 2 and driver.calls[-1] == b
    other = copy_into(z.partition_mut(128), x)      # a new partition: a new record
    ownership.release(start_on(other, b))
    assert other._reuse is not s and driver.backend_calls == 3 and driver.calls[-1] == b
    again = copy_into(op.bound["z"], x)             # a new op of the very same objects
    ownership.release(start_on(again, c))
    assert driver.backend_calls == 4 and driver.calls[-1] == c
    assert len(driver.calls) == 8 and not driver.fallback
    # no handle (a graph capture's stream): never the packed call, even on its stream
    flight = Flight(op.label, op._where, SIM, None, b)
    ownership.register(flight)
    op._enqueue(ExecContext(SIM, None, flight, None, None, None))
    ownership.release(flight)
    assert driver.backend_calls == 5 and len(driver.calls) == 8 and driver.fallback == [b]


def test_a_refusal_drops_the_packed_launch(driver, rng):
    a, b, _ = driver.lanes
    x = cl.from_numpy(rng.standard_normal(256).astype(np.float32)).sync()
    z = cl.zeros(256).sync()
    op = copy_into(z.partition_mut(128), x)
    ownership.release(start_on(op, a))
    ownership.release(start_on(op, a))
    s = op._reuse
    assert s.ready is not None and driver.backend_calls == 1
    driver.answer = 1                               # the driver refuses the packed call
    ownership.release(start_on(op, a))
    assert driver.calls == [a] * 3 and driver.fallback == [a]
    assert s.ready is None and s.raw is False
    driver.answer = 0
    ownership.release(start_on(op, a))              # from now on: cuda.core, never the driver
    assert driver.backend_calls == 2 and driver.calls == [a] * 3 and driver.fallback == [a] * 2
    # a refusal of the first, unpacked launch leaves nothing packed either
    y = cl.zeros(256).sync()
    op2 = copy_into(y.partition_mut(128), x)
    driver.answer = 1
    ownership.release(start_on(op2, b))
    assert op2._reuse.ready is None and driver.fallback[-1] == b


def test_moves_and_work_in_flight_refuse_a_packed_start(driver, rng):
    a, other, _ = driver.lanes
    x = cl.from_numpy(rng.standard_normal(256).astype(np.float32)).sync()
    z = cl.zeros(256).sync()
    w = cl.zeros(256).sync()
    writer = copy_into(z.partition_mut(128), x)     # writes z, reads x
    reader = copy_into(w.partition_mut(128), z)     # reads z
    clobber = copy_into(x.partition_mut(128), w)    # writes x
    for op in (writer, writer, reader, clobber):
        ownership.release(start_on(op, a if op is writer else other))
    assert writer._reuse.ready[0] == a
    n = len(driver.calls)
    flight = start_on(clobber, other)               # writes x, in flight on another stream
    with pytest.raises(OwnershipError) as e:        # reads what in-flight work writes
        start_on(writer, a)
    assert codes(e) == ["TL104"] and len(driver.calls) == n + 1
    ownership.release(flight)
    flight = start_on(reader, other)                # reads z, in flight on another stream
    with pytest.raises(OwnershipError) as e:        # writes what in-flight work reads
        start_on(writer, a)
    assert codes(e) == ["TL105"] and len(driver.calls) == n + 2
    ownership.release(flight)
    ownership.release(start_on(writer, a))          # nothing in flight: the packed call
    assert len(driver.calls) == n + 3 and driver.calls[-1] == a
    px = x.partition(128)                           # x moves after the launch was packed
    with pytest.raises(OwnershipError) as e:
        start_on(writer, a)
    assert codes(e) == ["TL102"] and len(driver.calls) == n + 3
    assert px.unpartition() is not None
