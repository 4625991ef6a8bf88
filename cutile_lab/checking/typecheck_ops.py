"""What each language or cuTile function, tile method and operator gives back, in the typing
pass: the dtype and symbolic shape of the result from those of the arguments (loads take the
tensor's dtype and the shape asked for, reductions drop or keep an axis, ``reshape`` /
``permute`` / ``transpose`` move dimensions, operators broadcast and promote, constants fold).

``TileResults`` is mixed into ``typecheck.Typing``; unknown results are ``None``.
"""
from __future__ import annotations

import ast
from typing import Any

from cutile_lab.checking.tiletypes import (DTypeV, TensorV, TileV, TupleV, Val, broadcast,
                                           dim_arith, dim_of, int_of, loose_const, promote_vals,
                                           reduce_shape, shape_of, _fold, _norm_axis,
                                           _resolve_reshape)
from cutile_lab.checking.typecheck_values import RawMemV, range_value, value_token
from cutile_lab.language.dtypes import bool_, i32

_UNARY_SAME = {"abs", "negative", "floor", "ceil", "bitwise_not", "cumsum", "cumprod"}
_UNARY_FLOAT = {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh",
                "cosh", "tanh"}
_BINARY = {"add", "sub", "mul", "floordiv", "mod", "pow", "maximum", "minimum", "atan2",
           "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_lshift", "bitwise_rshift"}
_COMPARE = {"equal", "not_equal", "greater", "greater_equal", "less", "less_equal"}
_REDUCE = {"sum", "prod", "max", "min"}
_NAMED_OPS = {"add": ast.Add, "sub": ast.Sub, "mul": ast.Mult, "floordiv": ast.FloorDiv,
              "mod": ast.Mod, "pow": ast.Pow}
_LOADS = {"load_tile_like", "load_tile", "load", "gather"}
_MAKERS = {"bid", "tile_id", "num_tiles", "num_blocks", "cdiv", "range", "full", "zeros", "ones",
           "arange", "astype", "bitcast", "where", "mma"}
_SHAPE_MOVES = {"reshape", "permute", "transpose", "expand_dims", "broadcast_to", "extract"}


class TileResults:
    """The part of ``Typing`` that types the result of a function, method or operator."""

    def _binop(self, op: type, a: Val, b: Val) -> Val:
        if op is ast.MatMult:
            return self._matmul(a, b)
        if self.kdef.kind == "cutile":
            # a plain kernel's unannotated parameter in arithmetic is a scalar (an array cannot
            # be an operand): `t * scale` keeps the tile's shape
            a, b = (TileV((), None) if isinstance(v, TensorV) else v for v in (a, b))
        if not (isinstance(a, TileV) and isinstance(b, TileV)):
            return None
        if a.loose and b.loose and a.const is not None and b.const is not None:
            da, db = a.const, b.const
            if isinstance(da, (int, float)) and isinstance(db, (int, float)) and \
                    not isinstance(da, str) and not isinstance(db, str):
                try:
                    value = _fold(op, da, db)
                except Exception:   # division by zero, overflow: leave it to the compiler
                    value = None
                if value is not None:
                    return loose_const(value)
            else:
                d = dim_arith(op, dim_of(a), dim_of(b))
                if d is not None:
                    return TileV((), i32, True, d)
        dtype = promote_vals(a, b, force_float=op is ast.Div)
        origin = None
        # `b // n` and `b % n` of the block's own id `b`: together, an injective pair (the
        # row-major split of a 1-D grid into two coordinates)
        if op in (ast.FloorDiv, ast.Mod) and isinstance(a.origin, tuple) and \
                a.origin[0] == "bid" and value_token(b) is not None:
            origin = ("div" if op is ast.FloorDiv else "mod", a.origin, value_token(b))
        return TileV(broadcast(a.shape, b.shape), dtype, a.loose and b.loose, origin=origin)

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

    # --- calls ------------------------------------------------------------------------------

    def _arg(self, args, kw, i, name, default=None):
        if len(args) > i:
            return args[i]
        return kw.get(name, default)

    def _function(self, name: str, args: list, kw: dict) -> Val:
        """What a language or cuTile function returns."""
        if name in _LOADS:
            return self._loaded(name, args, kw)
        if name in _MAKERS:
            return self._made(name, args, kw)
        a0 = args[0] if args else None
        if name in _SHAPE_MOVES and isinstance(a0, TileV):
            return self._method(a0, name, args[1:], kw)
        if not isinstance(a0, TileV):
            return None
        if name in _REDUCE or name in ("argmax", "argmin"):
            return self._reduced(name, a0, args, kw)
        return self._elementwise(name, a0, args)

    def _loaded(self, name: str, args: list, kw: dict) -> Val:
        """A tile read from a tensor: the tensor's dtype, the shape asked for."""
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
        if name == "gather":
            # element-wise indexed reads: the result has the shape the index tiles broadcast to
            x = self._arg(args, kw, 0, "array")
            idx = self._arg(args, kw, 1, "indices")
            dtype = x.param.dtype if isinstance(x, TensorV) else None
            shape: Any = ()
            for part in (idx.items if isinstance(idx, TupleV) else (idx,)):
                shape = broadcast(shape, part.shape) if isinstance(part, TileV) else None
            return TileV(shape, dtype)
        return None

    def _made(self, name: str, args: list, kw: dict) -> Val:
        """A block index or count, a range, a new tile (``full``, ``arange``), a cast, a select or
        a matrix multiply-accumulate."""
        a0 = args[0] if args else None
        if name in ("bid", "tile_id"):
            axis = int_of(self._arg(args, kw, 0, "axis"))
            return TileV((), i32, origin=("bid", axis) if axis is not None else None)
        if name in ("num_tiles", "num_blocks", "cdiv"):
            axis = int_of(self._arg(args, kw, 0, "axis"))
            return TileV((), i32, origin=("num", axis) if name == "num_blocks" and
                         axis is not None else None)
        if name == "range":
            return range_value(args)
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
            return TileV(acc.shape, acc.dtype) if isinstance(acc, TileV) else None
        return None

    def _reduced(self, name: str, a0: TileV, args: list, kw: dict) -> Val:
        """A reduction over an axis (or all of them), keeping the axis or not."""
        if a0.shape == () or a0.loose:
            return None          # Python's min/max of scalars: not a reduction
        axis = self._arg(args, kw, 1, "axis", "all")
        keep = self._arg(args, kw, 2, "keepdims", loose_const(False))
        if not (isinstance(keep, TileV) and keep.loose and keep.const is not None):
            return TileV(None, a0.dtype)
        keepdims = bool(keep.const)
        dtype = i32 if name in ("argmax", "argmin") else a0.dtype
        return TileV(reduce_shape(a0.shape, axis, keepdims), dtype)

    def _elementwise(self, name: str, a0: TileV, args: list) -> Val:
        """An element-wise function, a comparison or a matrix product of tiles."""
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
        if name == "matmul" and len(args) >= 2:
            return self._matmul(a0, args[1])
        return None

    def _method(self, obj: Val, name: str, args: list, kw: dict) -> Val:
        if isinstance(obj, TensorV):
            p = obj.param
            if name == "load" and p.role == "mut":
                return TileV(tuple(p.shape), p.dtype)
            return None
        if isinstance(obj, RawMemV):
            if name == "load_offset":
                off = self._arg(args, kw, 0, "offset")
                dt = obj.array.param.dtype if isinstance(obj.array, TensorV) else None
                return TileV(off.shape if isinstance(off, TileV) else None, dt)
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
        if name in _REDUCE or name in ("argmax", "argmin") or name in _UNARY_SAME or \
                name in _UNARY_FLOAT:
            return self._function(name, [obj] + list(args), kw)
        return None


# --- helpers ---------------------------------------------------------------------------------

