"""A small abstract interpretation of tile types over a kernel body: the shape and dtype of every
expression where they are statically known, so that a store can be checked against its output.

Shapes are tuples of dims; a dim is an ``int``, the name of a const generic (``"B"``: equal only to
itself), or ``None`` (unknown). Dtype promotion follows cuTile's rules (same-kind types widen,
signed with unsigned is an error, a Python constant adopts the tile's type unless it is of a
stronger kind). Anything not understood becomes ``None`` (unknown), and unknown is never reported.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from cutile_lab.language.dtypes import ALIASES, DTYPES, DType, bool_, f32, i32, i64, u64
from cutile_lab.language.frontend import KernelDef, Param

Dim = int | str | None
Shape = tuple[Dim, ...] | None


# --- values ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class TileV:
    """A tile; ``shape == ()`` is a scalar. ``loose`` marks a Python constant (or a const
    generic) whose dtype adapts to the other operand; ``const`` is its value or symbol."""

    shape: Shape
    dtype: DType | None
    loose: bool = False
    const: Any = None


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
    pass


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
        if isinstance(v.const, int) or isinstance(v.const, str):
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
        return TileV(shape, dtype, a.loose and b.loose, a.const if a.const == b.const else None)
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


# --- the interpreter --------------------------------------------------------------------------

_UNARY_SAME = {"abs", "negative", "floor", "ceil", "bitwise_not", "cumsum", "cumprod"}
_UNARY_FLOAT = {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh",
                "cosh", "tanh"}
_BINARY = {"add", "sub", "mul", "floordiv", "mod", "pow", "maximum", "minimum", "atan2",
           "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_lshift", "bitwise_rshift"}
_COMPARE = {"equal", "not_equal", "greater", "greater_equal", "less", "less_equal"}
_REDUCE = {"sum", "prod", "max", "min"}
_NAMED_OPS = {"add": ast.Add, "sub": ast.Sub, "mul": ast.Mult, "floordiv": ast.FloorDiv,
              "mod": ast.Mod, "pow": ast.Pow}


class TileTypes:
    """Runs once over a kernel body; ``of(expr)`` is the type the body gives ``expr``."""

    MAX_LOOP_PASSES = 4

    def __init__(self, kdef: KernelDef, locals_: set[str], module_consts: dict | None = None):
        self.kdef = kdef
        self.locals = locals_
        self.types: dict[int, Val] = {}
        env: dict[str, Val] = {}
        for name, value in (module_consts or {}).items():
            if isinstance(value, (bool, int, float)):
                env[name] = loose_const(value)
        for g in kdef.const_generics:
            env[g] = symbol(g)
        for p in kdef.params:
            if p.role in ("mut", "shared"):
                env[p.name] = TensorV(p)
            elif p.role == "scalar":
                env[p.name] = TileV((), p.dtype)
            elif p.role == "const":
                env[p.name] = symbol(p.name)
        self.env = self._block(kdef.node.body, env)

    def of(self, node: ast.AST) -> Val:
        return self.types.get(id(node))

    # statements

    def _block(self, stmts, env: dict) -> dict:
        for s in stmts:
            env = self._stmt(s, env)
        return env

    def _stmt(self, s: ast.stmt, env: dict) -> dict:
        if isinstance(s, ast.Assign):
            v = self._eval(s.value, env)
            for t in s.targets:
                self._bind(t, v, env)
        elif isinstance(s, ast.AnnAssign):
            v = self._eval(s.value, env) if s.value is not None else None
            self._bind(s.target, v, env)
        elif isinstance(s, ast.AugAssign):
            cur = self._eval(s.target, env) if isinstance(s.target, ast.Name) else None
            rhs = self._eval(s.value, env)
            v = self._binop(type(s.op), cur, rhs)
            self._bind(s.target, v, env)
        elif isinstance(s, ast.If):
            self._eval(s.test, env)
            a = self._block(s.body, dict(env))
            b = self._block(s.orelse, dict(env))
            env = {k: join(a.get(k), b.get(k)) for k in set(a) | set(b)}
        elif isinstance(s, (ast.For, ast.AsyncFor, ast.While)):
            if isinstance(s, ast.While):
                self._eval(s.test, env)
            else:
                it = self._eval(s.iter, env)
                self._bind(s.target, TileV((), i32) if isinstance(it, RangeV) else None, env)
            cur = dict(env)
            for i in range(self.MAX_LOOP_PASSES + 1):
                out = self._block(s.body, dict(cur))
                joined = {k: join(cur.get(k), out.get(k)) for k in set(cur) | set(out)}
                if joined == cur:
                    break
                if i == self.MAX_LOOP_PASSES - 1:   # no fixpoint: forget what keeps changing
                    joined = {k: (v if v == cur.get(k) else None) for k, v in joined.items()}
                cur = joined
            env = self._block(s.orelse, cur)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            for item in s.items:
                self._eval(item.context_expr, env)
                if item.optional_vars is not None:
                    self._bind(item.optional_vars, None, env)
            env = self._block(s.body, env)
        elif isinstance(s, (ast.Try,) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())):
            env = self._block(s.body, env)
            for h in s.handlers:
                env = self._block(h.body, env)
            env = self._block(s.orelse, env)
            env = self._block(s.finalbody, env)
        elif isinstance(s, ast.Expr):
            self._eval(s.value, env)
        elif isinstance(s, ast.Return) and s.value is not None:
            self._eval(s.value, env)
        elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            env[s.name] = None
        else:
            for child in ast.iter_child_nodes(s):
                if isinstance(child, ast.expr):
                    self._eval(child, env)
        return env

    def _bind(self, target: ast.AST, v: Val, env: dict) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = v
            self.types[id(target)] = v
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = v.items if isinstance(v, TupleV) and len(v.items) == len(target.elts) \
                else (None,) * len(target.elts)
            for t, x in zip(target.elts, items):
                self._bind(t, x, env)
        elif isinstance(target, ast.Starred):
            self._bind(target.value, None, env)
        else:   # attribute / subscript targets: evaluate for their sub-expressions
            for child in ast.iter_child_nodes(target):
                if isinstance(child, ast.expr):
                    self._eval(child, env)

    # expressions

    def _eval(self, e: ast.expr, env: dict) -> Val:
        v = self._eval_inner(e, env)
        self.types[id(e)] = v
        return v

    def _eval_inner(self, e: ast.expr, env: dict) -> Val:
        if isinstance(e, ast.Constant):
            if isinstance(e.value, (bool, int, float)):
                return loose_const(e.value)
            if e.value is None:
                return NoneV()
            return None
        if isinstance(e, ast.Name):
            if e.id in env:
                return env[e.id]
            if e.id not in self.locals:
                dt = DTYPES.get(e.id) or ALIASES.get(e.id)
                if dt is not None:
                    return DTypeV(dt)
            return None
        if isinstance(e, ast.Tuple):
            return TupleV(tuple(self._eval(x, env) for x in e.elts))
        if isinstance(e, ast.BinOp):
            a = self._eval(e.left, env)
            b = self._eval(e.right, env)
            return self._binop(type(e.op), a, b)
        if isinstance(e, ast.UnaryOp):
            a = self._eval(e.operand, env)
            if isinstance(e.op, ast.Not):
                return TileV(a.shape, bool_) if isinstance(a, TileV) else None
            if isinstance(a, TileV):
                if a.loose and isinstance(a.const, (int, float)) and \
                        not isinstance(a.const, bool):
                    if isinstance(e.op, ast.USub):
                        return loose_const(-a.const)
                    if isinstance(e.op, ast.UAdd):
                        return a
                return TileV(a.shape, a.dtype, a.loose)
            return None
        if isinstance(e, ast.Compare):
            vals = [self._eval(e.left, env)] + [self._eval(c, env) for c in e.comparators]
            shape: Shape = ()
            for v in vals:
                shape = broadcast(shape, v.shape) if isinstance(v, TileV) else None
            return TileV(shape, bool_)
        if isinstance(e, ast.BoolOp):
            for v in e.values:
                self._eval(v, env)
            return None
        if isinstance(e, ast.IfExp):
            self._eval(e.test, env)
            return join(self._eval(e.body, env), self._eval(e.orelse, env))
        if isinstance(e, ast.Attribute):
            return self._attribute(e, env)
        if isinstance(e, ast.Subscript):
            base = self._eval(e.value, env)
            idx = self._eval(e.slice, env)
            if isinstance(base, TupleV):
                i = int_of(idx)
                if i is not None and -len(base.items) <= i < len(base.items):
                    return base.items[i]
            return None
        if isinstance(e, ast.Call):
            return self._call(e, env)
        for child in ast.iter_child_nodes(e):
            if isinstance(child, ast.expr):
                self._eval(child, env)
        return None

    def _attribute(self, e: ast.Attribute, env: dict) -> Val:
        if isinstance(e.value, ast.Name) and e.value.id in ("ct", "cl") and e.value.id not in env:
            dt = DTYPES.get(e.attr) or ALIASES.get(e.attr)
            return DTypeV(dt) if dt is not None else None
        base = self._eval(e.value, env)
        if isinstance(base, TensorV):
            p = base.param
            if e.attr == "dtype" and p.dtype is not None:
                return DTypeV(p.dtype)
            if e.attr == "ndim":
                return loose_const(len(p.shape))
            if e.attr == "shape" and p.role == "mut":
                return TupleV(tuple(symbol(d) if isinstance(d, str) else
                                    (loose_const(d) if isinstance(d, int) else None)
                                    for d in p.shape))
            return None
        if isinstance(base, TileV) and not base.loose:
            if e.attr == "dtype" and base.dtype is not None:
                return DTypeV(base.dtype)
            if e.attr == "shape" and base.shape is not None:
                return TupleV(tuple(symbol(d) if isinstance(d, str) else
                                    (loose_const(d) if isinstance(d, int) else None)
                                    for d in base.shape))
            if e.attr == "ndim" and base.shape is not None:
                return loose_const(len(base.shape))
        return None

    def _binop(self, op: type, a: Val, b: Val) -> Val:
        if op is ast.MatMult:
            return self._matmul(a, b)
        if not (isinstance(a, TileV) and isinstance(b, TileV)):
            return None
        if a.loose and b.loose and not isinstance(a.const, str) and not isinstance(b.const, str) \
                and a.const is not None and b.const is not None:
            try:
                value = _fold(op, a.const, b.const)
            except Exception:   # division by zero, overflow: leave it to the compiler
                value = None
            if value is not None:
                return loose_const(value)
        dtype = promote_vals(a, b, force_float=op is ast.Div)
        return TileV(broadcast(a.shape, b.shape), dtype, a.loose and b.loose)

    def _matmul(self, a: Val, b: Val) -> Val:
        if not (isinstance(a, TileV) and isinstance(b, TileV)):
            return None
        dtype = promote_vals(a, b)
        if a.shape is None or b.shape is None or len(a.shape) < 2 or len(b.shape) < 2:
            return TileV(None, dtype)
        batch = broadcast(a.shape[:-2], b.shape[:-2])
        if batch is None:
            return TileV(None, dtype)
        return TileV(tuple(batch) + (a.shape[-2], b.shape[-1]), dtype)

    def _call(self, e: ast.Call, env: dict) -> Val:
        args = [self._eval(a, env) for a in e.args]
        kw = {k.arg: self._eval(k.value, env) for k in e.keywords}
        f = e.func
        if isinstance(f, ast.Attribute):
            if isinstance(f.value, ast.Name) and f.value.id == "ct" and "ct" not in env:
                return self._function(f.attr, args, kw)
            obj = self._eval(f.value, env)
            return self._method(obj, f.attr, args, kw)
        if isinstance(f, ast.Name):
            if f.id in env or f.id in self.locals:
                return None
            return self._function(f.id, args, kw)
        self._eval(f, env)
        return None

    def _arg(self, args, kw, i, name, default=None):
        if len(args) > i:
            return args[i]
        return kw.get(name, default)

    def _function(self, name: str, args: list, kw: dict) -> Val:
        a0 = args[0] if args else None
        if name == "load_tile_like":
            x, z = self._arg(args, kw, 0, "x"), self._arg(args, kw, 1, "z")
            dtype = x.param.dtype if isinstance(x, TensorV) else None
            shape = tuple(z.param.shape) if isinstance(z, TensorV) and z.param.role == "mut" \
                else None
            return TileV(shape, dtype)
        if name in ("load_tile", "load"):
            x = self._arg(args, kw, 0, "array")
            dtype = x.param.dtype if isinstance(x, TensorV) else None
            return TileV(shape_of(self._arg(args, kw, 2, "shape")), dtype)
        if name in ("tile_id", "num_tiles", "bid", "num_blocks", "cdiv"):
            return TileV((), i32)
        if name == "range":
            return RangeV()
        if name in ("full", "zeros", "ones"):
            shape = shape_of(self._arg(args, kw, 0, "shape"))
            dt = self._arg(args, kw, 2 if name == "full" else 1, "dtype")
            return TileV(shape, dt.dtype if isinstance(dt, DTypeV) else None)
        if name == "arange":
            dt = kw.get("dtype")
            n = self._arg(args, kw, 0, "size")
            return TileV((dim_of(n),), dt.dtype if isinstance(dt, DTypeV) else None)
        if name in ("astype", "bitcast"):
            dt = self._arg(args, kw, 1, "dtype")
            shape = a0.shape if isinstance(a0, TileV) else None
            return TileV(shape, dt.dtype if isinstance(dt, DTypeV) else None)
        if name == "where" and len(args) == 3:
            c, x, y = args
            if not all(isinstance(v, TileV) for v in args):
                return None
            return TileV(broadcast(broadcast(c.shape, x.shape), y.shape), promote_vals(x, y))
        if name == "mma":
            acc = self._arg(args, kw, 2, "acc")
            return acc if isinstance(acc, TileV) else None
        if not isinstance(a0, TileV):
            return None
        if name in _UNARY_SAME:
            return TileV(a0.shape, a0.dtype, a0.loose)
        if name in _UNARY_FLOAT:
            return TileV(a0.shape, a0.dtype if a0.dtype is not None and a0.dtype.is_float
                         else None)
        if name == "isnan":
            return TileV(a0.shape, bool_)
        if name in _BINARY and len(args) >= 2:
            return self._binop(_NAMED_OPS.get(name, ast.BitAnd), a0, args[1])
        if name == "truediv" and len(args) >= 2:
            return self._binop(ast.Div, a0, args[1])
        if name in _COMPARE and len(args) >= 2 and isinstance(args[1], TileV):
            return TileV(broadcast(a0.shape, args[1].shape), bool_)
        if name in _REDUCE or name in ("argmax", "argmin"):
            if a0.shape == () or a0.loose:
                return None          # Python's min/max of scalars: not a reduction
            axis = self._arg(args, kw, 1, "axis", "all")
            keep = self._arg(args, kw, 2, "keepdims", loose_const(False))
            if not (isinstance(keep, TileV) and keep.loose and keep.const is not None):
                return TileV(None, a0.dtype)
            keepdims = bool(keep.const)
            dtype = i32 if name in ("argmax", "argmin") else a0.dtype
            return TileV(reduce_shape(a0.shape, axis, keepdims), dtype)
        if name == "matmul" and len(args) >= 2:
            return self._matmul(a0, args[1])
        return self._method(a0, name, args[1:], kw)

    def _method(self, obj: Val, name: str, args: list, kw: dict) -> Val:
        if isinstance(obj, TensorV):
            p = obj.param
            if name == "load" and p.role == "mut":
                return TileV(tuple(p.shape), p.dtype)
            return None
        if not isinstance(obj, TileV):
            return None
        if name in ("astype", "bitcast"):
            dt = self._arg(args, kw, 0, "dtype")
            return TileV(obj.shape, dt.dtype if isinstance(dt, DTypeV) else None)
        if name == "reshape":
            shape = shape_of(self._arg(args, kw, 0, "shape"))
            return TileV(_resolve_reshape(obj.shape, shape), obj.dtype)
        if name == "permute":
            axes = self._arg(args, kw, 0, "axes")
            if obj.shape is None or not isinstance(axes, TupleV):
                return TileV(None, obj.dtype)
            idx = [int_of(a) for a in axes.items]
            if any(i is None for i in idx) or sorted(idx) != list(range(len(obj.shape))):
                return TileV(None, obj.dtype)
            return TileV(tuple(obj.shape[i] for i in idx), obj.dtype)
        if name == "transpose":
            if obj.shape is None:
                return TileV(None, obj.dtype)
            a0 = self._arg(args, kw, 0, "axis0")
            a1 = self._arg(args, kw, 1, "axis1")
            rank = len(obj.shape)
            if a0 is None and a1 is None:
                if rank != 2:
                    return TileV(None, obj.dtype)
                return TileV((obj.shape[1], obj.shape[0]), obj.dtype)
            i, j = int_of(a0), int_of(a1)
            if i is None or j is None:
                return TileV(None, obj.dtype)
            i, j = _norm_axis(i, rank), _norm_axis(j, rank)
            if i is None or j is None:
                return TileV(None, obj.dtype)
            shape = list(obj.shape)
            shape[i], shape[j] = shape[j], shape[i]
            return TileV(tuple(shape), obj.dtype)
        if name == "expand_dims":
            axis = int_of(self._arg(args, kw, 0, "axis"))
            if obj.shape is None or axis is None:
                return TileV(None, obj.dtype)
            rank = len(obj.shape) + 1
            axis = _norm_axis(axis, rank)
            if axis is None:
                return TileV(None, obj.dtype)
            shape = list(obj.shape)
            shape.insert(axis, 1)
            return TileV(tuple(shape), obj.dtype)
        if name == "broadcast_to":
            return TileV(shape_of(self._arg(args, kw, 0, "shape")), obj.dtype)
        if name == "item":
            return TileV((), obj.dtype)
        return None


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
