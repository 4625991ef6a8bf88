"""Running the tiles of a simulated launch: one after another in grid order, or, when the kernel
uses atomics (tiles may wait for each other on locks and flags), cooperatively, each tile in its
own thread and paused while it spins (``CooperativeTiles``), with deadlocks reported (SIM022).
"""
from __future__ import annotations

import types

import numpy as np

from cutile_lab.errors import SimulationError
from cutile_lab.simulation.launch_state import Abort, Launch


class CooperativeTiles:
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
        self.scheduler_turn = threading.Semaphore(0)
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
        self.scheduler_turn.release()
        t.its_turn.acquire()
        if self.aborting:
            raise Abort()
        self.launch.enter_tile(t.tid, t.bids)

    def _start(self, tid, bids):
        t = types.SimpleNamespace(tid=tid, bids=bids, its_turn=self._threading.Semaphore(0),
                                  paused=False, done=False, error=None)

        def body():
            t.its_turn.acquire()
            with np.errstate(all="ignore"):
                try:
                    self.launch.enter_tile(tid, bids)
                    self.fn(*self.args)
                except Abort as e:
                    t.error = e
                except Exception as exc:
                    t.error = self.launch.located_error(exc)
            t.done = True
            self.scheduler_turn.release()
        t.thread = self._threading.Thread(target=body, daemon=True,
                                          name=f"cutile_lab sim tile {tid}")
        t.thread.start()
        return t

    def _resume(self, t) -> None:
        self.current = t
        t.paused = False
        t.its_turn.release()
        self.scheduler_turn.acquire()
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
            t.its_turn.release()
        if error is not None and not isinstance(error, Abort):
            raise error
        return finished


def run_tiles(launch: Launch, fn, call_args: list, lowered) -> int:
    """Run ``fn`` once per tile of the launch's grid; the number of tiles that ran to the end."""
    g = launch.grid
    if len(g) == 1:
        order = ((i, (i,)) for i in range(g[0]))
    else:
        order = enumerate(np.ndindex(*g))
    if "atomic_" in lowered.text and int(np.prod(g)) > 1:
        # tiles may wait for each other (spin locks, flags): run them as coroutines
        return CooperativeTiles(launch, fn, call_args).run(order)
    tiles_run = 0
    with np.errstate(all="ignore"):
        try:
            for tid, bids in order:
                launch.enter_tile(tid, bids)
                try:
                    fn(*call_args)
                except Abort:
                    raise
                except Exception as exc:
                    raise launch.located_error(exc) from None
                tiles_run += 1
        except Abort:
            pass
    return tiles_run
