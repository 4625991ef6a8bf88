"""The algebra of the checker's types (the typing pass, ``typecheck``, applies it to a kernel):
values (tiles, tensors, tuples, dtypes), symbolic shapes, broadcasting, reductions, joins, and
cuTile's dtype promotion and which conversions lose nothing.

Shapes are tuples of dims; a dim is an ``int``, the name of a const generic (``"B"``: equal only to
itself), a ``Sym`` (a normalised expression over const generics: ``2*B``, ``B + 1``, ``BM*BN``,
so that ``B*2``, ``2*B`` and ``B + B`` compare equal), or ``None`` (unknown). Dtype promotion
follows cuTile's rules (same-kind types widen, signed with unsigned is an error, a Python
constant adopts the tile's type unless it is of a stronger kind). Anything not understood
becomes ``None`` (unknown); the passes decide what an unknown means (in safe code, where a proof
is needed, it is an error).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from cutile_lab.language.dtypes import DType, bool_, f32, i32, i64, u64
from cutile_lab.language.frontend import Param



@dataclass(frozen=True)
class Sym:
    """A polynomial over const-generic names with integer coefficients, in canonical form:
    ``terms`` is a sorted tuple of (monomial, coefficient), a monomial a sorted tuple of names.
    An integer division that does not divide exactly is an opaque name of its own
    (``"(BM // 3)"``)."""

    terms: tuple

    def __str__(self) -> str:
        parts = []
        for mono, c in self.terms:
            body = "*".join(mono)
            if not mono:
                parts.append(str(c))
            elif c == 1:
                parts.append(body)
            elif c == -1:
                parts.append(f"-{body}")
            else:
                parts.append(f"{c}*{body}")
        text = " + ".join(parts).replace("+ -", "- ")
        return text or "0"


Dim = int | str | Sym | None
Shape = tuple[Dim, ...] | None


def _poly(d) -> dict | None:
    if isinstance(d, bool):
        return None
    if isinstance(d, int):
        return {(): d} if d else {}
    if isinstance(d, str):
        return {(d,): 1}
    if isinstance(d, Sym):
        return dict(d.terms)
    return None


def _dim(poly: dict) -> Dim:
    poly = {m: c for m, c in poly.items() if c}
    if not poly:
        return 0
    if list(poly) == [()]:
        return poly[()]
    if len(poly) == 1:
        (mono, c), = poly.items()
        if c == 1 and len(mono) == 1:
            return mono[0]
    return Sym(tuple(sorted(poly.items())))


def dim_arith(op: type, a, b) -> Dim:
    """``a op b`` for dims (+, -, *, //), normalised; ``None`` where it is not a dim."""
    pa, pb = _poly(a), _poly(b)
    if pa is None or pb is None:
        return None
    if op in (ast.Add, ast.Sub):
        sign = 1 if op is ast.Add else -1
        out = dict(pa)
        for m, c in pb.items():
            out[m] = out.get(m, 0) + sign * c
        return _dim(out)
    if op is ast.Mult:
        out: dict = {}
        for ma, ca in pa.items():
            for mb, cb in pb.items():
                m = tuple(sorted(ma + mb))
                out[m] = out.get(m, 0) + ca * cb
        return _dim(out)
    if op is ast.FloorDiv and isinstance(b, int) and not isinstance(b, bool) and b > 0:
        if all(c % b == 0 for c in pa.values()):
            return _dim({m: c // b for m, c in pa.items()})
        return f"({a} // {b})"
    return None


# --- values ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class TileV:
    """A tile; ``shape == ()`` is a scalar. ``loose`` marks a Python constant (or a const
    generic) whose dtype adapts to the other operand; ``const`` is its value or symbol."""

    shape: Shape
    dtype: DType | None
    loose: bool = False
    const: Any = None
    origin: Any = None      # ("bid", axis): the block's own id (plain cuTile race analysis)


@dataclass(frozen=True)
class TensorV:
    param: Param


@dataclass(frozen=True)
class DTypeV:
    dtype: DType


@dataclass(frozen=True)
class TupleV:
    items: tuple


@dataclass(frozen=True)
class RangeV:
    item: Any = None        # the type of the loop variable


@dataclass(frozen=True)
class NoneV:
    """The constant ``None`` (``axis=None``), as opposed to an unknown value."""


Val = TileV | TensorV | DTypeV | TupleV | RangeV | NoneV | None


def loose_const(value) -> TileV:
    if isinstance(value, bool):
        return TileV((), bool_, True, value)
    if isinstance(value, int):
        dt = i32 if -2**31 <= value < 2**31 else (i64 if -2**63 <= value < 2**63 else u64)
        return TileV((), dt, True, value)
    return TileV((), f32, True, value)


def symbol(name: str) -> TileV:
    return TileV((), i32, True, name)


def dim_of(v: Val) -> Dim:
    if isinstance(v, TileV) and v.shape == () and v.loose and not isinstance(v.const, bool):
        if isinstance(v.const, (int, str, Sym)):
            return v.const
    return None


def shape_of(v: Val) -> Shape:
    """A shape argument: a tuple of dims, or one dim."""
    if isinstance(v, TupleV):
        return tuple(dim_of(x) for x in v.items)
    d = dim_of(v)
    if d is not None:
        return (d,)
    return None


def int_of(v: Val) -> int | None:
    d = dim_of(v)
    return d if isinstance(d, int) else None


def format_shape(shape: Shape) -> str:
    if shape is None:
        return "(?)"
    inner = ", ".join("?" if d is None else str(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


# --- dtype promotion (cuTile's table) ---------------------------------------------------------

_RESTRICTED = {"tf32", "f8e4m3", "f8e5m2"}
_CATEGORY = {"b": 0, "i": 1, "u": 1, "f": 2}


def promote(a: DType, b: DType) -> DType | None:
    """cuTile's implicit promotion of two typed operands; ``None`` where cuTile refuses."""
    if a == b:
        return a
    if a.name in _RESTRICTED or b.name in _RESTRICTED:
        return None
    if a.kind == "b":
        return b
    if b.kind == "b":
        return a
    if a.kind in "iu" and b.kind in "iu":
        if a.kind != b.kind:
            return None
        return a if a.bits >= b.bits else b
    if a.kind == "f" and b.kind != "f":
        return a
    if b.kind == "f" and a.kind != "f":
        return b
    if {a.name, b.name} == {"f16", "bf16"}:
        return None
    return a if a.bits >= b.bits else b


def _promote_loose(dtype: DType, loose: DType) -> DType:
    cat = _CATEGORY.get(dtype.kind, 2)
    lcat = _CATEGORY.get(loose.kind, 2)
    if cat == lcat:
        return dtype
    return loose if lcat > cat else dtype


def promote_vals(a: TileV, b: TileV, force_float: bool = False) -> DType | None:
    if a.dtype is None or b.dtype is None:
        return None
    if a.loose and b.loose:
        d = promote(a.dtype, b.dtype)
    elif a.loose:
        d = _promote_loose(b.dtype, a.dtype)
    elif b.loose:
        d = _promote_loose(a.dtype, b.dtype)
    else:
        d = promote(a.dtype, b.dtype)
    if d is None:
        return None
    if force_float and not d.is_float:
        return f32
    return d


def implicit_cast_ok(src: DType, dst: DType) -> bool:
    """Whether cuTile converts ``src`` to ``dst`` silently on a store (widening only)."""
    return promote(src, dst) == dst


# significand bits (the implicit one included), and the largest binary exponent, of each float
_FLOAT_FORMAT = {"f64": (53, 1023), "f32": (24, 127), "tf32": (11, 127), "f16": (11, 15),
                 "bf16": (8, 127), "f8e4m3": (4, 8), "f8e5m2": (3, 15)}


def lossless_cast(src: DType, dst: DType) -> bool:
    """Whether every value of ``src`` is exactly a value of ``dst``: floats into floats with as
    many significand bits and as much range, integers into wider integers that hold their sign,
    integers into floats whose significand holds every integer of the type, bool into anything.
    """
    if src == dst or src.kind == "b":
        return True
    if dst.kind == "b":
        return False
    if src.kind == "f":
        if dst.kind != "f":
            return False
        (sm, se), (dm, de) = _FLOAT_FORMAT.get(src.name, (99, 9999)), \
            _FLOAT_FORMAT.get(dst.name, (0, 0))
        return sm <= dm and se <= de
    value_bits = src.bits - (1 if src.kind == "i" else 0)     # magnitude bits of the integer
    if dst.kind == "f":
        return value_bits <= _FLOAT_FORMAT.get(dst.name, (0, 0))[0]
    if dst.kind == "u":
        return src.kind == "u" and dst.bits >= src.bits
    return dst.bits - 1 >= value_bits                           # into a signed integer


# --- shapes ---------------------------------------------------------------------------------

def broadcast(a: Shape, b: Shape) -> Shape:
    if a is None or b is None:
        return None
    out: list[Dim] = []
    n = max(len(a), len(b))
    pa = (1,) * (n - len(a)) + tuple(a)
    pb = (1,) * (n - len(b)) + tuple(b)
    for x, y in zip(pa, pb):
        if x == y:
            out.append(x)
        elif x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        else:
            out.append(None)
    return tuple(out)


def join(a: Val, b: Val) -> Val:
    """The type of a name after two branches (or loop iterations) that gave it ``a`` and ``b``."""
    if a == b:
        return a
    if isinstance(a, TileV) and isinstance(b, TileV):
        if a.shape is not None and b.shape is not None and len(a.shape) == len(b.shape):
            shape: Shape = tuple(x if x == y else None for x, y in zip(a.shape, b.shape))
        else:
            shape = None
        dtype = a.dtype if a.dtype == b.dtype else None
        return TileV(shape, dtype, a.loose and b.loose, a.const if a.const == b.const else None,
                     a.origin if a.origin == b.origin else None)
    if isinstance(a, TupleV) and isinstance(b, TupleV) and len(a.items) == len(b.items):
        return TupleV(tuple(join(x, y) for x, y in zip(a.items, b.items)))
    return None


def _norm_axis(axis: int, rank: int) -> int | None:
    if axis < 0:
        axis += rank
    return axis if 0 <= axis < rank else None


def reduce_shape(shape: Shape, axis: Val | str, keepdims: bool) -> Shape:
    if shape is None:
        return None
    rank = len(shape)
    if isinstance(axis, NoneV) or axis == "all":
        return tuple(1 for _ in shape) if keepdims else ()
    if axis is None:
        return None
    if isinstance(axis, TupleV):
        axes = [int_of(a) for a in axis.items]
    elif not isinstance(axis, TileV):
        return None
    else:
        axes = [int_of(axis)]
    if any(a is None for a in axes):
        return None
    norm = {_norm_axis(a, rank) for a in axes}
    if None in norm:
        return None
    if keepdims:
        return tuple(1 if i in norm else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in norm)


def _resolve_reshape(src: Shape, dst: Shape) -> Shape:
    if dst is None:
        return None
    if -1 not in dst:
        return dst
    if src is None or not all(isinstance(d, int) for d in src) or \
            not all(isinstance(d, int) for d in dst) or dst.count(-1) != 1:
        return tuple(None if d == -1 else d for d in dst)
    total = 1
    for d in src:
        total *= d
    known = 1
    for d in dst:
        if d != -1:
            known *= d
    if known == 0 or total % known:
        return tuple(None if d == -1 else d for d in dst)
    return tuple(total // known if d == -1 else d for d in dst)


def _fold(op: type, a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return None
    if op is ast.Add:
        return a + b
    if op is ast.Sub:
        return a - b
    if op is ast.Mult:
        return a * b
    if op is ast.FloorDiv and isinstance(a, int) and isinstance(b, int):
        return a // b
    if op is ast.Mod and isinstance(a, int) and isinstance(b, int):
        return a % b
    if op is ast.Div:
        return a / b
    if op is ast.Pow and isinstance(a, int) and isinstance(b, int) and 0 <= b < 64:
        return a ** b
    return None
