"""Flops and bytes of one launch, derived from the kernel's own syntax tree and the launch's
arguments, for ``%tile_time``, ``sweep`` and the roofline.

Owns: ``count_launch(kdef, args, consts)`` -- a small abstract interpretation of the kernel body,
per tile: every tile load/store moves ``prod(tile shape) x itemsize`` bytes, ``mma``/``matmul``/
``@`` of ``(M, K) x (K, N)`` tiles is ``2·M·N·K`` flops, element-wise arithmetic and math ops
one flop per element, reductions one per input element; loops multiply by their trip count
(``range`` over constants, argument shapes and ``num_tiles``); the total is that times the
number of tiles in the grid (the ``Mut`` output's partition). Bytes reported for the roofline
are the *compulsory* ones: per argument, the smaller of the tile traffic and its size, so a
GEMM's re-reads of A and B are not counted as DRAM traffic. Anything it cannot follow makes the
count approximate (``exact=False``, with the reason); ``--flops``/``--bytes`` override it.
"""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from cutile_lab.language.dtypes import DType, dtype_by_name
from cutile_lab.performance.counting import FlopByteCount

ELEMENTWISE_OPS = {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "maximum",
                   "minimum", "negative", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt",
                   "sin", "cos", "tan", "sinh", "cosh", "tanh", "atan2", "floor", "ceil",
                   "where"}
REDUCTIONS = {"sum", "max", "min", "prod", "argmax", "argmin", "cumsum", "cumprod"}
SHAPE_ONLY = {"astype", "bitcast", "broadcast_to", "expand_dims", "reshape", "permute",
              "transpose", "extract"}
LOADS = {"load_tile_like", "load_tile", "load"}


@dataclass(frozen=True)
class ArgInfo:
    """What the count needs of one launch argument: full shape and element type."""

    shape: tuple[int, ...]
    dtype: DType | None

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * (self.dtype.itemsize if self.dtype else 0)


@dataclass
class WorkCount:
    """The count of one launch; ``count`` is what a ``Measurement`` takes."""

    flops: float
    bytes_read: float
    bytes_written: float
    tile_bytes: float                   # bytes moved by tile loads/stores (with re-reads)
    tiles: int                          # grid size
    precision: str
    exact: bool = True
    reasons: list[str] = field(default_factory=list)

    @property
    def bytes(self) -> float:
        return self.bytes_read + self.bytes_written

    @property
    def count(self) -> FlopByteCount:
        return FlopByteCount(self.flops, self.bytes_read, self.bytes_written)


@dataclass
class _Tile:
    shape: tuple[int, ...] | None
    dtype: DType | None = None


class _Unknown(Exception):
    pass


def _arg_info(value) -> ArgInfo | None:
    """Shape and dtype of a launch argument: a lab tensor, a partition, a NumPy array..."""
    if isinstance(value, ArgInfo):
        return value
    for attr in ("tensor", "base", "source"):   # a partition wraps the tensor it splits
        inner = getattr(value, attr, None)
        if inner is not None and hasattr(inner, "shape") and not hasattr(value, "shape"):
            value = inner
            break
    shape = getattr(value, "shape", None)
    if shape is None:
        return None
    try:
        shape = tuple(int(s) for s in shape)
    except (TypeError, ValueError):
        return None
    dt = getattr(value, "dtype", None)
    dtype = None
    if isinstance(dt, DType):
        dtype = dt
    elif dt is not None:
        from cutile_lab.language.dtypes import dtype_of_numpy
        dtype = dtype_by_name(str(getattr(dt, "name", dt))) or dtype_of_numpy(dt)
    return ArgInfo(shape, dtype)


def count_launch(kdef, args: Mapping[str, Any], consts: Mapping[str, int] | None = None,
                 grid: tuple[int, ...] | None = None) -> WorkCount:
    """The work of launching ``kdef`` over ``args`` (param name -> tensor / partition /
    ``ArgInfo``) with const generics ``consts`` (missing ones are bound from the partitions'
    tile shapes where the argument is a partition exposing ``tile_shape``)."""
    infos: dict[str, ArgInfo] = {}
    consts = dict(consts or {})
    for p in kdef.params:
        if p.name not in args:
            continue
        v = args[p.name]
        info = _arg_info(v)
        if info is not None:
            if info.dtype is None and p.dtype is not None:
                info = ArgInfo(info.shape, p.dtype)
            infos[p.name] = info
        if p.role == "mut":
            tile = getattr(v, "tile_shape", None)
            if tile is not None:
                for d, t in zip(p.shape, tuple(tile)):
                    if isinstance(d, str):
                        consts.setdefault(d, int(t))
        if p.role in ("scalar", "const") and isinstance(v, (int, float)) and \
                not isinstance(v, bool):
            consts.setdefault(p.name, v)
    for g in kdef.const_generics:
        p = kdef.param(g)
        if g not in consts and p is not None and p.default is not None:
            consts[g] = p.default
    return _Counter(kdef, infos, consts, grid).run()


class _Counter:
    def __init__(self, kdef, infos: dict[str, ArgInfo], consts: dict, grid):
        self.kdef = kdef
        self.infos = infos
        self.consts = consts
        self.grid = grid
        self.flops = 0.0
        self.read: dict[str, float] = {}
        self.written: dict[str, float] = {}
        self.exact = True
        self.reasons: list[str] = []
        self.mma_dtype: DType | None = None
        self.env: dict[str, _Tile] = {}
        self.ints: dict[str, int] = {k: v for k, v in consts.items() if isinstance(v, int)}
        self.outputs = {p.name: p for p in kdef.params if p.role == "mut"}

    # -- helpers ---------------------------------------------------------------------------
    def approx(self, why: str) -> None:
        self.exact = False
        if why not in self.reasons:
            self.reasons.append(why)

    def tile_shape_of(self, pname: str) -> tuple[int, ...] | None:
        p = self.outputs.get(pname)
        if p is None:
            return None
        dims = []
        for d in p.shape:
            if isinstance(d, int):
                dims.append(d)
            elif isinstance(d, str) and isinstance(self.consts.get(d), int):
                dims.append(self.consts[d])
            else:
                return None
        return tuple(dims)

    def int_of(self, node) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.ints:
                return self.ints[node.id]
            raise _Unknown(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.int_of(node.operand)
        if isinstance(node, ast.BinOp):
            a, b = self.int_of(node.left), self.int_of(node.right)
            ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                   ast.FloorDiv: lambda: a // b, ast.Mod: lambda: a % b,
                   ast.Pow: lambda: a ** b}
            f = ops.get(type(node.op))
            if f is None:
                raise _Unknown(ast.unparse(node))
            return f()
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
                and node.value.attr == "shape" and isinstance(node.value.value, ast.Name):
            info = self.infos.get(node.value.value.id)
            if info is not None:
                return info.shape[self.int_of(node.slice)]
        if isinstance(node, ast.Call):
            name = _call_name(node)
            if name == "cdiv" and len(node.args) == 2:
                return -(-self.int_of(node.args[0]) // self.int_of(node.args[1]))
            if name in ("min", "max") and node.args:
                vals = [self.int_of(a) for a in node.args]
                return min(vals) if name == "min" else max(vals)
            if name == "num_tiles":
                return self.num_tiles(node)
            if name == "len" and len(node.args) == 1:
                raise _Unknown("len")
        raise _Unknown(ast.unparse(node))

    def shape_of(self, node) -> tuple[int, ...]:
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(self.int_of(e) for e in node.elts)
        return (self.int_of(node),)

    def num_tiles(self, node: ast.Call) -> int:
        """``num_tiles(x, axis, shape)`` = ceil(x.shape[axis] / shape[axis]);
        ``num_tiles(axis)`` = the grid's extent on that axis."""
        a = node.args
        if len(a) == 1:
            axis = self.int_of(a[0])
            return self.grid_dims()[axis]
        if len(a) >= 3 and isinstance(a[0], ast.Name) and a[0].id in self.infos:
            info = self.infos[a[0].id]
            axis = self.int_of(a[1])
            shape = self.shape_of(a[2])
            return -(-info.shape[axis] // shape[axis])
        raise _Unknown("num_tiles")

    def grid_dims(self) -> tuple[int, ...]:
        if self.grid:
            return tuple(self.grid)
        for name in self.outputs:
            info = self.infos.get(name)
            tile = self.tile_shape_of(name)
            if info is not None and tile is not None and len(tile) == len(info.shape):
                return tuple(-(-s // t) for s, t in zip(info.shape, tile))
        raise _Unknown("grid")

    def dtype_of(self, node) -> DType | None:
        if isinstance(node, ast.Name) and node.id in self.infos:
            return self.infos[node.id].dtype
        return None

    def add_read(self, arg: str | None, nbytes: float) -> None:
        self.read[arg or "?"] = self.read.get(arg or "?", 0.0) + nbytes

    def add_write(self, arg: str | None, nbytes: float) -> None:
        self.written[arg or "?"] = self.written.get(arg or "?", 0.0) + nbytes

    # -- walking ---------------------------------------------------------------------------
    def run(self) -> WorkCount:
        if self.kdef.kind == "cutile":
            self.approx("a plain cuTile kernel: counted from ct.load/ct.store shapes")
        for p in self.kdef.params:
            if p.role == "mut":
                self.env[p.name] = _Tile(self.tile_shape_of(p.name), p.dtype)
        try:
            tiles = math.prod(self.grid_dims())
        except (_Unknown, IndexError):
            tiles = 1
            self.approx("the grid is unknown (no partitioned output): counted one tile")
        self.block(self.kdef.node.body, 1.0)
        tile_bytes = sum(self.read.values()) + sum(self.written.values())
        # compulsory bytes: per argument, at most its size
        read = 0.0
        for arg, b in self.read.items():
            info = self.infos.get(arg)
            total = b * tiles
            read += min(total, info.nbytes) if info is not None else total
        written = 0.0
        for arg, b in self.written.items():
            info = self.infos.get(arg)
            total = b * tiles
            written += min(total, info.nbytes) if info is not None else total
        precision = self.precision()
        return WorkCount(self.flops * tiles, read, written, tile_bytes * tiles, tiles, precision,
                         self.exact, self.reasons)

    def precision(self) -> str:
        dt = self.mma_dtype
        if dt is None:
            for p in self.kdef.params:
                if p.role == "mut" and p.dtype is not None:
                    dt = p.dtype
                    break
        if dt is None:
            for info in self.infos.values():
                if info.dtype is not None:
                    dt = info.dtype
                    break
        name = dt.name if dt is not None else "f32"
        return {"f8e4m3": "fp8", "f8e5m2": "fp8", "bool": "f32"}.get(
            name, name if name in ("f64", "f32", "tf32", "f16", "bf16") else "f32")

    def block(self, stmts, trips: float) -> None:
        for s in stmts:
            self.stmt(s, trips)

    def stmt(self, s, trips: float) -> None:
        if isinstance(s, ast.Assign):
            t = self.expr(s.value, trips)
            for target in s.targets:
                self.bind(target, t)
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            self.bind(s.target, self.expr(s.value, trips))
        elif isinstance(s, ast.AugAssign):
            right = self.expr(s.value, trips)
            left = self.env.get(s.target.id) if isinstance(s.target, ast.Name) else None
            shape = _broadcast(left.shape if left else None, right.shape)
            if shape is not None and isinstance(s.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
                self.flops += math.prod(shape) * trips
            if isinstance(s.target, ast.Name):
                self.env[s.target.id] = _Tile(shape, (left.dtype if left else right.dtype))
        elif isinstance(s, ast.Expr):
            self.expr(s.value, trips)
        elif isinstance(s, ast.For):
            n = self.trip_count(s)
            if isinstance(s.target, ast.Name):
                self.ints.pop(s.target.id, None)
            self.block(s.body, trips * n)
            self.block(s.orelse, trips)
        elif isinstance(s, ast.While):
            self.approx("a while loop (counted once)")
            self.block(s.body, trips)
        elif isinstance(s, ast.If):
            try:
                cond = bool(self.int_of(s.test)) if not (isinstance(s.test, ast.Constant)) \
                    else bool(s.test.value)
                self.block(s.body if cond else s.orelse, trips)
            except _Unknown:
                self.approx("a branch on a runtime value (both sides counted)")
                self.block(s.body, trips)
                self.block(s.orelse, trips)
        elif isinstance(s, ast.With):
            self.block(s.body, trips)

    def trip_count(self, s: ast.For) -> float:
        it = s.iter
        if isinstance(it, ast.Call) and _call_name(it) in ("range", "static_iter") and it.args:
            try:
                vals = [self.int_of(a) for a in it.args]
                return float(len(range(*vals)))
            except (_Unknown, ValueError, TypeError):
                pass
        self.approx(f"the trip count of `for` at line {s.lineno} (counted once)")
        return 1.0

    def bind(self, target, t: _Tile) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = t
            if t.shape == ():
                pass
        elif isinstance(target, (ast.Tuple, ast.List)):
            for e in target.elts:
                self.bind(e, _Tile(None))

    def expr(self, node, trips: float) -> _Tile:
        if isinstance(node, ast.Name):
            return self.env.get(node.id, _Tile(() if node.id in self.ints else None))
        if isinstance(node, ast.Constant):
            return _Tile(())
        if isinstance(node, ast.BinOp):
            a = self.expr(node.left, trips)
            b = self.expr(node.right, trips)
            if isinstance(node.op, ast.MatMult):
                return self.matmul(a, b, None, trips)
            shape = _broadcast(a.shape, b.shape)
            if shape:
                self.flops += math.prod(shape) * trips
            return _Tile(shape, a.dtype or b.dtype)
        if isinstance(node, ast.UnaryOp):
            t = self.expr(node.operand, trips)
            if t.shape and isinstance(node.op, ast.USub):
                self.flops += math.prod(t.shape) * trips
            return t
        if isinstance(node, ast.Compare):
            shapes = [self.expr(node.left, trips)] + [self.expr(c, trips)
                                                       for c in node.comparators]
            shape = None
            for t in shapes:
                shape = _broadcast(shape, t.shape) if shape is not None else t.shape
            return _Tile(shape)
        if isinstance(node, ast.Call):
            return self.call(node, trips)
        if isinstance(node, (ast.Tuple, ast.List)):
            for e in node.elts:
                self.expr(e, trips)
            return _Tile(None)
        if isinstance(node, ast.Attribute):
            return _Tile(None)
        return _Tile(None)

    def matmul(self, a: _Tile, b: _Tile, acc: _Tile | None, trips: float,
               dtype: DType | None = None) -> _Tile:
        if a.shape and b.shape and len(a.shape) >= 2 and len(b.shape) >= 2:
            m, k = a.shape[-2], a.shape[-1]
            n = b.shape[-1]
            batch = math.prod(a.shape[:-2]) if len(a.shape) > 2 else 1
            self.flops += 2.0 * batch * m * n * k * trips
            if self.mma_dtype is None:
                self.mma_dtype = a.dtype or dtype
            return _Tile(acc.shape if acc and acc.shape else a.shape[:-1] + (n,),
                         acc.dtype if acc else a.dtype)
        self.approx("an mma/matmul whose tile shapes are unknown (no flops counted)")
        return _Tile(acc.shape if acc else None, acc.dtype if acc else None)

    def load(self, arg_node, shape: tuple[int, ...] | None, trips: float) -> _Tile:
        arg = arg_node.id if isinstance(arg_node, ast.Name) else None
        info = self.infos.get(arg) if arg else None
        dtype = info.dtype if info else None
        if shape is None:
            self.approx("a load whose tile shape is unknown")
            return _Tile(None, dtype)
        if dtype is None:
            self.approx(f"the dtype of `{arg}` is unknown")
        else:
            self.add_read(arg, math.prod(shape) * dtype.itemsize * trips)
        return _Tile(shape, dtype)

    def store(self, arg: str | None, tile: _Tile, shape: tuple[int, ...] | None,
              trips: float) -> None:
        info = self.infos.get(arg) if arg else None
        dtype = info.dtype if info else tile.dtype
        shape = shape or tile.shape
        if shape is None or dtype is None:
            self.approx("a store whose tile shape or dtype is unknown")
            return
        self.add_write(arg, math.prod(shape) * dtype.itemsize * trips)

    def kw(self, node: ast.Call, name: str, pos: int | None = None):
        for k in node.keywords:
            if k.arg == name:
                return k.value
        if pos is not None and len(node.args) > pos:
            return node.args[pos]
        return None

    def call(self, node: ast.Call, trips: float) -> _Tile:
        f = node.func
        # z.store(t) / z.load() on the kernel's own tile; t.astype(...) / t.reshape(...)
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
                and f.value.id in self.outputs and f.attr in ("store", "load"):
            shape = self.tile_shape_of(f.value.id)
            if f.attr == "store":
                t = self.expr(node.args[0], trips) if node.args else _Tile(None)
                self.store(f.value.id, t, shape, trips)
                return _Tile(None)
            return self.load(f.value, shape, trips)
        name = _call_name(node)
        is_method = isinstance(f, ast.Attribute) and not (
            isinstance(f.value, ast.Name) and f.value.id in ("ct", "cl"))
        if is_method and name in SHAPE_ONLY | REDUCTIONS | {"astype"}:
            base = self.expr(f.value, trips)
            return self.shape_op(name, base, node, trips, method=True)
        if name == "load_tile_like" and len(node.args) >= 2:
            other = node.args[1]
            shape = self.tile_shape_of(other.id) if isinstance(other, ast.Name) else None
            if shape is None and isinstance(other, ast.Name) and other.id in self.env:
                shape = self.env[other.id].shape
            return self.load(node.args[0], shape, trips)
        if name in ("load_tile", "load") and node.args:
            shape_node = self.kw(node, "shape", 2)
            try:
                shape = self.shape_of(shape_node) if shape_node is not None else None
            except _Unknown:
                shape = None
            return self.load(node.args[0], shape, trips)
        if name == "store" and node.args:
            tile_node = self.kw(node, "tile", 2)
            t = self.expr(tile_node, trips) if tile_node is not None else _Tile(None)
            arg = node.args[0].id if isinstance(node.args[0], ast.Name) else None
            self.store(arg, t, None, trips)
            return _Tile(None)
        if name in ("mma", "matmul") and len(node.args) >= 2:
            a = self.expr(node.args[0], trips)
            b = self.expr(node.args[1], trips)
            acc = self.expr(node.args[2], trips) if len(node.args) > 2 else None
            return self.matmul(a, b, acc, trips)
        if name in ("full", "zeros", "ones"):
            shape_node = self.kw(node, "shape", 0)
            dt_node = self.kw(node, "dtype", 2 if name == "full" else 1)
            dtype = dtype_by_name(_dotted_tail(dt_node)) if dt_node is not None else None
            try:
                return _Tile(self.shape_of(shape_node), dtype) if shape_node is not None \
                    else _Tile(None)
            except _Unknown:
                return _Tile(None, dtype)
        if name == "arange" and node.args:
            try:
                return _Tile((self.int_of(node.args[0]),))
            except _Unknown:
                return _Tile(None)
        if name in ELEMENTWISE_OPS:
            tiles = [self.expr(a, trips) for a in node.args]
            shape = None
            for t in tiles:
                shape = t.shape if shape is None else _broadcast(shape, t.shape)
            if shape:
                self.flops += math.prod(shape) * trips
            return _Tile(shape, next((t.dtype for t in tiles if t.dtype), None))
        if name in REDUCTIONS | SHAPE_ONLY and node.args:
            base = self.expr(node.args[0], trips)
            return self.shape_op(name, base, node, trips, method=False)
        for a in node.args:
            self.expr(a, trips)
        return _Tile(None)

    def shape_op(self, name: str, base: _Tile, node: ast.Call, trips: float, *,
                 method: bool) -> _Tile:
        rest = node.args if method else node.args[1:]
        if name in REDUCTIONS:
            if base.shape:
                self.flops += math.prod(base.shape) * trips
            axis_node = self.kw(node, "axis") or (rest[0] if rest else None)
            if base.shape is None or axis_node is None:
                return _Tile(() if axis_node is None and base.shape is not None else None,
                             base.dtype)
            try:
                axis = self.int_of(axis_node) % len(base.shape)
            except (_Unknown, ZeroDivisionError):
                return _Tile(None, base.dtype)
            keep = any(k.arg == "keepdims" and isinstance(k.value, ast.Constant) and
                       k.value.value for k in node.keywords)
            shape = tuple(1 if i == axis else s for i, s in enumerate(base.shape)) if keep \
                else tuple(s for i, s in enumerate(base.shape) if i != axis)
            return _Tile(shape, base.dtype)
        if name in ("astype", "bitcast"):
            dt_node = rest[0] if rest else self.kw(node, "dtype")
            return _Tile(base.shape, dtype_by_name(_dotted_tail(dt_node)) or base.dtype)
        if name in ("reshape", "broadcast_to"):
            shape_node = rest[0] if rest else self.kw(node, "shape")
            try:
                return _Tile(self.shape_of(shape_node), base.dtype)
            except (_Unknown, TypeError):
                return _Tile(None, base.dtype)
        if name in ("transpose", "permute") and base.shape:
            if name == "permute" and rest:
                try:
                    order = self.shape_of(rest[0])
                    return _Tile(tuple(base.shape[i] for i in order), base.dtype)
                except (_Unknown, IndexError):
                    return _Tile(None, base.dtype)
            return _Tile(tuple(reversed(base.shape)), base.dtype)
        return _Tile(None, base.dtype)


def _call_name(node: ast.Call) -> str | None:
    f = node.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return None


def _dotted_tail(node) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return ""


def _broadcast(a, b):
    """NumPy broadcasting of two tile shapes; an unknown side yields the known tile shape."""
    if a is None:
        return b if b else None
    if b is None:
        return a if a else None
    if len(a) < len(b):
        a, b = b, a
    b = (1,) * (len(a) - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None
    return tuple(out)
