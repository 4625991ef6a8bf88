"""The values the typing pass gives beyond tiles (bound methods, modules, functions, helpers, raw
memory, constant annotations) and the facts it records for the other passes: every call's
meaning (``CallInfo``) and every use of a name after its own tile moved out of it (``Use``).

The tile values themselves (``TileV``, ``TensorV``, shapes, joins) live in ``tiletypes``; the pass
that computes these values is ``typecheck``.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from cutile_lab.checking.tiletypes import RangeV, TensorV, TileV, Val, loose_const
from cutile_lab.language import surface
from cutile_lab.language.dtypes import i32

RAW_OFFSET_WRITES = frozenset({"store_offset", "atomic_cas_offset", "atomic_xchg_offset",
                               "atomic_add_offset", "atomic_max_offset", "atomic_min_offset",
                               "atomic_and_offset", "atomic_or_offset", "atomic_xor_offset"})
RAW_OFFSET_READS = frozenset({"load_offset"})
CT_RAW = frozenset(surface.RAW_MEMORY | {"store_advanced_indexing", "load_advanced_indexing"})

# --- values beyond tiles --------------------------------------------------------------------

@dataclass(frozen=True)
class BoundV:
    """``obj.name`` not yet called: a bound method carries its receiver's ownership."""
    recv: Any
    name: str


@dataclass(frozen=True)
class ModuleV:
    name: str           # "cuda.tile", "cutile_lab", "numpy", ...


@dataclass(frozen=True)
class FuncV:
    space: str          # "lang" (a bare language / cuTile name), "ct" (an attribute of cuda.tile)
    name: str


@dataclass(frozen=True, eq=False)
class HelperV:
    """A function defined outside the kernel (module level, an earlier cell, ``@ct.function``)."""
    name: str
    node: ast.FunctionDef | None       # None: its source cannot be read
    filename: str = ""
    line_offset: int = 0
    problem: str | None = None         # why it cannot be followed, where ``node`` is None


@dataclass(frozen=True)
class RawMemV:
    """``x.get_raw_memory()``: loads and stores at element offsets of ``array``."""
    array: Any


@dataclass(frozen=True)
class ConstAnnV:
    """An annotation object that marks a compile-time constant (``ct.Constant[int]``)."""


@dataclass
class CallInfo:
    node: ast.Call
    kind: str                   # "lang", "method", "helper", "unknown"
    name: str
    space: str = ""             # for "lang": "lang" (bare) or "ct"
    recv: Any = None            # for "method": the receiver's value
    args: tuple = ()
    kw: dict = field(default_factory=dict)
    helper: HelperV | None = None      # the helper whose body holds this call (None: the kernel)
    anchor: ast.AST | None = None      # the kernel-level call this happens under
    path: tuple = ()
    in_unsafe: bool = False
    callee: HelperV | None = None      # for "helper": the function called
    problem: str | None = None         # for "helper": why it cannot be followed

    @property
    def raw_op(self) -> str | None:
        """The raw memory operation this call performs, if any."""
        if self.kind == "lang":
            if self.space == "lang" and self.name in surface.RAW_MEMORY:
                return self.name
            if self.space == "ct" and self.name in CT_RAW:
                return self.name
        if self.kind == "method" and self.name == "get_raw_memory" and \
                isinstance(self.recv, TensorV):
            return "get_raw_memory"
        if self.kind == "method" and isinstance(self.recv, RawMemV) and \
                self.name in RAW_OFFSET_WRITES | RAW_OFFSET_READS:
            return self.name
        return None

    def arg(self, i: int, *names: str):
        if len(self.args) > i:
            return self.args[i]
        for n in names:
            if n in self.kw:
                return self.kw[n]
        return None

    def arg_node(self, i: int, *names: str) -> ast.AST | None:
        if len(self.node.args) > i:
            return self.node.args[i]
        return next((k.value for k in self.node.keywords if k.arg in names), None)


@dataclass
class Use:
    """A use of a name after its own tile was moved out of it."""
    node: ast.Name
    moved_at: ast.AST
    into: str
    helper: HelperV | None
    anchor: ast.AST

def dim_value(d) -> Val:
    if d is None:
        return None
    if isinstance(d, int):
        return loose_const(d)
    return TileV((), i32, True, d)


def value_token(v) -> Any:
    """What identifies a scalar's value, where two of them are provably equal: a constant (its
    value or symbol), or a scalar computed once (the call that made it)."""
    if not isinstance(v, TileV) or v.shape != ():
        return None
    if v.loose and v.const is not None and not isinstance(v.const, bool):
        return ("k", v.const)
    if isinstance(v.origin, tuple) and v.origin[0] in ("v", "num"):
        return v.origin
    return None


def range_value(args: list) -> RangeV:
    """``range(...)``: its loop variable is a scalar; ``range(bid(a), n, num_blocks(a))`` gives
    each block its own disjoint set of values (a persistent loop), which the race analysis of
    plain cuTile kernels counts as the block's own id."""
    item = TileV((), i32)
    if len(args) == 3:
        start, step = args[0], args[2]
        if isinstance(start, TileV) and isinstance(step, TileV) and \
                isinstance(start.origin, tuple) and start.origin[0] == "bid" and \
                step.origin == ("num", start.origin[1]):
            item = TileV((), i32, origin=start.origin)
    return RangeV(item)

