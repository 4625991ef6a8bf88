"""Flop and byte counts of kernels, for rooflines and bandwidth figures.

Owns: ``FlopByteCount``, the closed-form counting rules for the kernel shapes the lab measures
(element-wise, GEMM, row-wise reductions: what benchmarks state by hand), and ``count_launch``,
the work of one launch of a tile kernel read off the checker's *typed kernel*
(``checking.typecheck``), never a second interpreter: the typing pass gives every load, store
and operation its symbolic shape and dtype; this module substitutes the launch's const generics
and argument shapes and adds what only the launch knows (loop trip counts, branches on
constants, the grid).

The rules of ``count_launch``, per tile: every tile load/store moves ``prod(tile shape) x
itemsize`` bytes; ``mma``/``matmul``/``@`` of ``(M, K) x (K, N)`` tiles is ``2·M·N·K`` flops;
element-wise arithmetic and math ops one flop per element of their result, reductions one per
input element; helper functions count through their bodies; loops multiply by their trip count
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

from cutile_lab.checking.tiletypes import TensorV, TileV
from cutile_lab.language.dtypes import DType, dtype_by_name, dtype_of_numpy


@dataclass(frozen=True)
class FlopByteCount:
    flops: float
    bytes_read: float
    bytes_written: float

    @property
    def bytes(self) -> float:
        """Bytes moved to and from memory in all."""
        return self.bytes_read + self.bytes_written

    @property
    def intensity(self) -> float:
        """Arithmetic intensity in flop/byte (inf when no bytes move)."""
        return self.flops / self.bytes if self.bytes else math.inf

    def __add__(self, other: "FlopByteCount") -> "FlopByteCount":
        if not isinstance(other, FlopByteCount):
            return NotImplemented
        return FlopByteCount(self.flops + other.flops, self.bytes_read + other.bytes_read,
                             self.bytes_written + other.bytes_written)

    def __mul__(self, times: int | float) -> "FlopByteCount":
        """The count of running the same work ``times`` times."""
        if not isinstance(times, (int, float)):
            return NotImplemented
        return FlopByteCount(self.flops * times, self.bytes_read * times,
                             self.bytes_written * times)

    __rmul__ = __mul__


ZERO = FlopByteCount(0, 0, 0)


def count_elementwise(n: int, dtype_bytes: int, n_inputs: int, n_outputs: int = 1,
                      flops_per_elem: float = 1) -> FlopByteCount:
    """``n`` elements: each input read once, each output written once, ``flops_per_elem`` each.

    ``z = x + y`` on f32 is ``count_elementwise(n, 4, n_inputs=2)``; a copy has
    ``flops_per_elem=0``.
    """
    return FlopByteCount(flops=n * flops_per_elem,
                         bytes_read=n * dtype_bytes * n_inputs,
                         bytes_written=n * dtype_bytes * n_outputs)


def count_gemm(M: int, N: int, K: int, in_bytes: int, out_bytes: int, *,
               reads_c: bool = False) -> FlopByteCount:
    """``C[M,N] = A[M,K] @ B[K,N]``: 2·M·N·K flops, A and B read once, C written once.

    ``reads_c=True`` counts reading C as well (``C = alpha·A@B + beta·C`` with beta ≠ 0),
    plus the 2·M·N flops of the scaling and addition.
    """
    flops = 2 * M * N * K + (2 * M * N if reads_c else 0)
    read = (M * K + K * N) * in_bytes + (M * N * out_bytes if reads_c else 0)
    return FlopByteCount(flops=flops, bytes_read=read, bytes_written=M * N * out_bytes)


def count_rowwise(rows: int, cols: int, dtype_bytes: int, flops_per_elem: float, *,
                  n_inputs: int = 1, n_outputs: int = 1,
                  param_bytes: int = 0) -> FlopByteCount:
    """A row-wise fused kernel (softmax, layernorm, rmsnorm) over a ``rows × cols`` tensor.

    ``n_inputs`` / ``n_outputs`` full-size tensors are read / written once; ``param_bytes``
    adds per-column parameters read once (a layernorm's weight and bias:
    ``2 * cols * dtype_bytes``). ``flops_per_elem`` is the algorithm's count, e.g. about 5 for a
    softmax (max, subtract, exp, sum, divide).
    """
    n = rows * cols
    return FlopByteCount(flops=n * flops_per_elem,
                         bytes_read=n * dtype_bytes * n_inputs + param_bytes,
                         bytes_written=n * dtype_bytes * n_outputs)


# --- the work of one launch, from the checker's typed kernel ---------------------------------

ELEMENTWISE_OPS = frozenset({
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "maximum", "minimum", "negative",
    "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh", "cosh",
    "tanh", "atan2", "floor", "ceil", "where"})
REDUCTIONS = frozenset({"sum", "max", "min", "prod", "argmax", "argmin", "cumsum", "cumprod"})
LOADS = frozenset({"load_tile_like", "load_tile", "load"})
_AUG_FLOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div)


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


class _Unknown(Exception):
    """A launch-time integer (trip count, grid extent, branch) this count cannot evaluate."""


def arg_info(value) -> ArgInfo | None:
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
        dtype = dtype_by_name(str(getattr(dt, "name", dt))) or dtype_of_numpy(dt)
    return ArgInfo(shape, dtype)


def count_launch(kdef, args: Mapping[str, Any], consts: Mapping[str, int] | None = None,
                 grid: tuple[int, ...] | None = None, globals_: Mapping | None = None
                 ) -> WorkCount:
    """The work of launching ``kdef`` over ``args`` (param name -> tensor / partition /
    ``ArgInfo``) with const generics ``consts`` (missing ones are bound from the partitions'
    tile shapes where the argument is a partition exposing ``tile_shape``).

    The shapes and dtypes of every load, store and operation are the checker's typing pass's
    (``checking.typecheck``: symbolic shapes over the const generics, substituted here with the
    launch's values); this adds only what the launch knows: trip counts, branches on constants
    and the grid. ``globals_`` is the namespace the kernel was defined in (its helpers)."""
    from cutile_lab.checking.context import KernelContext
    infos: dict[str, ArgInfo] = {}
    consts = dict(consts or {})
    for p in kdef.params:
        if p.name not in args:
            continue
        v = args[p.name]
        info = arg_info(v)
        if info is not None:
            if info.dtype is None and p.dtype is not None:
                info = ArgInfo(info.shape, p.dtype)
            infos[p.name] = info
        tile = getattr(v, "tile_shape", None) if p.role == "mut" else None
        for d, t in zip(p.shape, tuple(tile) if tile is not None else ()):
            if isinstance(d, str):
                consts.setdefault(d, int(t))
        if p.role in ("scalar", "const") and isinstance(v, (int, float)) and \
                not isinstance(v, bool):
            consts.setdefault(p.name, v)
    for g in kdef.const_generics:
        p = kdef.param(g)
        if g not in consts and p is not None and p.default is not None:
            consts[g] = p.default
    typing = KernelContext(kdef, globals_).types
    return _Counter(kdef, typing, infos, consts, grid).run()


class _Counter:
    """One walk over the kernel's statements (and the helpers it calls), reading each node's
    type from the typing pass; loops multiply by their trip count."""

    def __init__(self, kdef, typing, infos: dict[str, ArgInfo], consts: dict, grid):
        self.kdef, self.typing, self.infos, self.grid = kdef, typing, infos, grid
        self.ints: dict[str, int] = {k: v for k, v in consts.items()
                                     if isinstance(v, int) and not isinstance(v, bool)}
        self.flops = 0.0
        self.read: dict[str, float] = {}
        self.written: dict[str, float] = {}
        self.exact = True
        self.reasons: list[str] = []
        self.mma_dtype: DType | None = None

    def approx(self, why: str) -> None:
        self.exact = False
        if why not in self.reasons:
            self.reasons.append(why)

    # -- shapes and launch-time integers ---------------------------------------------------
    def dim(self, d) -> int | None:
        """A typed dim (int, const-generic name or polynomial over them) at this launch."""
        if isinstance(d, bool) or d is None:
            return None
        if isinstance(d, int):
            return d
        if isinstance(d, str):
            return self.ints.get(d)
        terms = getattr(d, "terms", None)          # tiletypes.Sym
        if terms is None:
            return None
        total = 0
        for mono, coeff in terms:
            vals = [self.ints.get(n) for n in mono]
            if any(v is None for v in vals):
                return None
            total += coeff * math.prod(vals)
        return total

    def shape(self, v) -> tuple[int, ...] | None:
        shape = getattr(v, "shape", None) if isinstance(v, TileV) else None
        if shape is None:
            return None
        dims = tuple(self.dim(d) for d in shape)
        return None if any(d is None for d in dims) else dims

    def tile_of(self, p) -> tuple[int, ...] | None:
        """The shape of a ``Mut`` parameter's own tile at this launch."""
        dims = tuple(self.dim(d) for d in p.shape)
        return None if any(d is None for d in dims) else dims

    def int_of(self, node, path: tuple) -> int:
        v = self.typing.of(node, path)
        if isinstance(v, TileV) and v.shape == () and v.const is not None:
            d = self.dim(v.const)
            if d is not None:
                return d
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name) and node.id in self.ints:
            return self.ints[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.int_of(node.operand, path)
        if isinstance(node, ast.BinOp) and type(node.op) in _INT_OPS:
            return _INT_OPS[type(node.op)](self.int_of(node.left, path),
                                           self.int_of(node.right, path))
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
                and node.value.attr == "shape" and isinstance(node.value.value, ast.Name) \
                and node.value.value.id in self.infos:
            return self.infos[node.value.value.id].shape[self.int_of(node.slice, path)]
        if isinstance(node, ast.Call):
            return self.int_call(node, path)
        raise _Unknown(ast.unparse(node))

    def int_call(self, node: ast.Call, path: tuple) -> int:
        info = self.typing.call(node, path)
        name = info.name if info is not None else None
        a = node.args
        if name == "cdiv" and len(a) == 2:
            return -(-self.int_of(a[0], path) // self.int_of(a[1], path))
        if name in ("min", "max") and a:
            vals = [self.int_of(x, path) for x in a]
            return min(vals) if name == "min" else max(vals)
        if name in ("num_tiles", "num_blocks") and len(a) == 1:
            return self.grid_dims()[self.int_of(a[0], path)]
        if name == "num_tiles" and len(a) >= 3 and isinstance(a[0], ast.Name) and \
                a[0].id in self.infos:
            axis = self.int_of(a[1], path)
            tile = self.typing.of(a[2], path)
            extent = self.dim(tile.items[axis].const) if hasattr(tile, "items") else None
            if extent is None:
                raise _Unknown("num_tiles")
            return -(-self.infos[a[0].id].shape[axis] // extent)
        raise _Unknown(ast.unparse(node))

    def grid_dims(self) -> tuple[int, ...]:
        if self.grid:
            return tuple(self.grid)
        for p in self.kdef.outputs:
            info, tile = self.infos.get(p.name), self.tile_of(p)
            if info is not None and tile is not None and len(tile) == len(info.shape):
                return tuple(-(-s // t) for s, t in zip(info.shape, tile))
        raise _Unknown("grid")

    # -- the walk ----------------------------------------------------------------------------
    def run(self) -> WorkCount:
        if self.kdef.kind == "cutile":
            self.approx("a plain cuTile kernel: counted from ct.load/ct.store shapes")
        try:
            tiles = math.prod(self.grid_dims())
        except (_Unknown, IndexError):
            tiles = 1
            self.approx("the grid is unknown (no partitioned output): counted one tile")
        self.block(self.kdef.node.body, 1.0, ())
        tile_bytes = (sum(self.read.values()) + sum(self.written.values())) * tiles
        return WorkCount(self.flops * tiles, self.compulsory(self.read, tiles),
                         self.compulsory(self.written, tiles), tile_bytes, tiles,
                         self.precision(), self.exact, self.reasons)

    def compulsory(self, per_arg: dict[str, float], tiles: int) -> float:
        """Per argument, the tile traffic of all tiles, at most the argument's size."""
        total = 0.0
        for arg, b in per_arg.items():
            info = self.infos.get(arg)
            total += min(b * tiles, info.nbytes) if info is not None else b * tiles
        return total

    def precision(self) -> str:
        dt = self.mma_dtype
        if dt is None:
            dt = next((p.dtype for p in self.kdef.outputs if p.dtype is not None), None)
        if dt is None:
            dt = next((i.dtype for i in self.infos.values() if i.dtype is not None), None)
        name = dt.name if dt is not None else "f32"
        return {"f8e4m3": "fp8", "f8e5m2": "fp8"}.get(
            name, name if name in ("f64", "f32", "tf32", "f16", "bf16") else "f32")

    def block(self, stmts, trips: float, path: tuple) -> None:
        for s in stmts:
            self.stmt(s, trips, path)

    def stmt(self, s, trips: float, path: tuple) -> None:
        if isinstance(s, (ast.For, ast.While)):
            if isinstance(s, ast.For):
                n = self.trip_count(s, path)
            else:
                self.approx("a while loop (counted once)")
                n = 1.0
            self.block(s.body, trips * n, path)
            self.block(s.orelse, trips, path)
            return
        if isinstance(s, ast.If):
            try:
                taken = bool(self.int_of(s.test, path))
                self.block(s.body if taken else s.orelse, trips, path)
            except _Unknown:
                self.approx("a branch on a runtime value (both sides counted)")
                self.block(s.body, trips, path)
                self.block(s.orelse, trips, path)
            return
        if isinstance(s, ast.With):
            self.block(s.body, trips, path)
            return
        for child in ast.iter_child_nodes(s):
            if isinstance(child, ast.expr):
                self.expr(child, trips, path)
        if isinstance(s, ast.AugAssign) and isinstance(s.op, _AUG_FLOPS):
            self.elementwise(self.typing.of(s.target, path), trips)

    def trip_count(self, s: ast.For, path: tuple) -> float:
        it = s.iter
        info = self.typing.call(it, path) if isinstance(it, ast.Call) else None
        if info is not None and info.name in ("range", "static_iter") and it.args:
            try:
                return float(len(range(*[self.int_of(a, path) for a in it.args])))
            except (_Unknown, ValueError, TypeError, IndexError):
                pass
        self.approx(f"the trip count of `for` at line {s.lineno} (counted once)")
        return 1.0

    def expr(self, node, trips: float, path: tuple) -> None:
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                             ast.GeneratorExp)):
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child, trips, path)
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.MatMult):
                self.matmul(self.typing.of(node.left, path), self.typing.of(node.right, path),
                            trips)
            else:
                self.elementwise(self.typing.of(node, path), trips)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            self.elementwise(self.typing.of(node, path), trips)
        elif isinstance(node, ast.Call):
            self.call(node, trips, path)

    def elementwise(self, v, trips: float) -> None:
        """One flop per element of a tile result (scalars are index arithmetic: none)."""
        shape = self.shape(v)
        if shape:
            self.flops += math.prod(shape) * trips
        elif isinstance(v, TileV) and shape is None:
            self.approx("an operation on a tile whose shape is unknown (no flops counted)")

    def matmul(self, a, b, trips: float) -> None:
        sa, sb = self.shape(a), self.shape(b)
        if sa is None or sb is None or len(sa) < 2 or len(sb) < 2:
            self.approx("an mma/matmul whose tile shapes are unknown (no flops counted)")
            return
        m, k, n = sa[-2], sa[-1], sb[-1]
        self.flops += 2.0 * math.prod(sa[:-2]) * m * n * k * trips
        if self.mma_dtype is None:
            self.mma_dtype = a.dtype

    def call(self, node: ast.Call, trips: float, path: tuple) -> None:
        info = self.typing.call(node, path)
        if info is None:
            return
        recv = info.recv
        if info.kind == "method" and isinstance(recv, TensorV):
            p = recv.param
            if p.role == "mut" and info.name in ("store", "load"):
                shape = self.tile_of(p)
                tile = info.arg(0, "tile") if info.name == "store" else None
                self.move(self.written if info.name == "store" else self.read, p.name, shape,
                          getattr(tile, "dtype", None) or p.dtype, trips)
        elif info.kind == "method" and isinstance(recv, TileV) and info.name in REDUCTIONS:
            self.elementwise(recv, trips)
        elif info.kind == "lang":
            self.language_call(info, node, trips, path)
        elif info.kind == "helper" and info.callee is not None and \
                info.callee.node is not None and info.problem is None:
            self.block(info.callee.node.body, trips, path + (id(node),))

    def language_call(self, info, node: ast.Call, trips: float, path: tuple) -> None:
        name = info.name
        if name in LOADS:
            arr = info.arg(0, "x", "array")
            out = self.typing.of(node, path)
            self.move(self.read, arr.param.name if isinstance(arr, TensorV) else None,
                      self.shape(out), getattr(out, "dtype", None), trips)
        elif name == "store":
            arr, tile = info.arg(0, "array"), info.arg(2, "tile")
            self.move(self.written, arr.param.name if isinstance(arr, TensorV) else None,
                      self.shape(tile), getattr(tile, "dtype", None), trips)
        elif name in ("mma", "matmul") and len(info.args) >= 2:
            self.matmul(info.args[0], info.args[1], trips)
        elif name in ELEMENTWISE_OPS:
            self.elementwise(self.typing.of(node, path), trips)
        elif name in REDUCTIONS:
            self.elementwise(info.arg(0, "x"), trips)

    def move(self, into: dict[str, float], arg: str | None, shape, dtype, trips: float) -> None:
        """Bytes of one tile load or store of ``arg``: its shape times the argument's itemsize
        (the launch's dtype, else the typed one)."""
        info = self.infos.get(arg) if arg else None
        dtype = (info.dtype if info is not None else None) or dtype
        if shape is None:
            self.approx("a load or store whose tile shape is unknown")
            return
        if dtype is None:
            self.approx(f"the dtype of `{arg}` is unknown")
            return
        key = arg or "?"
        into[key] = into.get(key, 0.0) + math.prod(shape) * dtype.itemsize * trips


_INT_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
            ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,
            ast.Mod: lambda a, b: a % b, ast.Pow: lambda a, b: a ** b}
