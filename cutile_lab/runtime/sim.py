"""The simulator backend's launch: hand the real arguments to ``cutile_lab.simulation``.

Owns only the bridge: arguments in declared parameter order (a partition becomes its whole
tensor's NumPy view, written in place; scalars pass as given: the simulator checks them against the declared dtype),
the grid and the bound constants go to ``simulate``; what it returns is kept on the launch op
(``op.sim_result``) for the notebook to show.
"""
from __future__ import annotations

import numpy as np

from cutile_lab.simulation import simulate

from cutile_lab.runtime.partition import Partition
from cutile_lab.runtime.tensor import Tensor


def run_simulated(kernel, info, values: dict, consts: dict, grid: tuple):
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


__all__ = ["run_simulated"]
