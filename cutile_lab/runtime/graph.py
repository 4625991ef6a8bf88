"""CUDA graphs: capture a DeviceOp chain once, replay it many times for a fraction of the cost.

Owns ``graph(op_or_fn)`` and ``Graph`` (``replay(n)``, ``result``). Capture runs the chain's
host side once — argument resolution, ownership checks, compilation, packing — with its stream in
capture mode (cuda.core's ``GraphBuilder``, cuda-core >= 1.2), so a replay is one
``cuGraphLaunch`` for the whole chain (through ctypes, ``driver.graph_launcher``). Memory the chain creates is
allocated at capture time, outside the graph (so every replay reuses it); fills are captured.
A replay checks the captured arguments against in-flight work and moves, then launches.
On the simulator a replay re-runs the chain.
"""
from __future__ import annotations

from cutile_lab.errors import LaunchError
from cutile_lab.runtime import ownership
from cutile_lab.runtime.callsite import describe, user_call_site, user_site
from cutile_lab.runtime import ops
from cutile_lab.runtime.backend import GPU
from cutile_lab.runtime.ops import DeviceOp, ExecContext, Pending, as_core_stream, record_event
from cutile_lab.runtime.ownership import Flight


class Capture:
    """State of one capture: the capturing stream and the side stream that allocates."""

    def __init__(self, stream, alloc_stream):
        self.stream = stream
        self.alloc_stream = alloc_stream
        self.allocations: list = []
        self.kernels = 0

    def prepared_allocation(self, storage) -> None:
        self.allocations.append(storage)


class Graph:
    """A captured chain. ``replay(n)`` runs it ``n`` times and returns the chain's result."""

    def __init__(self, op: DeviceOp, stream=None):
        self.op = op
        self.label = f"graph({op.label})"
        self.where = user_call_site()
        self.backend = op._backend()
        self.replays = 0
        self._raw = None            # ctypes cuGraphLaunch and the exec handle, once known
        self._graph = None          # cuda.core Graph
        self.result = None
        self.entries: list = []
        self.keep: list = []
        self._watch: list = []
        self._borrows: list = []
        self._ranges: tuple = ()
        self.num_kernels = 0
        self.method = "sim"
        if self.backend == "gpu":
            self._capture(stream)
        else:
            # the simulator re-runs the chain: its own launches check it each time
            self._watch = [o for o in _leaves(op) if hasattr(o, "moved")]

    # --- capture ---------------------------------------------------------------------------------
    def _capture(self, stream) -> None:
        from cutile_lab.runtime.device import gpu
        g = gpu()
        self._gpu = g
        s = as_core_stream(stream) if stream is not None else g.new_stream()
        self._stream = s
        record = Flight(self.label, self.where, GPU, s)   # collects borrows; not registered
        self._capture_core(g, s, record)
        self.method = "cuda.core GraphBuilder"
        self.entries = record.entries
        self.keep = record.keep
        # what the chain itself moves (a tensor it creates and partitions) is moved each replay;
        # everything else it uses must still be alive (not moved, not unpartitioned) to replay
        self._watch = [o for o in self.keep if getattr(o, "moved", None) is None
                       and hasattr(o, "moved")]
        self._borrows = [(e.param or "argument", e.tensor, e.mut) for e in self.entries]
        self._ranges = ownership.launch_ranges(self._borrows)

    def _capture_core(self, g, s, record) -> None:
        gb = s.create_graph_builder()
        gb.begin_building("relaxed")
        capture = Capture(gb, g.default_stream)
        ctx = ExecContext(GPU, gb, record, capture=capture, gpu=g)
        try:
            self.result = self.op._enqueue(ctx)
        except BaseException:
            try:
                gb.end_building()
                gb.close()
            except Exception:
                pass
            raise
        gb.end_building()
        self._graph = gb.complete()
        g.default_stream.sync()           # allocations made for the graph exist
        self._graph.upload(s)
        s.sync()
        self._builder = gb
        self.num_kernels = capture.kernels

    # --- replay ----------------------------------------------------------------------------------
    def _check_replay(self, where, lane=ownership.NO_LANE, flight=None) -> None:
        """Moves and in-flight conflicts of a replay; ``flight``: the replay's own, registered
        with its borrows before this check (so that of two threads racing for the same memory,
        the second to take the registry's lock sees the first's borrows)."""
        for obj in self._watch:
            if obj.moved is not None:
                ownership.raise_use_after_move(obj, f"replay {self.label}", where=where)
        with ownership._lock:
            if lane is ownership.NO_LANE or ownership.others_than_lane(lane):
                diags = [d for _, d in ownership.check_launch_borrows(
                    self._borrows, flight, where, lane, self._ranges)]
                if diags:
                    raise ownership.OwnershipError(diags)

    def launch(self, n: int = 1, stream=None) -> Pending:
        """Enqueue ``n`` replays and return at once (``pending.wait()`` for the result)."""
        where = user_site(2)
        if self.backend == "sim":
            self._check_replay(where)
            from cutile_lab.runtime.ops import _start
            pending = None
            for i in range(n):
                pending = _start(self.op, None, for_sync=True)
                if i < n - 1:
                    pending.wait()
            self.replays += n
            return pending
        from cutile_lab.runtime.device import gpu
        gpu()                  # current in this thread (a replay may come from any thread)
        s = as_core_stream(stream) if stream is not None else self._stream
        lane, handle = self._gpu.stream_handles(s)
        flight = Flight(self.label, where, GPU, s, lane)
        flight.entries = list(self.entries)
        flight.keep = [self]
        flight.result = self.result
        ownership.register(flight)
        try:
            self._check_replay(where, lane, flight)
        except BaseException:
            ownership.release(flight)
            raise
        try:
            raw = self._raw
            if raw is None:
                raw = self._raw = self._raw_launcher()
            done = 0
            if raw:
                fn, exec_ptr = raw
                for _ in range(n):
                    err = fn(exec_ptr, lane)
                    if err != 0:
                        if self.replays or done:
                            raise LaunchError(f"cuGraphLaunch failed: CUDA error {err}")
                        self._raw = raw = False     # use cuda.core's launch instead
                        break
                    done += 1
            if not raw:
                for _ in range(n - done):
                    self._graph.launch(s)
        finally:
            flight.event = record_event(s, handle)
            flight.ready = True
        self.replays += n
        return Pending(flight)

    def _raw_launcher(self):
        """(ctypes cuGraphLaunch, the CUgraphExec address), or False to use cuda.core's."""
        from cutile_lab.runtime.driver import graph_launcher
        return graph_launcher(self._graph)

    def replay(self, n: int = 1, stream=None):
        """Run the captured chain ``n`` times, wait, and return its result."""
        return self.launch(n, stream).wait()

    def __repr__(self) -> str:
        return (f"<Graph of {self.op.label}: {self.num_kernels} kernel(s), {self.method}, "
                f"replayed {self.replays}x, captured at {describe(self.where)}>")


def _leaves(op):
    """Tensors and partitions an op chain names up front (its launches' bound arguments)."""
    out, todo = [], [op]
    while todo:
        o = todo.pop()
        for v in getattr(o, "bound", {}).values():
            if isinstance(v, DeviceOp):
                todo.append(v)
            else:
                out.append(v)
        prev = getattr(o, "prev", None)
        if isinstance(prev, DeviceOp):
            todo.append(prev)
        todo.extend(getattr(o, "ops", []) or [])
    return out


def graph(op_or_fn, *, stream=None) -> Graph:
    """Capture a DeviceOp (or a function returning one) into a CUDA graph."""
    op = op_or_fn
    if not isinstance(op, DeviceOp):
        if callable(op):
            op = op()
        if not isinstance(op, DeviceOp):
            raise LaunchError("cl.graph takes a DeviceOp (a kernel call, a .then chain) or a "
                              "function returning one")
    return Graph(op, stream)


__all__ = ["graph", "Graph"]

ops.GRAPH_CAPTURE[0] = graph        # DeviceOp.graph() captures through this module
