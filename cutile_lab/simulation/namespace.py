"""The NumPy ``ct`` namespace a simulated kernel runs against, in place of ``cuda.tile``.

Owns the mapping from every name the lowered cuTile Python text can reach through ``ct.`` (ops,
dtypes, enums, annotation helpers) to the simulator's implementation, and the per-launch pieces
(``bid``, ``num_blocks``, memory ops, ``printf``/``print``/``assert_``). The ops themselves live in
``tiles`` (compute) and ``memory`` (memory); this module only assembles them.
"""
from __future__ import annotations

import builtins
import re
import types
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import numpy as np

from cutile_lab.simulation import dtypes as D
from cutile_lab.simulation import tiles as T
from cutile_lab.simulation.memory import (MemoryOrder, MemoryScope, PaddingMode, RoundingMode,
                                          SimArray, Slice, TiledView)
from cutile_lab.simulation.memory_ops import MemoryOps
from cutile_lab.simulation.tiles import KernelError, Tile

_COMPUTE_OPS = (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "divmod", "pow", "atan2", "minimum",
    "maximum", "cdiv", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_lshift", "bitwise_rshift",
    "bitwise_not", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh",
    "cosh", "tanh", "floor", "ceil", "abs", "negative", "isnan", "astype", "bitcast",
    "pack_to_bytes", "unpack_from_bytes", "reshape", "broadcast_to", "expand_dims", "permute",
    "transpose", "cat", "extract", "insert", "where", "full", "zeros", "ones", "arange",
    "astile", "sum", "prod", "max", "min", "argmax", "argmin", "cumsum", "cumprod", "reduce",
    "scan", "mma", "matmul",
)
_MEMORY_OPS = (
    "load", "store", "gather", "scatter", "atomic_add", "atomic_max", "atomic_min",
    "atomic_and", "atomic_or", "atomic_xor", "atomic_xchg", "atomic_cas", "num_tiles",
    "load_advanced_indexing", "store_advanced_indexing",
)
_UNSUPPORTED = ("mma_scaled", "launch", "foreign_pointer_dtype")


class ConstantAnnotation:
    def __repr__(self) -> str:
        return "ConstantAnnotation()"


_T = TypeVar("_T")
Constant = Annotated[_T, ConstantAnnotation()]


@dataclass(frozen=True)
class ArrayAnnotation:
    index_dtype: Any = None
    static_shape_dims: tuple = ()
    static_stride_dims: tuple = ()


@dataclass(frozen=True)
class ScalarAnnotation:
    dtype: Any = None


@dataclass(frozen=True)
class ListAnnotation:
    element: Any = None


def _identity_decorator(fn=None, /, **_kwargs):
    if fn is None:
        return lambda f: f
    return fn


def _unsupported(name: str):
    def op(*args, **kwargs):
        raise KernelError(f"`ct.{name}` is not supported by the simulator",
                          help="run this kernel on a GPU")
    op.__name__ = name
    return op


def _static_assert(condition, message=None, /):
    if not condition:
        raise KernelError("static assertion failed" + (f": {message}" if message else ""))


def _static_eval(expr, /):
    return expr


def _assume_divisible_by_factory(launch):
    def assume_divisible_by(x, divisor):
        v = int(x.a) if type(x) is Tile else int(x)
        if v % int(divisor):
            launch.report("SIM021", "error", f"assume_divisible_by({v}, {divisor}) is false",
                          help="the compiler relies on this assumption; on the GPU a false "
                               "one is undefined behaviour")
        return x
    return assume_divisible_by


_FMT = re.compile(r"%[-+ #0]*(\*|\d+)?(?:\.(\*|\d+))?(hh|h|ll|l|L|z|j|t)?([diouxXeEfFgGaAcs%])")


def printf_text(fmt: str, args) -> str:
    """C ``printf`` of scalars and tiles (tiles print as nested lists, elementwise)."""
    out, pos, k = [], 0, 0
    for m in _FMT.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        conv = m.group(4)
        if conv == "%":
            out.append("%")
            continue
        if k >= len(args):
            raise KernelError(f"printf: the format {fmt!r} needs more arguments than given")
        spec = m.group(0)
        if m.group(3):
            spec = spec.replace(m.group(3), "", 1)
        if conv == "u":
            spec = spec[:-1] + "d"
        if conv in "aA":
            spec = None
        out.append(_printf_value(spec, args[k]))
        k += 1
    out.append(fmt[pos:])
    if k != len(args):
        raise KernelError(f"printf: {len(args)} arguments for {k} format specifiers")
    return "".join(out)


def _printf_value(spec, v) -> str:
    a = np.asarray(v.a if type(v) is Tile else v)

    def one(x):
        x = x.item()
        if spec is None:
            return float(x).hex()
        try:
            return spec % x
        except TypeError:
            return spec % (int(x) if spec[-1] in "diouxXc" else float(x))

    def rec(x):
        if x.ndim == 0:
            return one(x)
        return "[" + ", ".join(rec(x[i]) for i in range(x.shape[0])) + "]"
    return rec(a)


def base_names() -> dict[str, Any]:
    """Everything in ``ct`` that does not depend on the launch."""
    ns: dict[str, Any] = {name: getattr(T, name) for name in _COMPUTE_OPS}
    for d in D.ALL:
        ns[d.name] = d
    ns.update(
        DType=D.SimDType, Tile=Tile, Array=SimArray, TiledView=TiledView, Slice=Slice,
        PaddingMode=PaddingMode, MemoryOrder=MemoryOrder, MemoryScope=MemoryScope,
        RoundingMode=RoundingMode, Constant=Constant, ConstantAnnotation=ConstantAnnotation,
        ArrayAnnotation=ArrayAnnotation, ScalarAnnotation=ScalarAnnotation,
        ListAnnotation=ListAnnotation, IndexedWithInt64=Annotated[_T, ArrayAnnotation()],
        ScalarInt64=Annotated[_T, ScalarAnnotation()], Scalar=object, Shape=tuple,
        kernel=_identity_decorator, function=_identity_decorator,
        static_assert=_static_assert, static_eval=_static_eval, static_iter=_static_eval,
        ensure_constant=_static_eval, static_exception=_static_eval,
        grid_dependency_control_wait=lambda: None,
        grid_dependency_control_launch_dependents=lambda: None,
        TileError=KernelError,
    )
    for name in _UNSUPPORTED:
        ns[name] = _unsupported(name)
    return ns


_BASE = base_names()


def make_namespace(launch) -> types.SimpleNamespace:
    """The ``ct`` of one launch."""
    mem = MemoryOps(launch)
    launch.memory = mem
    ns = dict(_BASE)
    for name in _MEMORY_OPS:
        ns[name] = getattr(mem, name)
    ns.update(bid=launch.bid, num_blocks=launch.num_blocks, printf=launch.printf,
              print=launch.print, assert_=launch.assert_,
              assume_divisible_by=_assume_divisible_by_factory(launch))
    return types.SimpleNamespace(**ns)


def _tile_aware(builtin, elementwise):
    def f(*args, **kwargs):
        if len(args) >= 2 and not kwargs and any(type(a) is Tile for a in args):
            r = args[0]
            for a in args[1:]:
                r = elementwise(r, a)
            return r
        return builtin(*args, **kwargs)
    f.__name__ = builtin.__name__
    return f


def kernel_builtins(launch) -> dict[str, Any]:
    """Python builtins as cuTile kernels see them: ``max(a, b)``/``min(a, b)`` of tiles are
    elementwise, ``print`` prints from each tile."""
    return {"max": _tile_aware(builtins.max, T.maximum),
            "min": _tile_aware(builtins.min, T.minimum),
            "print": launch.print}


__all__ = ["make_namespace", "kernel_builtins", "printf_text", "base_names"]
