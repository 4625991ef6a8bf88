"""What a simulated launch leaves behind: ``SimResult``.

Owns the result value (ownership maps, per-tile write/read counts, conflict masks, diagnostics,
timing) and its text summary. Pictures of it are drawn by ``picture``.
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field

import numpy as np

from cutile_lab.diagnostics import Diagnostic
from cutile_lab.errors import SimulationProblemError

#: What a launch on the simulator backend does when the simulator finds an error (a race, an
#: out-of-bounds tile, a failed assert, a deadlock) by the time its ``.sync()`` returns:
#: ``"raise"`` (the default) raises ``SimulationProblemError`` with the located report,
#: ``"warn"`` issues a ``SimulationWarning`` with the same report and returns, ``"ignore"``
#: leaves it in ``op.sim_result``. Set it here, with ``set_on_error``, or with the environment
#: variable ``CUTILE_LAB_SIM_ON_ERROR``.
ON_ERROR_CHOICES = ("raise", "warn", "ignore")
_on_error = [os.environ.get("CUTILE_LAB_SIM_ON_ERROR", "raise")]


class SimulationWarning(UserWarning):
    """The simulator found an error in a launch, and ``set_on_error("warn")`` is in effect."""


def set_on_error(mode: str) -> None:
    """``"raise"``, ``"warn"`` or ``"ignore"``: see ``ON_ERROR_CHOICES``."""
    if mode not in ON_ERROR_CHOICES:
        raise ValueError(f"on_error must be one of {', '.join(ON_ERROR_CHOICES)}, got {mode!r}")
    _on_error[0] = mode


def on_error() -> str:
    mode = _on_error[0]
    return mode if mode in ON_ERROR_CHOICES else "raise"


@dataclass
class SimResult:
    """The record of one simulated launch.

    ``ownership[name]``: int32 map with the shape of argument ``name``: the linear id of the
    tile that last wrote each element, -1 where no tile wrote, -2 where several tiles updated
    the element with atomics. Present for every ``Mut`` output and every argument some tile
    wrote. Linear tile ids are row-major over the grid: tile ``(b0, b1, b2)`` of grid
    ``(g0, g1, g2)`` is ``(b0 * g1 + b1) * g2 + b2`` (``tile_coords`` goes back).

    ``writes_by_tile[tile][name]`` / ``reads_by_tile[tile][name]``: elements written / read.
    ``conflicts[name]``: bool map of elements written by more than one tile (races), only for
    arguments that have any. ``masked[name]``: the stores that crossed the array's edge, as
    (tile id, nominal box: (start, stop) per axis, reaching past the shape); their elements
    outside the array were dropped (masked), as on the GPU. ``diagnostics``: ``SIM0xx`` diagnostics, errors first.
    """

    kernel: str
    grid: tuple[int, ...]
    ownership: dict[str, np.ndarray] = field(default_factory=dict)
    writes_by_tile: dict[int, dict[str, int]] = field(default_factory=dict)
    reads_by_tile: dict[int, dict[str, int]] = field(default_factory=dict)
    conflicts: dict[str, np.ndarray] = field(default_factory=dict)
    masked: dict[str, list] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    elapsed: float = 0.0
    tiles_run: int = 0
    aborted: bool = False
    outputs: list[str] = field(default_factory=list)
    recorded: bool = True

    @property
    def num_tiles(self) -> int:
        return int(np.prod(self.grid))

    def tile_coords(self, tile_id: int) -> tuple[int, ...]:
        """The block index (``ct.bid`` per axis) of a linear tile id."""
        return tuple(int(i) for i in np.unravel_index(tile_id, self.grid))

    def tile_id(self, *coords: int) -> int:
        return int(np.ravel_multi_index(coords, self.grid))

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]

    def check(self, mode: str | None = None) -> None:
        """Raise (or warn, or nothing: ``mode``, default ``on_error()``) when the launch had
        errors, with every diagnostic rendered at the user's line."""
        mode = mode or on_error()
        errors = self.errors
        if not errors or mode == "ignore":
            return
        from cutile_lab.diagnostics.render import render_text
        first = errors[0]
        text = (f"the simulator found {len(errors)} error(s) in `{self.kernel}` "
                f"(grid {self.grid}); first: [{first.code}] {first.message}\n"
                + render_text(self.diagnostics, color=False))
        if mode == "warn":
            warnings.warn(text, SimulationWarning, stacklevel=3)
            return
        raise SimulationProblemError(
            text, errors, self, span=first.span,
            help="fix the kernel, or set cutile_lab.simulation.set_on_error(\"warn\") to see "
                 "the report and go on")

    @property
    def ok(self) -> bool:
        """No error diagnostics and the launch ran to the end."""
        return not self.errors and not self.aborted

    def codes(self) -> list[str]:
        return [d.code for d in self.diagnostics]

    def ownership_image(self, name: str) -> np.ndarray:
        """RGB (uint8, H x W x 3) picture of who wrote ``name``: one pixel per element
        (1-D arrays are a 1 x N strip), coloured by tile, unwritten grey, races red."""
        from cutile_lab.simulation.picture import ownership_image
        return ownership_image(self, name)

    def ownership_figure(self, name: str | None = None, **kwargs):
        """A matplotlib ``Figure`` of the ownership map of ``name`` (default: first output)."""
        from cutile_lab.simulation.picture import ownership_figure
        return ownership_figure(self, name, **kwargs)

    def summary(self) -> str:
        lines = [f"simulated {self.kernel} on grid {self.grid}: {self.tiles_run} tile(s) in "
                 f"{self.elapsed * 1e3:.1f} ms" + (" (aborted)" if self.aborted else "")]
        for name, own in self.ownership.items():
            written = int((own != -1).sum())
            lines.append(f"  {name}: {written}/{own.size} elements written"
                         + (f", {int(self.conflicts[name].sum())} in races"
                            if name in self.conflicts else ""))
        for d in self.diagnostics:
            where = f"{d.span}: " if d.span else ""
            lines.append(f"  {d.severity}[{d.code}]: {where}{d.message}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:          # the dataclass repr would print every array in full
        return f"<SimResult {self.summary()}>"
