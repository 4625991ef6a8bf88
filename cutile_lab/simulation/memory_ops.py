"""``MemoryOps``: the memory half of the simulated ``ct`` namespace, bound to one launch — the
tile-space ops (``memory_tiles``) and the pointer-style ops (``memory_pointers``) over the
records every access keeps (``memory_access``).
"""
from __future__ import annotations

from cutile_lab.simulation.memory_pointers import PointerAccess
from cutile_lab.simulation.memory_tiles import TileAccess


class MemoryOps(TileAccess, PointerAccess):
    """The memory half of the ``ct`` namespace, bound to one launch."""
