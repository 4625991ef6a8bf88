"""The notebook's cells as the lab names them, both ways.

Owns: the file name a ``%%tilekernel`` cell's code is compiled under (``<tilekernel-cell-N>``,
N the execution count the front end shows), the front end's id of the running cell, and
``CellNames``: which cell a file name Python gives notebook code is (IPython's
``<ipython-input-…>``, ipykernel's temporary ``…/ipykernel_…/….py``, the lab's own) and how
its lines count there (``cell [N]``, the ``%%tilekernel`` line included). A leaf: it imports
nothing of the lab.
"""
from __future__ import annotations

import re
import sys
import traceback

_TILEKERNEL = re.compile(r"^<tilekernel-cell-(\d+)(?:\.\d+)?>$")


class CellNames:
    """Which cell a file name is, and how its lines count in that cell."""

    def __init__(self, shell, running: str | None = None):
        compiler = getattr(shell, "compile", None)
        self._cells: dict[str, int] = dict(getattr(compiler, "_filename_map", {}) or {})
        self.running = running

    def of(self, filename: str) -> tuple[str, int] | None:
        """``(shown name, line offset)`` for a notebook file, or None for a real file. The
        running cell (where the panel shows) is "this cell"; others are named by their
        execution count, as the front end shows it."""
        m = _TILEKERNEL.match(filename)
        if m:
            return f"cell [{m.group(1)}]", 1          # the %%tilekernel line comes first
        if filename == self.running:
            return "this cell", 0
        n = self._cells.get(filename)
        if n is not None:
            return f"cell [{n}]", 0
        return None


def running_cell_file(shell, tb=None) -> str | None:
    """The file of the cell that is running: the outermost notebook frame of ``tb`` (an
    error's traceback), else of the current stack (a warning)."""
    cells = CellNames(shell)
    if tb is not None:
        for frame in traceback.extract_tb(tb):
            if frame.name == "<module>" and cells.of(frame.filename) is not None:
                return frame.filename
        return None
    found = None
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_name == "<module>" and cells.of(f.f_code.co_filename) is not None:
            found = f.f_code.co_filename
        f = f.f_back
    return found


def running_count(shell) -> int:
    """The execution count of the cell that is running, as the front end shows it (``[3]``).
    IPython 9 counts the cell before running it; IPython 8 after."""
    n = getattr(shell, "execution_count", None) or 0
    import IPython
    return max(0, n - 1) if IPython.version_info[0] >= 9 else n


def cell_filename(shell, used: set) -> str:
    """The file name of a ``%%tilekernel`` (or ``%%cuda``) cell: ``<tilekernel-cell-N>``, N its
    execution count (``.2``, ``.3`` ... when a name in ``used`` has it already)."""
    n = running_count(shell)
    name = f"<tilekernel-cell-{n}>"
    k = 1
    while name in used:
        k += 1
        name = f"<tilekernel-cell-{n}.{k}>"
    used.add(name)
    return name


def cell_id(shell) -> str | None:
    """The front end's id of the running cell (JupyterLab and nbclient send it), or None."""
    kernel = getattr(shell, "kernel", None)
    try:
        parent = kernel.get_parent("shell") if kernel is not None else None
        found = ((parent or {}).get("metadata") or {}).get("cellId")
        return str(found) if found else None
    except Exception:
        return None
