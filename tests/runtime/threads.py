"""The thread stress run shared by the GPU test and its simulator twin (``test_threads.py``):
many threads launching at once — independent launches into their own outputs, launches racing
for one tensor, graph replays beside other launches, ``await`` from an event loop running in a
worker thread — every result checked, every refusal an ``OwnershipError``, and a watchdog that
fails the run instead of hanging it."""
from __future__ import annotations

import asyncio
import faulthandler
import sys
import threading
import time
from dataclasses import dataclass, field

import numpy as np

import cutile_lab as cl
from cutile_lab.runtime import OwnershipError
from tests.runtime import kernels as K


@dataclass
class Sizes:
    """How much each part does (the GPU runs the issue's probe; the simulator a small copy)."""

    independent_threads: int = 8
    independent_starts: int = 1500
    racing_threads: int = 4
    racing_launches: int = 100
    racing_elements: int = 1 << 27      # ~0.5 ms in flight per launch on an H100
    graph_replays: int = 5000
    awaits: int = 50
    elements: int = 1 << 14
    watchdog_s: float = 180.0


@dataclass
class Figures:
    launches: int = 0
    refusals: int = 0
    racing_run: int = 0
    replays: int = 0
    awaited: int = 0
    seconds: float = 0.0
    failures: list = field(default_factory=list)     # (part, repr of the exception)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **counts) -> None:
        with self.lock:
            for k, v in counts.items():
                setattr(self, k, getattr(self, k) + v)


class Watchdog:
    """Runs functions in daemon threads; ``join`` fails (with every thread's stack) when they
    have not all finished by the deadline, instead of hanging the test run."""

    def __init__(self, figures: Figures, timeout_s: float):
        self.figures = figures
        self.deadline = time.monotonic() + timeout_s
        self.threads: list[threading.Thread] = []

    def spawn(self, part: str, fn, *args) -> None:
        def body():
            try:
                fn(*args)
            except BaseException as e:       # noqa: BLE001 - reported as a failure of the run
                with self.figures.lock:
                    self.figures.failures.append((part, f"{type(e).__name__}: {e}"))
        t = threading.Thread(target=body, name=f"stress-{part}-{len(self.threads)}",
                             daemon=True)
        self.threads.append(t)
        t.start()

    def join(self) -> list[str]:
        """Names of the threads still running at the deadline (empty: all finished)."""
        for t in self.threads:
            t.join(max(0.0, self.deadline - time.monotonic()))
        stuck = [t.name for t in self.threads if t.is_alive()]
        if stuck:
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        return stuck


def _upload(a):
    return cl.from_numpy(a).sync()


def independent(sizes: Sizes, figures: Figures, seed: int, own_stream: bool) -> None:
    """Async starts into this thread's own outputs, on its own stream (made in this thread, with
    nothing made current by hand) or on the runtime's pool streams (then an output's previous
    start is waited for before it is written again: another stream would be refused, as would
any unwaited start on the simulator); each
    output checked at the end."""
    rng = np.random.default_rng(seed)
    n = sizes.elements
    xa, ya = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    x, y = _upload(xa), _upload(ya)
    outs = [cl.zeros(n).sync() for _ in range(4)]
    s = cl.stream()
    sim = cl.backend() == "sim"     # simulated work holds its borrows until waited for
    last = {}
    pending = None
    for i in range(sizes.independent_starts):
        j = i % len(outs)
        alpha = float(i % 7 + 1)
        if j in last and (not own_stream or sim):
            last[j][1].wait()
        op = K.saxpy(outs[j].partition_mut(1024), x, y, alpha)
        pending = op.start(s) if own_stream else op.start()
        last[j] = (alpha, pending)
    for alpha, p in last.values():
        p.wait()
    del pending
    for j, (alpha, _) in last.items():
        np.testing.assert_allclose(outs[j].to_numpy(), alpha * xa + ya, rtol=1e-5, atol=1e-5)
    figures.add(launches=sizes.independent_starts)


def racing(sizes: Sizes, figures: Figures, z, x, counts: list, lock) -> None:
    """Launches into the one shared tensor ``z`` from this thread's own stream: each one either
    runs or is refused with an ``OwnershipError`` (another thread's launch is writing it)."""
    s = cl.stream()
    run = refused = 0
    for _ in range(sizes.racing_launches):
        try:
            p = K.accumulate(z.partition_mut(1024), x).start(s)
        except OwnershipError as e:
            assert {d.code for d in e.diagnostics} <= {"TL104", "TL105"}, e.diagnostics
            refused += 1
            continue
        run += 1
        p.wait()
    with lock:
        counts[0] += run
        counts[1] += refused


def replaying(sizes: Sizes, figures: Figures, g) -> None:
    done = 0
    batch = 10
    while done < sizes.graph_replays:
        k = min(batch, sizes.graph_replays - done)
        g.launch(k).wait()
        done += k
    figures.add(replays=done)


def awaiting(sizes: Sizes, figures: Figures, seed: int) -> None:
    """An event loop in this worker thread awaiting launches (one by one, and gathered)."""
    rng = np.random.default_rng(seed)
    n = sizes.elements
    xa = rng.standard_normal(n, dtype=np.float32)
    x = _upload(xa)

    async def main():
        outs = [cl.zeros(n).sync() for _ in range(4)]
        for i in range(sizes.awaits):
            await K.scale(outs[i % 4].partition_mut(1024), x, float(i))
        await asyncio.gather(*(K.scale(o.partition_mut(1024), x, 2.0) for o in outs))
        for o in outs:
            np.testing.assert_allclose(o.to_numpy(), 2.0 * xa, rtol=1e-6)
        return sizes.awaits + len(outs)

    figures.add(awaited=asyncio.run(main()))


def stress(sizes: Sizes) -> Figures:
    """The whole run; returns its figures (failures listed, never raised from a thread)."""
    figures = Figures()
    rng = np.random.default_rng()
    t0 = time.perf_counter()
    dog = Watchdog(figures, sizes.watchdog_s)
    # the racing part: one tensor, several writers
    xa = rng.standard_normal(sizes.racing_elements, dtype=np.float32)
    x = _upload(xa)
    z = cl.zeros(sizes.racing_elements).sync()
    counts, lock = [0, 0], threading.Lock()
    # the graph part: captured here, replayed from another thread while the others launch
    ga = rng.standard_normal(sizes.elements, dtype=np.float32)
    gb = rng.standard_normal(sizes.elements, dtype=np.float32)
    gx, gy, gz = _upload(ga), _upload(gb), cl.zeros(sizes.elements).sync()
    g = cl.graph(K.vadd(gz.partition_mut(1024), gx, gy))
    for i in range(sizes.independent_threads):
        dog.spawn("independent", independent, sizes, figures, int(rng.integers(1 << 30)),
                  i % 2 == 0)
    for _ in range(sizes.racing_threads):
        dog.spawn("racing", racing, sizes, figures, z, x, counts, lock)
    dog.spawn("graph", replaying, sizes, figures, g)
    dog.spawn("await", awaiting, sizes, figures, int(rng.integers(1 << 30)))
    stuck = dog.join()
    figures.seconds = time.perf_counter() - t0
    if stuck:
        figures.failures.append(("watchdog", f"still running after {sizes.watchdog_s} s: "
                                             f"{', '.join(stuck)}"))
        return figures
    figures.racing_run, figures.refusals = counts
    figures.launches += counts[0] + figures.replays + figures.awaited
    cl.synchronize()
    try:
        np.testing.assert_allclose(z.to_numpy(), counts[0] * xa, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(gz.to_numpy(), ga + gb, rtol=1e-6)
    except AssertionError as e:
        figures.failures.append(("results", str(e)))
    return figures


def hold_first_thread(monkeypatch) -> tuple[threading.Event, threading.Event]:
    """(running, finish): a simulated launch run by the thread named ``"first"`` sets
    ``running`` and waits for ``finish``, so that its flight stays in flight while another
    thread launches (the simulator's twin of work still running on the GPU)."""
    from cutile_lab.runtime.launch import LaunchOp

    running, finish = threading.Event(), threading.Event()
    real = LaunchOp._run_sim

    def slow_run(self, values, consts, grid):
        if threading.current_thread().name == "first":
            running.set()
            assert finish.wait(30)
        return real(self, values, consts, grid)

    monkeypatch.setattr(LaunchOp, "_run_sim", slow_run)
    return running, finish

