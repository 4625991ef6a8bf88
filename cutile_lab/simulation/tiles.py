"""Tiles and the compute half of the simulated ``ct`` namespace, vectorised with NumPy.

Owns ``Tile`` (an immutable value: one NumPy array and its cuTile dtype) and every op that works
on tiles and scalars without touching memory: arithmetic and Python operators with cuTile's
promotion rules, comparisons, bitwise ops, math functions, conversions, shape ops, factories,
reductions and scans, ``mma``/``matmul``. Each cuTile op is one NumPy operation on the whole tile,
never a loop over elements. Memory (load/store/gather/atomics) lives in ``memory``; launching in
``engine``.

Scalars: Python ``int``/``float``/``bool`` values are cuTile's *loosely typed* constants (the
literal ``2.0`` in ``t * 2.0`` takes ``t``'s dtype); every typed scalar (a kernel's scalar
argument, ``ct.bid(0)``, a reduction over all axes) is a 0-d ``Tile``.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from cutile_lab.simulation import dtypes as D
from cutile_lab.simulation.dtypes import (BOOL, FLOAT, INT, PromotionError, SimDType,
                                          constant_dtype, convert, promote, promote_with_constant)

_LOOSE = (bool, int, float)
_f32 = np.dtype(np.float32)


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
        return astype(self, dtype, rounding_mode=rounding_mode)

    def reshape(self, shape) -> "Tile":
        return reshape(self, shape)

    def permute(self, axes) -> "Tile":
        return permute(self, axes)

    def transpose(self, axis0=None, axis1=None) -> "Tile":
        return transpose(self, axis0, axis1)

    @property
    def T(self) -> "Tile":
        return transpose(self)

    def extract(self, index, shape) -> "Tile":
        return extract(self, index, shape)

    def insert(self, index, value) -> "Tile":
        return insert(self, index, value)

    def item(self) -> "Tile":
        return reshape(self, ())

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
    def __add__(self, o): return add(self, o)
    def __radd__(self, o): return add(o, self)
    def __sub__(self, o): return sub(self, o)
    def __rsub__(self, o): return sub(o, self)
    def __mul__(self, o): return mul(self, o)
    def __rmul__(self, o): return mul(o, self)
    def __truediv__(self, o): return truediv(self, o)
    def __rtruediv__(self, o): return truediv(o, self)
    def __floordiv__(self, o): return floordiv(self, o)
    def __rfloordiv__(self, o): return floordiv(o, self)
    def __mod__(self, o): return mod(self, o)
    def __rmod__(self, o): return mod(o, self)
    def __pow__(self, o): return pow(self, o)
    def __rpow__(self, o): return pow(o, self)
    def __and__(self, o): return bitwise_and(self, o)
    def __rand__(self, o): return bitwise_and(o, self)
    def __or__(self, o): return bitwise_or(self, o)
    def __ror__(self, o): return bitwise_or(o, self)
    def __xor__(self, o): return bitwise_xor(self, o)
    def __rxor__(self, o): return bitwise_xor(o, self)
    def __lshift__(self, o): return bitwise_lshift(self, o)
    def __rlshift__(self, o): return bitwise_lshift(o, self)
    def __rshift__(self, o): return bitwise_rshift(self, o)
    def __rrshift__(self, o): return bitwise_rshift(o, self)
    def __matmul__(self, o): return matmul(self, o)
    def __rmatmul__(self, o): return matmul(o, self)
    def __divmod__(self, o): return divmod(self, o)
    def __rdivmod__(self, o): return divmod(o, self)
    def __lt__(self, o): return less(self, o)
    def __le__(self, o): return less_equal(self, o)
    def __gt__(self, o): return greater(self, o)
    def __ge__(self, o): return greater_equal(self, o)
    def __eq__(self, o): return equal(self, o)
    def __ne__(self, o): return not_equal(self, o)
    def __neg__(self): return negative(self)
    def __pos__(self): return self if self.dtype is not D.bool_ else astype(self, D.int32)
    def __invert__(self): return bitwise_not(self)
    def __abs__(self): return abs(self)


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


def _operand(v):
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


def _common(xd, xa, yd, ya) -> SimDType:
    try:
        if xd is None:
            if yd is None:
                return promote(constant_dtype(xa), constant_dtype(ya))
            return promote_with_constant(yd, xa)
        if yd is None:
            return promote_with_constant(xd, ya)
        return promote(xd, yd)
    except PromotionError as e:
        raise KernelError(str(e), help="convert one side explicitly, e.g. `t.astype(f32)`") \
            from None


def _prep(a, d: SimDType | None, rd: SimDType, cd: np.dtype):
    """Operand values converted to ``rd`` and then carried in its compute type ``cd``."""
    if d is None:
        if rd.category == INT and isinstance(a, float):
            a = int(a)
        return cd.type(a)
    if d is not rd:
        a = convert(a, d, rd)
    if a.dtype != cd:
        a = a.astype(cd)
    return a


def _finish(r, rd: SimDType) -> Tile:
    st = rd.np
    if r.dtype != st:
        r = r.astype(st) if rd is not D.tfloat32 else D.round_to_tf32(r)
    return Tile(r, rd)


def _apply(ufunc, xa, ya, name):
    try:
        return ufunc(xa, ya)
    except ValueError:
        raise KernelError(f"{name}: shapes {np.shape(xa)} and {np.shape(ya)} cannot be "
                          "broadcast together",
                          help="shapes broadcast as in NumPy; reshape or "
                               "broadcast_to first") from None


_PY_ARITH = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
             "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
             "pow": operator.pow, "minimum": builtins.min, "maximum": builtins.max}


def _arith(name: str, ufunc, x, y, *, force_float=False, float_only=False, int_only=False):
    xa, xd = _operand(x)
    ya, yd = _operand(y)
    if xd is None and yd is None:
        try:
            return _PY_ARITH[name](xa, ya)
        except ZeroDivisionError:
            raise KernelError(f"{name}: division by zero in constants") from None
    if (xd is not None and xd.category == BOOL and yd is not None and yd.category == BOOL):
        raise KernelError(f"arithmetic `{name}` does not take bool tiles",
                          help="convert first, e.g. `mask.astype(i32)`")
    rd = _common(xd, xa, yd, ya)
    if force_float and rd.category != FLOAT:
        rd = D.float32
    if rd.category == BOOL:
        raise KernelError(f"arithmetic `{name}` does not take bool tiles",
                          help="convert first, e.g. `mask.astype(i32)`")
    if float_only and rd.category != FLOAT:
        raise KernelError(f"`{name}` needs floating-point operands, got {rd}",
                          help="convert first, e.g. `t.astype(f32)`")
    if int_only and rd.category != INT:
        raise KernelError(f"`{name}` needs integer operands, got {rd}")
    cd = rd.compute
    return _finish(_apply(ufunc, _prep(xa, xd, rd, cd), _prep(ya, yd, rd, cd), name), rd)


def add(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    return _arith("add", np.add, x, y)


def sub(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    return _arith("sub", np.subtract, x, y)


def mul(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    return _arith("mul", np.multiply, x, y)


def truediv(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    return _arith("truediv", np.true_divide, x, y, force_float=True)


def floordiv(x, y, /):
    xa, xd = _operand(x)
    ya, yd = _operand(y)
    if xd is None and yd is None:
        return _PY_ARITH["floordiv"](xa, ya)
    if _common(xd, xa, yd, ya).category == FLOAT:
        # floor(x / y), the quotient rounded to the result dtype first, as on the GPU
        return floor(truediv(x, y))
    return _arith("floordiv", np.floor_divide, x, y)


def mod(x, y, /):
    return _arith("mod", np.remainder, x, y)


def divmod(x, y, /):
    q, r = floordiv(x, y), mod(x, y)
    if type(q) is Tile and q.dtype.category == FLOAT:
        raise KernelError("divmod() is not implemented for floating-point values")
    return q, r


def _cdiv_ufunc(a, b):
    q = np.floor_divide(a, b)
    return q + (a - q * b != 0).astype(q.dtype)


def cdiv(x, y, /):
    xa, xd = _operand(x)
    ya, yd = _operand(y)
    if xd is None and yd is None:
        return -((-xa) // ya)
    return _arith("cdiv", _cdiv_ufunc, x, y, int_only=True)


def pow(x, y, /):
    xa, xd = _operand(x)
    ya, yd = _operand(y)
    if xd is None and yd is None:
        return xa ** ya
    if xd is not None and xd.category == FLOAT and not xd.restricted and (
            (yd is None and isinstance(ya, int) and not isinstance(ya, bool)) or
            (yd is not None and yd.category == INT and yd.bits <= 32)):
        # float ** integer keeps the base's dtype (cuTile's fpowi)
        cd = xd.compute
        r = np.power(xa.astype(cd) if xa.dtype != cd else xa,
                     np.asarray(ya, dtype=np.int64) if yd is None else ya.astype(np.int64))
        return _finish(np.asarray(r, dtype=cd), xd)
    return _arith("pow", np.power, x, y, float_only=True)


def atan2(x1, x2, /):
    return _arith("atan2", np.arctan2, x1, x2, float_only=True)


def minimum(x, y, /, *, flush_to_zero=False, propagate_nan=False):
    return _arith("minimum", np.minimum if propagate_nan else np.fmin, x, y)


def maximum(x, y, /, *, flush_to_zero=False, propagate_nan=False):
    return _arith("maximum", np.maximum if propagate_nan else np.fmax, x, y)


_PY_CMP = {"equal": operator.eq, "not_equal": operator.ne, "less": operator.lt,
           "less_equal": operator.le, "greater": operator.gt, "greater_equal": operator.ge}


def _compare(name, ufunc, x, y):
    xa, xd = _operand(x)
    ya, yd = _operand(y)
    if xd is None and yd is None:
        return _PY_CMP[name](xa, ya)
    rd = _common(xd, xa, yd, ya)
    cd = rd.compute
    return Tile(np.asarray(_apply(ufunc, _prep(xa, xd, rd, cd), _prep(ya, yd, rd, cd), name)),
                D.bool_)


def equal(x, y, /): return _compare("equal", np.equal, x, y)
def not_equal(x, y, /): return _compare("not_equal", np.not_equal, x, y)
def less(x, y, /): return _compare("less", np.less, x, y)
def less_equal(x, y, /): return _compare("less_equal", np.less_equal, x, y)
def greater(x, y, /): return _compare("greater", np.greater, x, y)
def greater_equal(x, y, /): return _compare("greater_equal", np.greater_equal, x, y)


_PY_BIT = {"bitwise_and": operator.and_, "bitwise_or": operator.or_,
           "bitwise_xor": operator.xor, "bitwise_lshift": operator.lshift,
           "bitwise_rshift": operator.rshift}


def _bitwise(name, ufunc, x, y, *, shift=False):
    xa, xd = _operand(x)
    ya, yd = _operand(y)
    if xd is None and yd is None:
        return _PY_BIT[name](xa, ya)
    kinds = (INT,) if shift else (INT, BOOL)
    for v, d in ((xa, xd), (ya, yd)):
        cat = (d or constant_dtype(v)).category
        if cat not in kinds:
            raise KernelError(f"`{name}` needs {'integer' if shift else 'integer or bool'} "
                              f"operands, got {d or type(v).__name__}",
                              help="use bitcast() to reinterpret a float's bits")
    if not shift and xd is not None and yd is not None:
        if xd is not yd:
            raise KernelError(f"`{name}` operands must have the same dtype, got {xd} and {yd}",
                              help="convert one side with astype")
    rd = _common(xd, xa, yd, ya)
    if not shift and {xd, yd} == {D.bool_, D.int8}:
        raise KernelError(f"`{name}` does not take bool and int8 together")
    cd = rd.compute
    return _finish(_apply(ufunc, _prep(xa, xd, rd, cd), _prep(ya, yd, rd, cd), name), rd)


def bitwise_and(x, y, /): return _bitwise("bitwise_and", np.bitwise_and, x, y)
def bitwise_or(x, y, /): return _bitwise("bitwise_or", np.bitwise_or, x, y)
def bitwise_xor(x, y, /): return _bitwise("bitwise_xor", np.bitwise_xor, x, y)
def bitwise_lshift(x, y, /): return _bitwise("bitwise_lshift", np.left_shift, x, y, shift=True)
def bitwise_rshift(x, y, /): return _bitwise("bitwise_rshift", np.right_shift, x, y, shift=True)


# --- unary ops ---------------------------------------------------------------------------------

# behaviours, as cuTile's: what bool / int / float inputs become before the op (None: error)
_TO_F32, _KEEP, _TO_I32 = "f32", "keep", "i32"
_UNARY_FLOAT = (_TO_F32, _TO_F32, _KEEP)
_UNARY_STRICT_FLOAT = (None, None, _KEEP)
_UNARY_INT_FLOAT = (_TO_I32, _KEEP, _KEEP)
_UNARY_BOOL_INT = (_KEEP, _KEEP, None)
_UNARY_ANY = (_KEEP, _KEEP, _KEEP)


def _rsqrt(a):
    return 1.0 / np.sqrt(a)


def _unary(name, ufunc, py, behaviour, x):
    if isinstance(x, _LOOSE):
        try:
            return py(x)
        except (ValueError, OverflowError) as e:
            raise KernelError(f"{name}({x!r}): {e}") from None
    t = as_tile(x, f"the argument of {name}")
    how = behaviour[t.dtype.category]
    if how is None:
        raise KernelError(f"`{name}` does not take {t.dtype} tiles",
                          help="convert first, e.g. `t.astype(f32)`" if t.dtype.category != FLOAT
                          else "it works on integer and bool tiles")
    if how == _TO_F32:
        t = astype(t, D.float32)
    elif how == _TO_I32:
        t = astype(t, D.int32)
    rd = t.dtype
    cd = rd.compute
    a = t.a if t.a.dtype == cd else t.a.astype(cd)
    return _finish(np.asarray(ufunc(a)), rd)


def _py_float(f):
    def g(v):
        return f(float(v))
    return g


def exp(x, /, *, rounding_mode=None):
    return _unary("exp", np.exp, _py_float(math.exp), _UNARY_FLOAT, x)


def exp2(x, /, *, flush_to_zero=False):
    return _unary("exp2", np.exp2, _py_float(lambda v: 2.0 ** v), _UNARY_FLOAT, x)


def log(x, /):
    return _unary("log", np.log, _py_float(math.log), _UNARY_FLOAT, x)


def log2(x, /):
    return _unary("log2", np.log2, _py_float(math.log2), _UNARY_FLOAT, x)


def sqrt(x, /, *, rounding_mode=None, flush_to_zero=False):
    return _unary("sqrt", np.sqrt, _py_float(math.sqrt), _UNARY_FLOAT, x)


def rsqrt(x, /, *, flush_to_zero=False):
    return _unary("rsqrt", _rsqrt, _py_float(lambda v: 1.0 / math.sqrt(v)), _UNARY_FLOAT, x)


def sin(x, /): return _unary("sin", np.sin, _py_float(math.sin), _UNARY_FLOAT, x)
def cos(x, /): return _unary("cos", np.cos, _py_float(math.cos), _UNARY_FLOAT, x)
def tan(x, /): return _unary("tan", np.tan, _py_float(math.tan), _UNARY_FLOAT, x)
def sinh(x, /): return _unary("sinh", np.sinh, _py_float(math.sinh), _UNARY_FLOAT, x)
def cosh(x, /): return _unary("cosh", np.cosh, _py_float(math.cosh), _UNARY_FLOAT, x)


def tanh(x, /, *, rounding_mode=None):
    return _unary("tanh", np.tanh, _py_float(math.tanh), _UNARY_FLOAT, x)


def floor(x, /):
    return _unary("floor", np.floor, math.floor, _UNARY_STRICT_FLOAT, x)


def ceil(x, /):
    return _unary("ceil", np.ceil, math.ceil, _UNARY_STRICT_FLOAT, x)


def abs(x, /):
    return _unary("abs", np.abs, builtins.abs, _UNARY_ANY, x)


def negative(x, /):
    return _unary("negative", np.negative, operator.neg, _UNARY_INT_FLOAT, x)


def bitwise_not(x, /):
    if isinstance(x, _LOOSE):
        return (not x) if isinstance(x, bool) else ~x
    t = as_tile(x)
    if t.dtype.category == FLOAT:
        raise KernelError(f"`bitwise_not` does not take {t.dtype} tiles",
                          help="use bitcast() to reinterpret a float's bits")
    return Tile(np.asarray(np.invert(t.a)), t.dtype)


def isnan(x, /):
    if isinstance(x, _LOOSE):
        return isinstance(x, float) and math.isnan(x)
    t = as_tile(x)
    if t.dtype.category != FLOAT:
        return Tile(np.zeros(t.shape, dtype=bool), D.bool_)
    a = t.a if t.a.dtype.kind == "f" else t.a.astype(np.float32)
    return Tile(np.asarray(np.isnan(a)), D.bool_)


# --- conversions -------------------------------------------------------------------------------

def _dtype_arg(dtype, what="dtype") -> SimDType:
    try:
        return D.as_dtype(dtype)
    except TypeError:
        raise KernelError(f"{what} must be a dtype such as f32 (ct.float32), got {dtype!r}") \
            from None


def astype(x, dtype, /, *, rounding_mode=None) -> Tile:
    dt = _dtype_arg(dtype)
    if type(x) is not Tile:
        xa, xd = _operand(x)
        if xd is None:
            return scalar_tile(xa, dt)
        x = Tile(xa, xd)
    if x.dtype is dt:
        return x
    return Tile(np.asarray(convert(x.a, x.dtype, dt)), dt)


def bitcast(x, /, dtype) -> Tile:
    t = as_tile(x)
    dt = _dtype_arg(dtype)
    if dt.bits != t.dtype.bits or dt.bits < 8:
        raise KernelError(f"bitcast from {t.dtype} to {dt} needs types of the same bit width")
    return Tile(np.ascontiguousarray(t.a).view(dt.np).reshape(t.shape), dt)


def pack_to_bytes(x, /) -> Tile:
    t = as_tile(x)
    if t.dtype.bits < 8:
        raise KernelError(f"pack_to_bytes does not take {t.dtype}")
    return Tile(np.ascontiguousarray(t.a).reshape(-1).view(np.uint8), D.uint8)


def unpack_from_bytes(x, /, dtype) -> Tile:
    t = as_tile(x)
    dt = _dtype_arg(dtype)
    if t.dtype is not D.uint8 or t.ndim != 1:
        raise KernelError("unpack_from_bytes takes a 1-D uint8 tile")
    if (t.size * 8) % dt.bits:
        raise KernelError(f"{t.size} bytes do not make a whole number of {dt} values")
    return Tile(np.ascontiguousarray(t.a).view(dt.np), dt)


# --- shapes ------------------------------------------------------------------------------------

def _const_int(v, what: str) -> int:
    if type(v) is int:
        return v
    if isinstance(v, (bool, float)) or v is None:
        raise KernelError(f"{what} must be an integer constant, got {v!r}")
    if type(v) is Tile:
        raise KernelError(f"{what} must be a compile-time constant, not a tile",
                          help="use a literal or a Const[int] parameter")
    try:
        return operator.index(v)
    except TypeError:
        raise KernelError(f"{what} must be an integer constant, got {v!r}") from None


def _shape_arg(shape, what: str = "shape", *, pow2: bool = True,
               allow_neg1: bool = False) -> tuple[int, ...]:
    if isinstance(shape, (tuple, list)):
        dims = tuple(_const_int(s, what) for s in shape)
    else:
        dims = (_const_int(shape, what),)
    for i, n in enumerate(dims):
        if allow_neg1 and n == -1:
            continue
        if n <= 0:
            raise KernelError(f"dimension #{i} of {what} {dims} is not positive")
        if pow2 and n & (n - 1):
            raise KernelError(f"dimension #{i} of {what} {dims} is not a power of two",
                              help="tile dimensions must be powers of two, e.g. 64, 128, 256")
    return dims


def check_pow2_shape(shape, what="tile shape") -> tuple[int, ...]:
    return _shape_arg(shape, what)


def _axis(axis, ndim: int, what="axis") -> int:
    a = _const_int(axis, what)
    if not -ndim <= a < ndim:
        raise KernelError(f"{what} {a} is out of range for a tile of rank {ndim}")
    return a % ndim


def reshape(x, /, shape) -> Tile:
    t = as_tile(x)
    dims = _shape_arg(shape, "shape", pow2=False, allow_neg1=True) if shape != () else ()
    try:
        return Tile(np.reshape(t.a, dims), t.dtype)
    except ValueError:
        raise KernelError(f"cannot reshape a tile of shape {t.shape} ({t.size} elements) to "
                          f"{dims}") from None


def broadcast_to(x, /, shape) -> Tile:
    t = as_tile(x)
    dims = _shape_arg(shape)
    try:
        return Tile(np.broadcast_to(t.a, dims), t.dtype)
    except ValueError:
        raise KernelError(f"cannot broadcast a tile of shape {t.shape} to {dims}") from None


def expand_dims(x, /, axis) -> Tile:
    t = as_tile(x)
    return Tile(np.expand_dims(t.a, _axis(axis, t.ndim + 1)), t.dtype)


def permute(x, /, axes) -> Tile:
    t = as_tile(x)
    if not isinstance(axes, (tuple, list)) or len(axes) != t.ndim:
        raise KernelError(f"permute needs {t.ndim} axes for a tile of shape {t.shape}, "
                          f"got {axes!r}")
    ax = tuple(_axis(a, t.ndim) for a in axes)
    if len(set(ax)) != len(ax):
        raise KernelError(f"permute axes {tuple(axes)} repeat an axis")
    return Tile(np.transpose(t.a, ax), t.dtype)


def transpose(x, /, axis0=None, axis1=None) -> Tile:
    t = as_tile(x)
    if t.ndim < 2:
        raise KernelError(f"cannot transpose a tile of shape {t.shape} (fewer than 2 axes)")
    if axis0 is None and axis1 is None:
        if t.ndim != 2:
            raise KernelError("give axis0 and axis1 to transpose a tile of more than 2 axes")
        a0, a1 = 0, 1
    elif axis0 is None or axis1 is None:
        raise KernelError("transpose axes must both be given or both be None")
    else:
        a0, a1 = _axis(axis0, t.ndim), _axis(axis1, t.ndim)
    return Tile(np.swapaxes(t.a, a0, a1), t.dtype)


def cat(tiles, /, axis) -> Tile:
    if not isinstance(tiles, (tuple, list)) or not tiles:
        raise KernelError("cat takes a tuple of (at most two) tiles")
    ts = [as_tile(t) for t in tiles]
    if len(ts) == 1:
        return ts[0]
    if len(ts) > 2:
        raise KernelError(f"cat supports at most 2 tiles, got {len(ts)}")
    x, y = ts
    if x.dtype is not y.dtype:
        raise KernelError(f"cat needs tiles of one dtype, got {x.dtype} and {y.dtype}")
    if x.ndim != y.ndim:
        raise KernelError(f"cat needs tiles of one rank, got {x.shape} and {y.shape}")
    ax = _axis(axis, x.ndim)
    for i, (a, b) in enumerate(zip(x.shape, y.shape)):
        if i != ax and a != b:
            raise KernelError(f"cat: shapes {x.shape} and {y.shape} differ outside axis {ax}")
    n = x.shape[ax] + y.shape[ax]
    if n & (n - 1):
        raise KernelError(f"cat result length {n} along axis {ax} is not a power of two")
    return Tile(np.concatenate([x.a, y.a], axis=ax), x.dtype)


def _subtile_index(t: Tile, shape, index, noun):
    dims = _shape_arg(shape, f"{noun} shape", pow2=False) if shape != () else (1,) * t.ndim
    if len(dims) != t.ndim:
        raise KernelError(f"{noun} shape {dims} does not match the tile's rank {t.ndim}")
    idx = index if isinstance(index, (tuple, list)) else (index,)
    if len(idx) != t.ndim:
        raise KernelError(f"index {tuple(idx)} does not match the tile's rank {t.ndim}")
    slices = []
    for i, (n, s, k) in enumerate(zip(t.shape, dims, idx)):
        if n % s:
            raise KernelError(f"tile shape {t.shape} is not divisible by {noun} shape {dims}")
        k = operator.index(k)
        if not 0 <= k < n // s:
            raise KernelError(f"{noun} index {k} is out of range at dimension #{i}: valid "
                              f"range is [0, {n // s})")
        slices.append(slice(k * s, (k + 1) * s))
    return tuple(slices), dims


def extract(x, /, index, shape) -> Tile:
    t = as_tile(x)
    sl, dims = _subtile_index(t, shape, index, "result")
    out = np.array(np.asarray(t.a)[sl])
    return Tile(out.reshape(()) if shape == () else out, t.dtype)


def insert(x, /, index, value) -> Tile:
    t = as_tile(x)
    v = as_tile(value)
    shape = v.shape if v.ndim else ()
    sl, dims = _subtile_index(t, shape, index, "value")
    out = np.array(t.a)
    out[sl] = convert(v.a, v.dtype, t.dtype).reshape(dims)
    return Tile(out, t.dtype)


def where(cond, x, y, /) -> Tile:
    ca, cdt = _operand(cond)
    xa, xd = _operand(x)
    ya, yd = _operand(y)
    rd = _common(xd, xa, yd, ya)
    c = np.asarray(ca) if cdt is D.bool_ else np.asarray(ca) != 0
    st = rd.np
    xv = np.asarray(convert(xa, xd, rd) if xd is not None else _prep(xa, None, rd, st))
    yv = np.asarray(convert(ya, yd, rd) if yd is not None else _prep(ya, None, rd, st))
    try:
        return Tile(np.asarray(np.where(c, xv, yv)), rd)
    except ValueError:
        raise KernelError(f"where: shapes {c.shape}, {xv.shape} and {yv.shape} cannot be "
                          "broadcast together") from None


# --- factories ---------------------------------------------------------------------------------

def full(shape, fill_value, dtype) -> Tile:
    dims = _shape_arg(shape)
    dt = _dtype_arg(dtype)
    fa, fd = _operand(fill_value)
    if fd is not None and np.ndim(fa):
        raise KernelError(f"full: the fill value must be a scalar, got a tile of shape "
                          f"{np.shape(fa)}")
    v = convert(fa, fd, dt)
    return Tile(np.full(dims, v, dtype=dt.np), dt)


def zeros(shape, dtype) -> Tile:
    dt = _dtype_arg(dtype)
    return Tile(np.zeros(_shape_arg(shape), dtype=dt.np), dt)


def ones(shape, dtype) -> Tile:
    dt = _dtype_arg(dtype)
    return Tile(np.ones(_shape_arg(shape), dtype=dt.np), dt)


def arange(size, /, *, dtype, start=0, step=1) -> Tile:
    (n,) = _shape_arg(size, "arange size")
    dt = _dtype_arg(dtype)
    base = Tile(np.arange(n, dtype=np.int32), D.int32)
    r = astype(base, dt)
    if not (isinstance(step, int) and step == 1):
        r = mul(r, astype(step, dt))
    if not (isinstance(start, int) and start == 0):
        r = add(r, astype(start, dt))
    return r


def astile(value, /, *, dtype) -> Tile:
    dt = _dtype_arg(dtype)
    if isinstance(value, (tuple, list)):
        def shape_of(v, path):
            if isinstance(v, (tuple, list)):
                n = len(v)
                if n == 0 or n & (n - 1):
                    raise KernelError(f"astile: tuple length {n} at {path} is not a power "
                                      "of two")
                inner = {shape_of(e, path + (i,)) for i, e in enumerate(v)}
                if len(inner) != 1:
                    raise KernelError(f"astile: uneven nesting at {path}")
                return (n,) + inner.pop()
            return ()
        shape = shape_of(value, ())

        def flat(v):
            if isinstance(v, (tuple, list)):
                for e in v:
                    yield from flat(e)
            else:
                yield v
        vals = [astype(v, dt).a for v in flat(value)]
        return Tile(np.array(vals, dtype=dt.np).reshape(shape), dt)
    return astype(value, dt)


# --- reductions and scans ----------------------------------------------------------------------

def _reduce_axes(axis, ndim: int, *, allow_tuple=True, op="reduction"):
    if axis is None:
        return None
    if isinstance(axis, (tuple, list)):
        if not allow_tuple:
            raise KernelError(f"{op} does not support a tuple of axes")
        axes = tuple(sorted({_axis(a, ndim) for a in axis}))
        return axes
    if type(axis) is Tile or not isinstance(axis, int) or isinstance(axis, bool):
        raise KernelError(f"{op}: axis must be a constant int"
                          f"{' or a tuple of ints' if allow_tuple else ''}, got "
                          f"{'a tile' if type(axis) is Tile else repr(axis)}",
                          help="for the elementwise maximum/minimum of two tiles use "
                               "maximum(a, b) / minimum(a, b)")
    return (_axis(axis, ndim),)


def _reduce_input(x, op) -> Tile:
    t = as_tile(x, f"the argument of {op}")
    if t.dtype.category == BOOL:
        t = astype(t, D.int32)
    return t


def _simple_reduce(op: str, x, axis, keepdims):
    t = _reduce_input(x, op)
    axes = _reduce_axes(axis, t.ndim, op=op)
    rd = t.dtype
    cd = rd.compute
    a = t.a if t.a.dtype == cd else t.a.astype(cd)
    if op == "sum":
        r = np.sum(a, axis=axes, dtype=cd, keepdims=keepdims)
    elif op == "prod":
        r = np.prod(a, axis=axes, dtype=cd, keepdims=keepdims)
    else:
        raise AssertionError(op)
    return _finish(np.asarray(r), rd)


def sum(x, /, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=False) -> Tile:
    return _simple_reduce("sum", x, axis, keepdims)


def prod(x, /, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=False) -> Tile:
    return _simple_reduce("prod", x, axis, keepdims)


def _minmax(op: str, x, axis, keepdims, propagate_nan):
    t = _reduce_input(x, op)
    axes = _reduce_axes(axis, t.ndim, op=op)
    rd = t.dtype
    a = t.a
    if rd.category == FLOAT:
        cd = rd.compute
        if a.dtype != cd:
            a = a.astype(cd)
        if propagate_nan:
            r = (np.max if op == "max" else np.min)(a, axis=axes, keepdims=keepdims)
        else:   # NaNs are ignored; all-NaN gives the identity (-inf for max, +inf for min)
            uf = np.fmax if op == "max" else np.fmin
            init = -np.inf if op == "max" else np.inf
            r = uf.reduce(a, axis=axes, keepdims=keepdims, initial=init)
    else:
        r = (np.max if op == "max" else np.min)(a, axis=axes, keepdims=keepdims)
    return _finish(np.asarray(r), rd)


def max(x, /, axis=None, *, keepdims=False, flush_to_zero=False, propagate_nan=False) -> Tile:
    return _minmax("max", x, axis, keepdims, propagate_nan)


def min(x, /, axis=None, *, keepdims=False, flush_to_zero=False, propagate_nan=False) -> Tile:
    return _minmax("min", x, axis, keepdims, propagate_nan)


def _argminmax(op: str, x, axis, keepdims, propagate_nan):
    t = _reduce_input(x, op)
    axes = _reduce_axes(axis, t.ndim, allow_tuple=False, op=op)
    a = t.a
    if t.dtype.category == FLOAT:
        a = a.astype(t.dtype.compute) if a.dtype != t.dtype.compute else a
        if not propagate_nan:   # NaN is the worst value
            a = np.where(np.isnan(a), -np.inf if op == "argmax" else np.inf, a)
    f = np.argmax if op == "argmax" else np.argmin
    if axes is None:
        r = f(np.reshape(a, -1))
        if keepdims:
            r = np.reshape(r, (1,) * t.ndim)
    else:
        r = f(a, axis=axes[0], keepdims=keepdims)
    return Tile(np.asarray(r, dtype=np.int32), D.int32)


def argmax(x, /, axis=None, *, keepdims=False, propagate_nan=False) -> Tile:
    return _argminmax("argmax", x, axis, keepdims, propagate_nan)


def argmin(x, /, axis=None, *, keepdims=False, propagate_nan=False) -> Tile:
    return _argminmax("argmin", x, axis, keepdims, propagate_nan)


def _scan(op: str, x, axis, reverse):
    t = _reduce_input(x, op)
    ax = _axis(axis, t.ndim) if t.ndim else 0
    rd = t.dtype
    cd = rd.compute
    a = t.a if t.a.dtype == cd else t.a.astype(cd)
    if reverse:
        a = np.flip(a, ax)
    r = (np.cumsum if op == "cumsum" else np.cumprod)(a, axis=ax, dtype=cd)
    if reverse:
        r = np.flip(r, ax)
    return _finish(np.ascontiguousarray(r), rd)


def cumsum(x, /, axis=0, *, reverse=False, rounding_mode=None, flush_to_zero=False) -> Tile:
    return _scan("cumsum", x, axis, reverse)


def cumprod(x, /, axis=0, *, reverse=False, rounding_mode=None, flush_to_zero=False) -> Tile:
    return _scan("cumprod", x, axis, reverse)


def _as_group(x):
    tuple_mode = isinstance(x, (tuple, list))
    xs = [as_tile(t) for t in (x if tuple_mode else (x,))]
    try:
        shape = np.broadcast_shapes(*(t.shape for t in xs))
    except ValueError:
        raise KernelError("the tiles do not broadcast to a common shape") from None
    xs = [Tile(np.broadcast_to(t.a, shape), t.dtype) for t in xs]
    return tuple_mode, xs, shape


def _identities(identity, xs, tuple_mode):
    ids = tuple(identity) if tuple_mode else (identity,)
    if len(ids) != len(xs):
        raise KernelError(f"{len(ids)} identity values for {len(xs)} tiles")
    return ids


def _call_combiner(func, tuple_mode, n, args, what):
    res = func(*args)
    res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
    if len(res) != n:
        raise KernelError(f"the {what} function returned {len(res)} values, expected {n}")
    return [as_tile(r) for r in res]


def reduce(x, /, axis, func, identity, *, keepdims=False):
    """Custom reduction, folded along ``axis`` with ``func`` applied to whole slices at once
    (one call per position along the axis, each vectorised over the other axes)."""
    tuple_mode, xs, shape = _as_group(x)
    ax = _axis(axis, len(shape))
    ids = _identities(identity, xs, tuple_mode)
    out_shape = shape[:ax] + shape[ax + 1:]
    acc = [full(out_shape, i, t.dtype) if out_shape else scalar_tile(i, t.dtype)
           for i, t in zip(ids, xs)]
    for k in range(shape[ax]):
        sl = [Tile(np.take(t.a, k, axis=ax), t.dtype) for t in xs]
        acc = _call_combiner(func, tuple_mode, len(xs), acc + sl, "reduce")
        acc = [astype(a, t.dtype) for a, t in zip(acc, xs)]
    if keepdims:
        acc = [Tile(np.expand_dims(a.a, ax), a.dtype) for a in acc]
    return tuple(acc) if tuple_mode else acc[0]


def scan(x, /, axis, func, identity, *, reverse=False):
    """Custom inclusive scan along ``axis`` (sequential over the axis, vectorised across)."""
    tuple_mode, xs, shape = _as_group(x)
    ax = _axis(axis, len(shape))
    ids = _identities(identity, xs, tuple_mode)
    out_shape = shape[:ax] + shape[ax + 1:]
    acc = [full(out_shape, i, t.dtype) if out_shape else scalar_tile(i, t.dtype)
           for i, t in zip(ids, xs)]
    outs = [np.empty(shape, dtype=t.dtype.np) for t in xs]
    order = range(shape[ax] - 1, -1, -1) if reverse else range(shape[ax])
    for k in order:
        sl = [Tile(np.take(t.a, k, axis=ax), t.dtype) for t in xs]
        acc = _call_combiner(func, tuple_mode, len(xs), acc + sl, "scan")
        acc = [astype(a, t.dtype) for a, t in zip(acc, xs)]
        for o, a in zip(outs, acc):
            idx = [slice(None)] * len(shape)
            idx[ax] = k
            o[tuple(idx)] = a.a
    res = [Tile(o, t.dtype) for o, t in zip(outs, xs)]
    return tuple(res) if tuple_mode else res[0]


# --- matrix multiply ---------------------------------------------------------------------------

_MMA_ACC = {
    "float8_e4m3fn": ("float16", "float32"), "float8_e5m2": ("float16", "float32"),
    "float16": ("float16", "float32"), "bfloat16": ("float32",), "float32": ("float32",),
    "float64": ("float64",), "tfloat32": ("float32",), "int8": ("int32",), "uint8": ("int32",),
}


def _mma_operands(x: Tile, y: Tile):
    """x and y in the type the tensor core multiplies in (products are exact there)."""
    d = x.dtype
    if d.category == INT:
        return x.a.astype(np.int64), y.a.astype(np.int64), np.int64
    if d is D.float64:
        return x.a, y.a, np.float64
    return x.a.astype(np.float32, copy=False), y.a.astype(np.float32, copy=False), np.float32


def _matmul_shapes(xs, ys):
    if xs[-1] != ys[-2]:
        raise KernelError(f"incompatible shapes for a matrix multiply: {xs} and {ys}",
                          help="x is [..., M, K] and y is [..., K, N]")
    try:
        np.broadcast_shapes(xs[:-2], ys[:-2])
    except ValueError:
        raise KernelError(f"batch dimensions of {xs} and {ys} do not broadcast") from None


def mma(x, y, /, acc, *, use_fast_acc=False) -> Tile:
    """``x @ y + acc`` in ``acc``'s dtype. Products and the sum over K are computed in float32
    (float64 for f64, exact int64 for i8/u8) and rounded once to ``acc``'s dtype; the GPU's
    tensor cores also accumulate in f32, in a different order."""
    x, y, acc = as_tile(x, "mma's x"), as_tile(y, "mma's y"), as_tile(acc, "mma's acc")
    if x.ndim < 2 or y.ndim < 2:
        raise KernelError(f"mma needs x and y of at least 2 dimensions, got {x.shape} and "
                          f"{y.shape}", help="reshape a vector to (1, K) or (K, 1)")
    if x.dtype is not y.dtype and not {x.dtype, y.dtype} <= {D.int8, D.uint8}:
        raise KernelError(f"mma needs x and y of one dtype, got {x.dtype} and {y.dtype}",
                          help="convert one with astype")
    accs = _MMA_ACC.get(x.dtype.name)
    if accs is None:
        raise KernelError(f"mma does not take {x.dtype} inputs (supported: "
                          f"{', '.join(_MMA_ACC)})")
    if acc.dtype.name not in accs:
        raise KernelError(f"mma with {x.dtype} inputs needs an accumulator of "
                          f"{' or '.join(accs)}, got {acc.dtype}",
                          help=f"create it with full(shape, 0, dtype={accs[-1]})")
    _matmul_shapes(x.shape, y.shape)
    out_shape = np.broadcast_shapes(x.shape[:-2], y.shape[:-2]) + (x.shape[-2], y.shape[-1])
    if acc.shape != out_shape:
        raise KernelError(f"mma: the accumulator has shape {acc.shape}, expected {out_shape}")
    xa, ya, ct_ = _mma_operands(x, y)
    r = np.matmul(xa, ya) + acc.a.astype(ct_)
    rd = acc.dtype
    if rd.category == INT:
        r = r.astype(np.int64).astype(np.int32)     # wraps like the hardware's i32
    return _finish(np.asarray(r), rd) if r.dtype != rd.np else Tile(r, rd)


def matmul(x, y, /) -> Tile:
    """``x @ y`` in the promoted dtype of x and y (accumulated as ``mma`` does)."""
    x, y = as_tile(x, "matmul's x"), as_tile(y, "matmul's y")
    cd = _common(x.dtype, x.a, y.dtype, y.a)
    if cd.name not in _MMA_ACC:
        raise KernelError(f"matmul does not take {cd} inputs")
    x, y = astype(x, cd), astype(y, cd)
    x2 = x.a[None, :] if x.ndim == 1 else x.a
    y2 = y.a[:, None] if y.ndim == 1 else y.a
    _matmul_shapes(x2.shape, y2.shape)
    xa, ya, _ = _mma_operands(Tile(x2, cd), Tile(y2, cd))
    r = np.matmul(xa, ya)
    if x.ndim == 1:
        r = r[..., 0, :]
    if y.ndim == 1:
        r = r[..., 0]
    acc_dt = D.dtype_by_name(_MMA_ACC[cd.name][-1])
    if acc_dt.category == INT:
        r = r.astype(np.int64).astype(np.int32)
    return astype(_finish(np.asarray(r), acc_dt), cd)


__all__ = ["Tile", "KernelError", "as_tile", "scalar_tile", "is_tile", "check_pow2_shape"]
