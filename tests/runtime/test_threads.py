"""The runtime from many threads at once (issue: launches from a thread pool, an event loop in a
worker thread, graph replays beside other launches): the GPU run with the issue's counts, and the
same run on the simulator in CI, smaller. Results checked, every refusal an ``OwnershipError``,
a watchdog instead of a hang. The GPU figures are written to ``$CUTILE_LAB_STRESS_OUT`` (JSON)
when it is set."""
import json
import os

import pytest

from tests.runtime.threads import Sizes, hold_first_thread, stress


def check(figures, sizes):
    assert not figures.failures, figures.failures
    assert figures.racing_run + figures.refusals == sizes.racing_threads * sizes.racing_launches
    assert figures.racing_run > 0
    assert figures.replays == sizes.graph_replays
    assert figures.awaited == sizes.awaits + 4


@pytest.mark.gpu
def test_threads_under_load_on_the_gpu(gpu):
    sizes = Sizes()
    figures = stress(sizes)
    out = os.environ.get("CUTILE_LAB_STRESS_OUT")
    if out:
        data = {k: v for k, v in vars(figures).items() if k != "lock"}
        with open(out, "w") as f:
            json.dump(data, f, indent=2, default=str)
    print(f"\nstress: {figures.launches} launches, {figures.racing_run} racing launches run and "
          f"{figures.refusals} refused, {figures.replays} graph replays, {figures.awaited} "
          f"awaited, {figures.seconds:.2f} s")
    check(figures, sizes)


def test_threads_under_load_on_the_simulator(sim):
    sizes = Sizes(independent_threads=4, independent_starts=12, racing_threads=3,
                  racing_launches=8, racing_elements=4096, graph_replays=6, awaits=4,
                  elements=2048, watchdog_s=120.0)
    figures = stress(sizes)
    check(figures, sizes)
    # on the simulator a launch holds its borrows until the host waits for it: the racing
    # threads see each other's launches (or run one after another; either is right)
    assert figures.racing_run >= 1


def test_a_launch_running_in_another_thread_is_seen_by_the_check(sim, monkeypatch, rng):
    """A launch's borrows are visible to other threads from before it runs, not only once it has
    been enqueued: a thread launching into the same memory while it runs is refused."""
    import threading

    import numpy as np

    import cutile_lab as cl
    from cutile_lab.runtime import OwnershipError
    from tests.runtime import kernels as K

    x = cl.from_numpy(rng.standard_normal(4096).astype(np.float32)).sync()
    z = cl.zeros(4096).sync()
    running, finish = hold_first_thread(monkeypatch)
    results = []
    first = threading.Thread(name="first", daemon=True,
                             target=lambda: results.append(
                                 K.accumulate(z.partition_mut(1024), x).sync()))
    first.start()
    assert running.wait(30)
    with pytest.raises(OwnershipError) as e:
        K.accumulate(z.partition_mut(1024), x).start()
    assert {d.code for d in e.value.diagnostics} == {"TL104"}
    finish.set()
    first.join(30)
    assert results and not first.is_alive()
    np.testing.assert_allclose(z.to_numpy(), x.to_numpy(), rtol=1e-6)


def test_an_op_of_its_own_borrows_through_claim(sim, rng):
    """The extension point for a DeviceOp that is not a tile-kernel launch (a foreign kernel):
    ``ownership.claim`` records and checks its borrows; a conflicting start is refused."""
    import numpy as np

    import cutile_lab as cl
    from cutile_lab.runtime import DeviceOp, OwnershipError, ownership

    class Double(DeviceOp):
        label = "double"

        def __init__(self, t):
            super().__init__("sim")
            self.t = t

        def _enqueue(self, ctx):
            ownership.claim(ctx.flight, [("t", self.t, True)], self.where, ctx.flight.lane)
            view = self.t._host_view()
            view *= 2
            return self.t

    a = rng.standard_normal(256).astype(np.float32)
    t = cl.from_numpy(a).sync()
    first = Double(t).start()                 # simulated: its borrow lasts until waited for
    with pytest.raises(OwnershipError) as e:
        Double(t).start()
    assert {d.code for d in e.value.diagnostics} == {"TL104"}
    first.wait()
    np.testing.assert_allclose(Double(t).sync().to_numpy(), 4 * a)
