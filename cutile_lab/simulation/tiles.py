"""Tiles and the compute half of the simulated ``ct`` namespace, vectorised with NumPy.

The face of the tile ops, and what the rest of the simulator imports: ``Tile`` (an immutable
value: one NumPy array and its cuTile dtype; ``tile_value``) and every op that works on tiles and
scalars without touching memory, each in the module of its kind:

* ``tile_elementwise``: arithmetic and Python operators with cuTile's promotion rules,
  comparisons, bitwise ops, math functions, conversions;
* ``tile_shapes``: shape ops, sub-tiles, ``where``, factories;
* ``tile_reductions``: reductions and scans;
* ``tile_matmul``: ``mma``/``matmul``.

This module imports them all and fills in ``tile_value.OPS``, what ``Tile``'s operators and
methods call. Each cuTile op is one NumPy operation on the whole tile, never a loop over elements.
Memory (load/store/gather/atomics) lives in ``memory``; launching in ``engine``.

Scalars: Python ``int``/``float``/``bool`` values are cuTile's *loosely typed* constants (the
literal ``2.0`` in ``t * 2.0`` takes ``t``'s dtype); every typed scalar (a kernel's scalar
argument, ``ct.bid(0)``, a reduction over all axes) is a 0-d ``Tile``.
"""
from __future__ import annotations

from cutile_lab.simulation.tile_elementwise import (add, sub, mul, truediv, floordiv, mod, divmod,
                                                    cdiv, pow, atan2, minimum, maximum, equal,
                                                    not_equal, less, less_equal, greater,
                                                    greater_equal, bitwise_and, bitwise_or,
                                                    bitwise_xor, bitwise_lshift, bitwise_rshift,
                                                    exp, exp2, log, log2, sqrt, rsqrt, sin, cos,
                                                    tan, sinh, cosh, tanh, floor, ceil, abs,
                                                    negative, bitwise_not, isnan, astype, bitcast,
                                                    pack_to_bytes, unpack_from_bytes)
from cutile_lab.simulation.tile_shapes import (check_pow2_shape, reshape, broadcast_to, expand_dims,
                                               permute, transpose, cat, extract, insert, where,
                                               full, zeros, ones, arange, astile)
from cutile_lab.simulation.tile_reductions import (sum, prod, max, min, argmax, argmin, cumsum,
                                                   cumprod, reduce, scan)
from cutile_lab.simulation.tile_matmul import mma, matmul
from cutile_lab.simulation.tile_value import OPS, KernelError, Tile, as_tile, is_tile, scalar_tile

# what Tile's operators and methods call (t + u, -t, t.astype(...), t @ u, ...)
for _op in (add, sub, mul, truediv, floordiv, mod, pow, divmod, negative, abs, bitwise_and,
            bitwise_or, bitwise_xor, bitwise_lshift, bitwise_rshift, bitwise_not, equal,
            not_equal, less, less_equal, greater, greater_equal, astype, reshape, permute,
            transpose, extract, insert, matmul):
    setattr(OPS, _op.__name__, _op)
del _op

__all__ = ["Tile", "KernelError", "as_tile", "scalar_tile", "is_tile", "add", "sub", "mul",
           "truediv", "floordiv", "mod", "divmod", "cdiv", "pow", "atan2", "minimum", "maximum",
           "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "bitwise_and",
           "bitwise_or", "bitwise_xor", "bitwise_lshift", "bitwise_rshift", "exp", "exp2", "log",
           "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "floor", "ceil",
           "abs", "negative", "bitwise_not", "isnan", "astype", "bitcast", "pack_to_bytes",
           "unpack_from_bytes", "check_pow2_shape", "reshape", "broadcast_to", "expand_dims",
           "permute", "transpose", "cat", "extract", "insert", "where", "full", "zeros", "ones",
           "arange", "astile", "sum", "prod", "max", "min", "argmax", "argmin", "cumsum", "cumprod",
           "reduce", "scan", "mma", "matmul"]
