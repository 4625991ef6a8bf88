"""The CPU simulator: run tile kernels with NumPy, tile by tile, and see what the GPU cannot show.

Owns ``simulate()`` and everything under it. It executes the *same* lowered cuTile Python text the
compiler sees (``cutile_lab.compiling.lowering.lower``), once per tile of the grid, against a NumPy
implementation of the ``ct`` namespace; every tile operation is one vectorised NumPy operation.
Tile-language kernels and plain cuTile Python kernels both run. It records which tile touched
which element of every argument, so it can report what hardware cannot: out-of-range tile
accesses, out-of-bounds indices, write-write and read-write races between tiles, and draw the
ownership map. It must not compile for, launch on, or touch a GPU.

Entry point::

    result = simulate(kernel, [z, x, y], grid=(8,), consts={"B": 128})
    result.diagnostics              # SIM0xx: out-of-range accesses, races, failed asserts
    result.ownership["z"]           # int32 map: the linear tile id that wrote each element
    result.ownership_figure("z")    # the picture (matplotlib Figure)

``kernel`` is a ``cutile_lab.Kernel`` (``@cl.kernel``, ``kernels_from_source``, a notebook
cell), a ``KernelDef``, or a plain ``@ct.kernel`` function from cuda.tile (its ``cuda.tile``
references, helper functions included, are redirected to the simulator). The ownership checker
is not run here (``Kernel.check()`` does that): the simulator shows what a kernel actually does.

Modules: ``dtypes`` (dtypes, promotion, rounding), ``tiles`` (tiles and compute ops: ``tile_value``,
``tile_elementwise``, ``tile_shapes``, ``tile_reductions``, ``tile_matmul``), ``memory`` (array
arguments and their views; the ops in ``memory_tiles`` and ``memory_pointers``, combined in
``memory_ops``; access records in ``memory_access``), ``namespace`` (the ``ct`` the kernel sees),
``engine`` (``simulate``: ``arguments``, ``launch_state``, ``program``, ``scheduling``),
``result`` (``SimResult``), ``picture`` (figures).

Numerics (what the simulator does where the GPU has a choice):

* Results have cuTile's dtypes (its promotion table; Python literals are loosely typed). f16,
  bf16 and fp8 values are computed in float32 and rounded to the storage type after every op.
* ``mma`` multiplies and accumulates in float32 (float64 for f64 inputs, exact integers for
  i8/u8) and rounds once to the accumulator's dtype. f32 x f32 ``mma`` is computed in full f32;
  tf32 rounding (10-bit mantissa) happens only where a kernel converts with
  ``astype(tfloat32)``. The GPU sums in a different order, so results agree to rounding.
* Reductions and scans of f16/bf16 accumulate in float32 and round the result once (the GPU
  combines pairwise in the element type; the difference is within a few ulps).
* Float-to-integer conversion truncates toward zero and saturates (NaN becomes 0).
* Padding ``UNDETERMINED`` (the default of ``ct.load``) pads with zero; the GPU leaves it
  unspecified.
* Rounding modes other than round-to-nearest-even and ``flush_to_zero`` are accepted and
  ignored; transcendental functions are NumPy's (correctly rounded or nearly), not the GPU's
  approximations.
* Tiles run one after another in row-major order of the grid; in a kernel that uses atomics,
  a tile whose atomic changed nothing (a lock another tile holds, a flag not set yet) pauses
  and the other tiles run, so spin locks and flags between tiles make progress (see below).

Diagnostics (``SimResult.diagnostics``):

* SIM001 (error) a ``load`` of a tile wholly outside the array (undefined on the GPU)
* SIM002 (error) a ``store`` of a tile wholly outside the array (undefined on the GPU)
* SIM003 (error) gather/scatter/atomic indices out of bounds with ``check_bounds=False``
* SIM004 (warning) gather/scatter/atomic indices out of bounds, skipped by bounds checking
* SIM005 (error) a load/store with ``check_bounds=False`` that crosses the array's edge
* SIM010 (error) write-write race: two tiles of one launch write one element
* SIM011 (error) read-write race: a tile reads what another tile of the launch writes
* SIM020 (error) a device ``assert_`` failed (the launch stops, as on the GPU)
* SIM021 (error) ``assume_divisible_by`` is false
* SIM030 (note) the grid is not the one the outputs' partitions infer
* SIM040 (note) two array arguments overlap in memory (one array passed twice is tracked as
  one; partial overlaps are not)
* SIM022 (error) tiles spin on atomics that no tile will change (a deadlock; the launch stops)

Atomics order tiles as on the GPU: an acquire (``atomic_cas`` taking a lock, the default
``ACQ_REL`` order) sees everything the releasing tile did before its release, so reads and
writes under a spin lock are not races; tiles of a kernel that uses atomics run one at a time,
each pausing where an atomic changed nothing (a lock held by another tile), so spin locks and
flags between tiles make progress.

A launch on the simulator backend (``cl.set_backend("sim")``) checks its result when it
runs: any error above raises ``SimulationProblemError`` (CL061) from ``.sync()`` with the
located report; ``set_on_error("warn")`` (or ``CUTILE_LAB_SIM_ON_ERROR=warn``) warns
instead, ``"ignore"`` leaves the report in ``op.sim_result`` only. ``simulate()`` itself never
raises for them: its result holds them.
"""
from cutile_lab.errors import SimulationError
from cutile_lab.simulation.engine import simulate
from cutile_lab.simulation.picture import ownership_figure, ownership_image
from cutile_lab.simulation.result import (SimResult, SimulationProblemError, SimulationWarning,
                                          on_error, set_on_error)

__all__ = ["simulate", "SimResult", "ownership_figure", "ownership_image", "SimulationError",
           "SimulationProblemError", "SimulationWarning", "set_on_error", "on_error"]
