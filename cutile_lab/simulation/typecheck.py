"""cuTile Python's own type checks for a simulated plain cuTile kernel.

Before a plain ``@ct.kernel`` runs on the simulator, cuTile's front end (``ast2hir``, ``hir2ir``,
its type inference and checks, up to Tile IR bytecode; no tileiras, no GPU) is run on the same
lowered text with the launch's argument types and constants, so that a kernel cuTile rejects is
rejected here with cuTile's own message at the user's line, and a kernel it accepts is not
refused by a check of the simulator's own. Owns only that; results are cached per kernel text,
argument types and constants.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Mapping

import numpy as np

from cutile_lab.errors import CompileError, SimulationError

_CHECKED: "OrderedDict[tuple, CompileError | None]" = OrderedDict()


def _layout(value) -> Any:
    from cutile_lab.compiling.specialization import ArrayLayout, ScalarLayout
    from cutile_lab.language.dtypes import dtype_by_name
    from cutile_lab.simulation.memory import SimArray
    from cutile_lab.simulation.tiles import Tile
    if isinstance(value, SimArray):
        d = dtype_by_name(value.dtype.short)
        if d is None:
            return None
        a = value.data
        contiguous = a.ndim == 0 or a.strides[-1] == a.itemsize
        return ArrayLayout(d.name, a.ndim, contiguous=contiguous)
    if isinstance(value, Tile) and value.a.ndim == 0:
        d = dtype_by_name(value.dtype.short)
        return ScalarLayout(d.name) if d is not None else None
    return None


def check_with_cutile(kdef, lowered, values: Mapping[str, Any], consts: Mapping[str, Any],
                      globals_: Mapping[str, Any]) -> None:
    """Raise ``SimulationError`` with cuTile's message when its front end rejects ``kdef`` for
    these arguments. Arguments of a type the lab cannot describe to cuTile skip the check."""
    from cutile_lab.compiling.driver import _bytecode, _referenced_globals
    from cutile_lab.compiling.specialization import Specialization
    layouts = []
    for name in lowered.param_names:
        if name in consts:
            v = consts[name]
            if not isinstance(v, (bool, int, float, np.generic)):
                return
            continue
        lay = _layout(values.get(name))
        if lay is None:
            return
        layouts.append((name, lay))
    const_items = tuple(sorted((k, v.item() if isinstance(v, np.generic) else v)
                               for k, v in consts.items()))
    spec = Specialization(const_items, tuple(layouts))
    key = (lowered.text, repr(spec.key()), repr(_referenced_globals(kdef, globals_)))
    if key in _CHECKED:
        _CHECKED.move_to_end(key)
        problem = _CHECKED[key]
    else:
        try:
            _bytecode(kdef, lowered, spec, dict(kdef.options), globals_, None)
            problem = None
        except CompileError as e:
            problem = e
        except Exception:       # a front-end failure that is not a type error: not ours to judge
            problem = None
        _CHECKED[key] = problem
        if len(_CHECKED) > 256:
            _CHECKED.popitem(last=False)
    if problem is not None:
        raise SimulationError(f"cuTile rejects this kernel: {problem.message}",
                              span=problem.span or kdef.span, help=problem.help)
