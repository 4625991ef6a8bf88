"""``from cutile_lab.lang import *``: the names a kernel signature and body are written with.

Memory forms and ``unsafe`` only mean something inside a kernel (the lowering replaces them);
called on the host they say so. cuTile's compute ops (``exp``, ``sum``, ``mma``...) are resolved
inside kernel bodies without being imported, so they never shadow Python's own ``sum``/``max``.
"""
from __future__ import annotations

from contextlib import contextmanager

from cutile_lab.language.dtypes import (bf16, bool_, f8e4m3, f8e5m2, f16, f32, f64, i8, i16, i32,
                                        i64, tf32, u8, u16, u32, u64)
from cutile_lab.language.types import Const, Mut, Tensor


def _kernel_only(name: str):
    def stub(*args, **kwargs):
        raise RuntimeError(f"`{name}` can only be used inside a tile kernel's body")
    stub.__name__ = name
    return stub


load_tile_like = _kernel_only("load_tile_like")
load_tile = _kernel_only("load_tile")
tile_id = _kernel_only("tile_id")
num_tiles = _kernel_only("num_tiles")


@contextmanager
def unsafe():
    """Inside a kernel: opt out of ownership checks for raw memory ops (reported as unchecked)."""
    raise RuntimeError("`with unsafe():` can only be used inside a tile kernel's body")
    yield


__all__ = ["Tensor", "Mut", "Const", "f16", "bf16", "f32", "f64", "tf32", "f8e4m3", "f8e5m2",
           "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool_", "load_tile_like",
           "load_tile", "tile_id", "num_tiles", "unsafe"]
