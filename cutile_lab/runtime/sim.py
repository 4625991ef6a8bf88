"""The simulator backend's operations (``backend.SIM``): work runs on the host, in order, when it
is started; its borrows are held until the host waits for it, like work in flight on a GPU.

Owns what the runtime does differently on the simulator: starting a chain (``start``: a flight
of its own lane, the chain run at once), memory (``new_tensor``: a NumPy array), the launch
(``launch``: the real arguments handed to ``cutile_lab.simulation.simulate`` — in declared
parameter order, a partition as its whole tensor's NumPy view written in place, scalars as given,
the grid and the bound constants; what it returns is kept on the launch op, ``op.sim_result``,
for the notebook to show), waiting (``wait``) and the persistent schedule's instance count. It
fills ``backend.SIM`` in when imported (the runtime package imports it).
"""
from __future__ import annotations

import math

import numpy as np

from cutile_lab.runtime import ownership
from cutile_lab.runtime.backend import SIM
from cutile_lab.runtime.dtypes import numpy_dtype
from cutile_lab.runtime.memory import HostStorage, host_address
from cutile_lab.runtime.ops import ExecContext, Pending, check_stream
from cutile_lab.runtime.ownership import Flight
from cutile_lab.runtime.partition import Partition
from cutile_lab.runtime.tensor import Tensor
from cutile_lab.simulation import simulate

# the simulator runs tiles one by one: a few instances of a persistent schedule show the loop
PERSISTENT_INSTANCES = 4


def start(op, stream, for_sync: bool) -> Pending:
    """Run ``op``'s chain now, in a flight of its own (its borrows are held until the host
    waits for it)."""
    if stream is not None:
        check_stream(stream)
    flight = Flight(op.label, op._where, SIM)
    ownership.register(flight)
    ctx = ExecContext(SIM, None, flight)
    try:
        flight.result = op._enqueue(ctx)
    except BaseException:
        ownership.release(flight)
        raise
    if flight.error is not None:
        # a launch that cannot run here (CUDA C++: ``foreign``) let the rest of the chain
        # be checked and enqueued; the chain ends with its error
        ownership.release(flight)
        raise flight.error
    return Pending(flight)


_NUMPY: dict = {}                  # tile dtype name -> NumPy dtype


def new_tensor(ctx, shape: tuple, dtype, where=None) -> Tensor:
    """An uninitialised NumPy array."""
    np_dt = _NUMPY.get(dtype.name)
    if np_dt is None:
        np_dt = _NUMPY[dtype.name] = numpy_dtype(dtype)
    flat = np.empty(math.prod(shape), np_dt)
    return Tensor.contiguous(HostStorage(host_address(flat), flat.nbytes, flat), dtype, shape,
                             where)


def prepare_launch(op, entry, values: dict, ctx) -> None:
    """Nothing to compile or pack: the simulator runs the checked kernel itself."""


def launch(op, values: dict, start, ctx) -> None:
    """Simulate the launch (``op._run_sim``: the kernel checked once, then ``run_simulated``)
    of ``start``'s entry (a ``ReusableStart``)."""
    entry = start.entry
    op._run_sim(values, entry.consts, entry.grid)


# waiting for a flight: the work ran when it was started, so its borrows are released (a lane
# of its own: nothing else to release)
wait = ownership.release


def grid_instances(tiles: int, kdef) -> int:
    return min(tiles, PERSISTENT_INSTANCES)


def run_simulated(kernel, info, values: dict, consts: dict, grid: tuple):
    """Simulate ``kernel`` over ``grid`` with the launch's real arguments (written in place)."""
    args = []
    views = {}
    for name in info.names:
        if name not in values:
            continue
        v = values[name]
        t = v.tensor if isinstance(v, Partition) else v
        if isinstance(t, Tensor):
            view = t._host_view()
            views[name] = view
            args.append(view)
        else:
            args.append(v)
    result = simulate(kernel, args, grid=tuple(grid), consts=dict(consts))
    _copy_back(result, views)
    result.check()       # a race or out-of-bounds access raises (or warns: set_on_error)
    return result


def _copy_back(result, views: dict) -> None:
    """If the simulator returned new output arrays instead of writing in place, copy them in."""
    outputs = getattr(result, "outputs", None)
    if not isinstance(outputs, dict):
        return
    for name, arr in outputs.items():
        view = views.get(name)
        if view is None or arr is None:
            continue
        arr = np.asarray(arr)
        if arr.shape == view.shape and not np.shares_memory(arr, view):
            view[...] = arr


SIM.implement(start=start, new_tensor=new_tensor, prepare_launch=prepare_launch, launch=launch,
              wait=wait, grid_instances=grid_instances)

__all__ = ["run_simulated", "start", "new_tensor", "prepare_launch", "launch", "wait",
           "grid_instances", "PERSISTENT_INSTANCES"]
