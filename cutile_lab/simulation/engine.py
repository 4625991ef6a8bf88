"""Running a kernel on the CPU: ``simulate()``.

Owns what ``simulate`` accepts (a kernel, a ``@ct.kernel`` function or a ``KernelDef``) and the
steps of one simulated launch: bind the arguments (``arguments``), set up the launch state
(``launch_state.Launch``) and the NumPy ``ct`` namespace, run the lowered cuTile Python text
(``program``) once per tile of the grid (``scheduling``), and gather the result (diagnostics at
the user's own line, ownership maps, per-tile counts).

The text that runs is exactly what ``cutile_lab.compiling.lowering.lower`` produces for the
compiler (compiled once per kernel and cached), so the simulated kernel is the compiled kernel.
"""
from __future__ import annotations

import time
import types
from typing import Mapping, Sequence

from cutile_lab.diagnostics import Diagnostic
from cutile_lab.errors import SimulationError
from cutile_lab.simulation.arguments import bind_arguments, grid_of, kernel_arguments
from cutile_lab.simulation.launch_state import Launch
from cutile_lab.simulation.namespace import make_namespace
from cutile_lab.simulation.program import kernel_function, program_of
from cutile_lab.simulation.result import SimResult
from cutile_lab.simulation.scheduling import run_tiles


# --- what simulate accepts ---------------------------------------------------------------------

def _definition(kernel_or_kdef):
    from cutile_lab.language.frontend import KernelDef
    if isinstance(kernel_or_kdef, KernelDef):
        return kernel_or_kdef, {}
    kdef = getattr(kernel_or_kdef, "definition", None)
    if isinstance(kdef, KernelDef):
        return kdef, dict(getattr(kernel_or_kdef, "globals", None) or {})
    fn = getattr(kernel_or_kdef, "_pyfunc", None)          # a @ct.kernel from cuda.tile
    if fn is None and isinstance(kernel_or_kdef, types.FunctionType):
        fn = kernel_or_kdef
    if fn is not None:
        from cutile_lab.simulation.adapters import function_kernel as make_kernel
        k = make_kernel(fn)
        return k.definition, dict(k.globals)
    raise SimulationError(f"simulate() takes a kernel (cl.kernel, kernels_from_source, a "
                          f"@ct.kernel function) or a KernelDef, got "
                          f"{type(kernel_or_kdef).__name__}")


# --- simulate ----------------------------------------------------------------------------------

def simulate(kernel_or_kdef, args: Sequence, grid, consts: Mapping[str, int] | None = None, *,
             record: bool = True, check_types: bool = True) -> SimResult:
    """Run a kernel on the CPU, tile by tile, with NumPy.

    ``args`` are the kernel's runtime parameters in declared order: NumPy arrays for tensor
    parameters (outputs are written in place) and Python/NumPy numbers for scalars. ``consts``
    binds the const generics (a tile-language kernel's shape names and ``Const[int]``
    parameters; a plain cuTile kernel's ``ct.Constant`` parameters); they may also be given
    positionally when ``args`` lists every declared parameter. ``grid`` is the number of tiles
    per axis (a tile-language launch infers it from the outputs' partitions: ceil(shape / tile)).

    A plain cuTile kernel is first type-checked by cuTile's own front end for these argument
    types (``check_types``; ``typecheck``): what cuTile rejects raises its message here too.

    With ``record`` (the default) every access is recorded: the result's ownership maps, race
    detection and per-tile counts; without it only out-of-range accesses are reported.

    Raises ``SimulationError`` (at the user's line) for bad use: wrong arguments, a missing
    const, a non-power-of-two tile shape, mismatched shapes or dtypes in an op.
    """
    t0 = time.perf_counter()
    kdef, globals_ = _definition(kernel_or_kdef)
    errors = [d for d in kdef.diagnostics if d.is_error]
    if errors:
        e = errors[0]
        raise SimulationError(f"`{kdef.name}` has errors: [{e.code}] {e.message}", span=e.span,
                              help=e.help)
    grid_t = grid_of(grid)
    prog = program_of(kdef)
    lowered = prog.lowered
    by_name, bound_consts = bind_arguments(kdef, lowered, args, consts)

    launch = Launch(prog, kdef, grid_t, record)
    ns = make_namespace(launch)
    pre_diags: list[Diagnostic] = []
    arrays, values, trackers = kernel_arguments(kdef, by_name, bound_consts, grid_t, launch,
                                                record, pre_diags)
    call_args = [values[n] for n in lowered.param_names]
    if kdef.kind == "cutile" and check_types:
        from cutile_lab.simulation.typecheck import check_with_cutile
        check_with_cutile(kdef, lowered, values, bound_consts, globals_)
        launch.types_checked = True

    fn = kernel_function(prog, kdef, globals_, ns, launch)
    tiles_run = run_tiles(launch, fn, call_args, lowered)
    result = _result(kdef, launch, tiles_run, arrays, trackers, pre_diags)
    result.elapsed = time.perf_counter() - t0
    return result


def _result(kdef, launch: Launch, tiles_run: int, arrays: list, trackers: dict,
            pre_diags: list) -> SimResult:
    """What the launch did: its diagnostics and, when recorded, the ownership maps, conflicts,
    masked accesses and per-tile counts of the arrays written."""
    record = launch.record
    result = SimResult(kernel=kdef.name, grid=launch.grid, elapsed=0.0, tiles_run=tiles_run,
                       aborted=launch.aborted, recorded=record)
    result.diagnostics = launch.diagnostics() + pre_diags
    outputs = [p.name for p in kdef.outputs] if kdef.kind == "tile" else []
    result.outputs = outputs
    if record:
        done: set[int] = set()
        for name, _a in arrays:
            tr = trackers[name]
            if name in outputs or tr.writes:
                result.ownership[name] = tr.owner
                if tr.conflict is not None and tr.conflict.any():
                    result.conflicts[name] = tr.conflict
                if tr.masked:
                    result.masked[name] = list(tr.masked)
                if name not in outputs and name not in result.outputs:
                    result.outputs.append(name)
            if id(tr) in done:
                continue
            done.add(id(tr))
            for tid, n in tr.writes.items():
                result.writes_by_tile.setdefault(tid, {})[tr.name] = n
            for tid, n in tr.reads.items():
                result.reads_by_tile.setdefault(tid, {})[tr.name] = n
    return result
