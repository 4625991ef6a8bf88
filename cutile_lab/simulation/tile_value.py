"""The simulator's tile value: ``Tile`` (an immutable NumPy array, or NumPy scalar for a 0-d
tile, with its cuTile dtype), ``KernelError`` (bad use of an op inside a simulated kernel), and
how Python values become tiles and operands.

``Tile``'s operators and methods (``t + u``, ``t.reshape(...)``, ``t @ u``) call the ops through
``OPS``, which ``tiles`` fills in once it has imported every op module: the op modules import
``Tile`` from here, so this module imports none of them (no import circle). Code outside the
tile ops imports ``Tile`` from ``tiles``, which guarantees ``OPS`` is filled.
"""
from __future__ import annotations

import types

import numpy as np

from cutile_lab.simulation import dtypes as D
from cutile_lab.simulation.dtypes import FLOAT, PromotionError, SimDType, constant_dtype, convert

_LOOSE = (bool, int, float)

# the tile ops Tile's operators and methods call (add, astype, reshape, matmul, ...), by name
# (a module object: reading its attributes is as fast as reading a global, unlike a namespace's)
OPS = types.ModuleType("cutile_lab.simulation.tile_ops")


class KernelError(Exception):
    """Bad use of an op inside a simulated kernel. The engine turns it into a
    ``SimulationError`` at the user's own line (and adds the tile id)."""

    def __init__(self, message: str, help: str | None = None):
        super().__init__(message)
        self.message = message
        self.help = help


# --- the tile value ----------------------------------------------------------------------------

class Tile:
    """A tile: an immutable NumPy array (or NumPy scalar, for 0-d tiles) with its cuTile dtype.

    Works like a cuTile tile: ``.shape``, ``.ndim``, ``.dtype``, ``.astype``, ``.reshape``,
    ``.permute``, ``.transpose`` (and ``.T``), ``.extract``, ``.item``, Python operators,
    ``t[:, None]``; a 0-d tile can be used as a loop bound, an index or a condition.
    """

    __slots__ = ("a", "dtype")
    __array_ufunc__ = None     # NumPy defers to our reflected operators
    __hash__ = None            # == is elementwise

    def __init__(self, a, dtype: SimDType):
        self.a = a
        self.dtype = dtype

    # shape and type
    @property
    def shape(self) -> tuple[int, ...]:
        return self.a.shape

    @property
    def ndim(self) -> int:
        return self.a.ndim

    @property
    def size(self) -> int:
        return self.a.size

    def numpy(self) -> np.ndarray:
        """The tile's values as a NumPy array (a copy, in the storage dtype)."""
        return np.array(self.a)

    # methods that mirror cuTile's Tile
    def astype(self, dtype, *, rounding_mode=None) -> "Tile":
        return OPS.astype(self, dtype, rounding_mode=rounding_mode)

    def reshape(self, shape) -> "Tile":
        return OPS.reshape(self, shape)

    def permute(self, axes) -> "Tile":
        return OPS.permute(self, axes)

    def transpose(self, axis0=None, axis1=None) -> "Tile":
        return OPS.transpose(self, axis0, axis1)

    @property
    def T(self) -> "Tile":
        return OPS.transpose(self)

    def extract(self, index, shape) -> "Tile":
        return OPS.extract(self, index, shape)

    def insert(self, index, value) -> "Tile":
        return OPS.insert(self, index, value)

    def item(self) -> "Tile":
        return OPS.reshape(self, ())

    # Python protocols
    def __bool__(self) -> bool:
        if self.a.ndim:
            raise KernelError(f"a tile of shape {self.shape} has no single truth value",
                              help="use `where(cond, a, b)` to select per element, or reduce "
                                   "it first (e.g. `max(t) > 0`)")
        return bool(self.a)

    def __index__(self) -> int:
        if self.a.ndim or self.dtype.category == FLOAT:
            raise KernelError(f"a {self.dtype} tile of shape {self.shape} cannot be used as an "
                              "integer index", help="index with a 0-d integer tile or an int")
        return int(self.a)

    def __int__(self) -> int:
        if self.a.ndim:
            raise KernelError(f"int() of a tile of shape {self.shape}")
        return int(self.a)

    def __float__(self) -> float:
        if self.a.ndim:
            raise KernelError(f"float() of a tile of shape {self.shape}")
        return float(self.a)

    def __iter__(self):
        raise KernelError("tiles cannot be iterated over",
                          help="use extract(t, index, shape) or a reduction")

    def __len__(self) -> int:
        raise KernelError("len() of a tile", help="use t.shape[0]")

    def __getitem__(self, key) -> "Tile":
        items = key if isinstance(key, tuple) else (key,)
        for k in items:
            if not (k is None or k is Ellipsis or
                    (isinstance(k, slice) and k == slice(None))):
                raise KernelError(f"a tile cannot be indexed with {k!r}",
                                  help="t[:, None] / t[None, :] add an axis; use "
                                       "extract(t, index, shape) for a sub-tile")
        return Tile(np.asarray(self.a)[key], self.dtype)

    def __format__(self, spec: str) -> str:
        return _format(np.asarray(self.a), spec, self.dtype)

    def __str__(self) -> str:
        return _format(np.asarray(self.a), "", self.dtype)

    def __repr__(self) -> str:
        text = str(self)
        if len(text) > 200:
            text = text[:200] + "..."
        return f"<tile[{self.dtype}, {self.shape}] {text}>"

    # operators
    def __add__(self, o): return OPS.add(self, o)
    def __radd__(self, o): return OPS.add(o, self)
    def __sub__(self, o): return OPS.sub(self, o)
    def __rsub__(self, o): return OPS.sub(o, self)
    def __mul__(self, o): return OPS.mul(self, o)
    def __rmul__(self, o): return OPS.mul(o, self)
    def __truediv__(self, o): return OPS.truediv(self, o)
    def __rtruediv__(self, o): return OPS.truediv(o, self)
    def __floordiv__(self, o): return OPS.floordiv(self, o)
    def __rfloordiv__(self, o): return OPS.floordiv(o, self)
    def __mod__(self, o): return OPS.mod(self, o)
    def __rmod__(self, o): return OPS.mod(o, self)
    def __pow__(self, o): return OPS.pow(self, o)
    def __rpow__(self, o): return OPS.pow(o, self)
    def __and__(self, o): return OPS.bitwise_and(self, o)
    def __rand__(self, o): return OPS.bitwise_and(o, self)
    def __or__(self, o): return OPS.bitwise_or(self, o)
    def __ror__(self, o): return OPS.bitwise_or(o, self)
    def __xor__(self, o): return OPS.bitwise_xor(self, o)
    def __rxor__(self, o): return OPS.bitwise_xor(o, self)
    def __lshift__(self, o): return OPS.bitwise_lshift(self, o)
    def __rlshift__(self, o): return OPS.bitwise_lshift(o, self)
    def __rshift__(self, o): return OPS.bitwise_rshift(self, o)
    def __rrshift__(self, o): return OPS.bitwise_rshift(o, self)
    def __matmul__(self, o): return OPS.matmul(self, o)
    def __rmatmul__(self, o): return OPS.matmul(o, self)
    def __divmod__(self, o): return OPS.divmod(self, o)
    def __rdivmod__(self, o): return OPS.divmod(o, self)
    def __lt__(self, o): return OPS.less(self, o)
    def __le__(self, o): return OPS.less_equal(self, o)
    def __gt__(self, o): return OPS.greater(self, o)
    def __ge__(self, o): return OPS.greater_equal(self, o)
    def __eq__(self, o): return OPS.equal(self, o)
    def __ne__(self, o): return OPS.not_equal(self, o)
    def __neg__(self): return OPS.negative(self)
    def __pos__(self): return self if self.dtype is not D.bool_ else OPS.astype(self, D.int32)
    def __invert__(self): return OPS.bitwise_not(self)
    def __abs__(self): return OPS.abs(self)


def _format(a: np.ndarray, spec: str, dtype: SimDType) -> str:
    if a.ndim == 0:
        v = a.item()
        if dtype.category == FLOAT:
            v = float(v)
        try:
            return format(v, spec)
        except (TypeError, ValueError):
            return format(v)
    return "[" + ", ".join(_format(a[i], spec, dtype) for i in range(a.shape[0])) + "]"


def is_tile(v) -> bool:
    return type(v) is Tile


def scalar_tile(value, dtype: SimDType) -> Tile:
    return Tile(np.asarray(convert(value, None, dtype)), dtype)


def as_tile(v, what: str = "value") -> Tile:
    """A tile for ``v``: tiles pass through, Python constants become 0-d tiles of their own
    dtype, NumPy scalars keep theirs."""
    if type(v) is Tile:
        return v
    if isinstance(v, _LOOSE):
        try:
            d = constant_dtype(v)
        except PromotionError as e:
            raise KernelError(str(e)) from None
        return Tile(np.asarray(v, dtype=d.np), d)
    if isinstance(v, (np.generic, np.ndarray)):
        d = D.of_numpy(v.dtype)
        if d is not None:
            return Tile(np.asarray(v), d)
    raise KernelError(f"{what} must be a tile or a number, got {type(v).__name__}")


def operand(v):
    """(values, dtype) of an operand; dtype is None for a loosely typed Python constant."""
    if type(v) is Tile:
        return v.a, v.dtype
    if isinstance(v, _LOOSE):
        return v, None
    if isinstance(v, np.generic):
        d = D.of_numpy(v.dtype)
        if d is not None:
            return np.asarray(v), d
    if isinstance(v, SimDType):
        raise KernelError(f"a dtype ({v}) cannot be used as a number")
    raise KernelError(f"a {type(v).__name__} cannot be used as a tile operand",
                      help="operands are tiles, Python numbers or 0-d tiles")
