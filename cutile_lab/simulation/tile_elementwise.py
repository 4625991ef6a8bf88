"""Element-wise tile ops with cuTile's promotion rules: arithmetic (and the Python operators),
comparisons, bitwise ops and shifts, math functions (``exp``, ``sqrt``, ``tanh``, ...) and
conversions (``astype``, ``bitcast``, byte packing). Each is one NumPy operation on the whole tile;
loosely typed Python constants take the other operand's dtype.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from cutile_lab.simulation import dtypes as D
from cutile_lab.simulation.dtypes import (BOOL, FLOAT, INT, PromotionError, SimDType,
                                          constant_dtype, convert, promote, promote_with_constant)
from cutile_lab.simulation.tile_value import (_LOOSE, KernelError, Tile, operand, as_tile,
                                              scalar_tile)


def result_dtype(xd, xa, yd, ya) -> SimDType:
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


def compute_operand(a, d: SimDType | None, rd: SimDType, cd: np.dtype):
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


def to_tile(r, rd: SimDType) -> Tile:
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
    xa, xd = operand(x)
    ya, yd = operand(y)
    if xd is None and yd is None:
        try:
            return _PY_ARITH[name](xa, ya)
        except ZeroDivisionError:
            raise KernelError(f"{name}: division by zero in constants") from None
    if (xd is not None and xd.category == BOOL and yd is not None and yd.category == BOOL):
        raise KernelError(f"arithmetic `{name}` does not take bool tiles",
                          help="convert first, e.g. `mask.astype(i32)`")
    rd = result_dtype(xd, xa, yd, ya)
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
    return to_tile(_apply(ufunc, compute_operand(xa, xd, rd, cd),
                          compute_operand(ya, yd, rd, cd), name), rd)


def add(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    return _arith("add", np.add, x, y)


def sub(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    return _arith("sub", np.subtract, x, y)


def mul(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    return _arith("mul", np.multiply, x, y)


def truediv(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    return _arith("truediv", np.true_divide, x, y, force_float=True)


def floordiv(x, y, /):
    xa, xd = operand(x)
    ya, yd = operand(y)
    if xd is None and yd is None:
        return _PY_ARITH["floordiv"](xa, ya)
    if result_dtype(xd, xa, yd, ya).category == FLOAT:
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
    xa, xd = operand(x)
    ya, yd = operand(y)
    if xd is None and yd is None:
        return -((-xa) // ya)
    return _arith("cdiv", _cdiv_ufunc, x, y, int_only=True)


def pow(x, y, /):
    xa, xd = operand(x)
    ya, yd = operand(y)
    if xd is None and yd is None:
        return xa ** ya
    if xd is not None and xd.category == FLOAT and not xd.restricted and (
            (yd is None and isinstance(ya, int) and not isinstance(ya, bool)) or
            (yd is not None and yd.category == INT and yd.bits <= 32)):
        # float ** integer keeps the base's dtype (cuTile's fpowi)
        cd = xd.compute
        r = np.power(xa.astype(cd) if xa.dtype != cd else xa,
                     np.asarray(ya, dtype=np.int64) if yd is None else ya.astype(np.int64))
        return to_tile(np.asarray(r, dtype=cd), xd)
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
    xa, xd = operand(x)
    ya, yd = operand(y)
    if xd is None and yd is None:
        return _PY_CMP[name](xa, ya)
    rd = result_dtype(xd, xa, yd, ya)
    cd = rd.compute
    return Tile(np.asarray(_apply(ufunc, compute_operand(xa, xd, rd, cd),
                                  compute_operand(ya, yd, rd, cd), name)),
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
    xa, xd = operand(x)
    ya, yd = operand(y)
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
    rd = result_dtype(xd, xa, yd, ya)
    if not shift and {xd, yd} == {D.bool_, D.int8}:
        raise KernelError(f"`{name}` does not take bool and int8 together")
    cd = rd.compute
    return to_tile(_apply(ufunc, compute_operand(xa, xd, rd, cd),
                          compute_operand(ya, yd, rd, cd), name), rd)


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
    return to_tile(np.asarray(ufunc(a)), rd)


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

def dtype_arg(dtype, what="dtype") -> SimDType:
    try:
        return D.as_dtype(dtype)
    except TypeError:
        raise KernelError(f"{what} must be a dtype such as f32 (ct.float32), got {dtype!r}") \
            from None


def astype(x, dtype, /, *, rounding_mode=None) -> Tile:
    dt = dtype_arg(dtype)
    if type(x) is not Tile:
        xa, xd = operand(x)
        if xd is None:
            return scalar_tile(xa, dt)
        x = Tile(xa, xd)
    if x.dtype is dt:
        return x
    return Tile(np.asarray(convert(x.a, x.dtype, dt)), dt)


def bitcast(x, /, dtype) -> Tile:
    t = as_tile(x)
    dt = dtype_arg(dtype)
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
    dt = dtype_arg(dtype)
    if t.dtype is not D.uint8 or t.ndim != 1:
        raise KernelError("unpack_from_bytes takes a 1-D uint8 tile")
    if (t.size * 8) % dt.bits:
        raise KernelError(f"{t.size} bytes do not make a whole number of {dt} values")
    return Tile(np.ascontiguousarray(t.a).view(dt.np), dt)

