"""Rules for plain cuTile Python kernels (``@ct.kernel``, explicit ``ct.load``/``ct.store``).

Their signatures say nothing about ownership, so the checker reports what it can prove from the
body: a ``ct.store`` indexed by the block's own id (``(ct.bid(0),)``, ``(ct.bid(0), ct.bid(1))``,
or names assigned straight from ``ct.bid(i)``) writes a tile no other block writes, so it is
race-free; any other store may race (a warning naming its index). Atomic updates are race-free
but unordered (a note); arrays both read and written get a note.
"""
from __future__ import annotations

import ast
from typing import Callable, Iterable, Iterator

from cutile_lab.checking.context import RAW_READS, RAW_WRITES, KernelContext, short
from cutile_lab.errors import Diagnostic

Rule = Callable[[KernelContext], Iterable[Diagnostic]]
CUTILE_RULES: list[Rule] = []


def rule(fn: Rule) -> Rule:
    CUTILE_RULES.append(fn)
    return fn


def _ct_call(ctx: KernelContext, call: ast.Call) -> str | None:
    f = call.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
            and f.value.id in ("ct", "cuda_tile") and f.value.id not in ctx.locals:
        return f.attr
    if isinstance(f, ast.Name) and f.id not in ctx.locals and f.id not in ctx.params \
            and f.id in RAW_WRITES | RAW_READS | {"bid"} and f.id in ctx.module_names:
        return f.id          # from cuda.tile import store, bid
    return None


def _array_arg(call: ast.Call) -> ast.AST | None:
    if call.args:
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg == "array"), None)


def _index_arg(call: ast.Call) -> ast.AST | None:
    if len(call.args) > 1:
        return call.args[1]
    return next((k.value for k in call.keywords if k.arg in ("index", "indices")), None)


def _bid_axis(ctx: KernelContext, node: ast.AST) -> int | None:
    if isinstance(node, ast.Call) and _ct_call(ctx, node) == "bid" and len(node.args) == 1 \
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, int):
        return node.args[0].value
    return None


def _bid_names(ctx: KernelContext) -> dict[str, int]:
    """Names assigned exactly once, straight from ``ct.bid(i)``."""
    assigned: dict[str, list] = {}
    for n in ctx.body_nodes:
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            assigned.setdefault(n.id, []).append(n)
    out: dict[str, int] = {}
    for n in ctx.body_nodes:
        if not isinstance(n, ast.Assign) or len(n.targets) != 1:
            continue
        t, v = n.targets[0], n.value
        pairs = []
        if isinstance(t, ast.Name):
            pairs = [(t, v)]
        elif isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple) and \
                len(t.elts) == len(v.elts):
            pairs = list(zip(t.elts, v.elts))
        for name, value in pairs:
            axis = _bid_axis(ctx, value)
            if isinstance(name, ast.Name) and axis is not None \
                    and len(assigned.get(name.id, [])) == 1:
                out[name.id] = axis
    return out


def _grid_axes_used(ctx: KernelContext) -> set[int]:
    axes = set()
    for call in ctx.calls():
        a = _bid_axis(ctx, call)
        if a is not None:
            axes.add(a)
        elif _ct_call(ctx, call) in ("bid", "num_blocks") and call.args:
            axes.add(-1)   # an axis the checker cannot read: assume any
    return axes


def own_index(ctx: KernelContext, index: ast.AST | None, names: dict[str, int]) -> bool:
    """Whether ``index`` is the block's own id: distinct ``bid`` axes covering every grid axis
    the kernel uses, so that distinct blocks always get distinct tiles."""
    if index is None:
        return False
    items = index.elts if isinstance(index, ast.Tuple) else [index]
    axes = []
    for it in items:
        a = _bid_axis(ctx, it)
        if a is None and isinstance(it, ast.Name):
            a = names.get(it.id)
        if a is None:
            return False
        axes.append(a)
    if len(set(axes)) != len(axes):
        return False
    used = _grid_axes_used(ctx)
    return -1 not in used and used <= set(axes)


@rule
def possible_races(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL060: stores not indexed by the block's own id; TL061: atomics; TL062: read+written."""
    names = _bid_names(ctx)
    written: dict[str, ast.AST] = {}
    read: dict[str, ast.AST] = {}
    atomics: dict[str, ast.Call] = {}
    for call in ctx.calls():
        op = _ct_call(ctx, call)
        if op is None:
            continue
        arr = _array_arg(call)
        arr_name = arr.id if isinstance(arr, ast.Name) else None
        if op in RAW_READS and arr_name:
            read.setdefault(arr_name, call)
        if op not in RAW_WRITES:
            continue
        if arr_name:
            written.setdefault(arr_name, call)
        if op.startswith("atomic_"):
            if arr_name and arr_name not in atomics:
                atomics[arr_name] = call
            continue
        index = _index_arg(call)
        if op == "store" and own_index(ctx, index, names):
            continue
        what = f"`{arr_name}`" if arr_name else "the array"
        if op == "store":
            idx = short(index) if index is not None else "?"
            yield ctx.diag(
                "TL060", f"possible data race: blocks may store to the same tile of {what} "
                         f"(index `{idx}` is not the block's own id)",
                index if index is not None else call,
                help="index the store by the block's own id, e.g. `index=(ct.bid(0),)` or "
                     "`(ct.bid(0), ct.bid(1))`, or write the kernel in the tile language with "
                     "a `Mut` output; if every block really writes a different tile, this "
                     "warning can be ignored",
                notes=["the checker proves a store race-free only when its index is the block's "
                       "own id (one distinct `ct.bid(axis)` per grid axis)"])
        else:
            yield ctx.diag(
                "TL060", f"possible data race: `{short(call.func)}` writes elements of {what} "
                         "that other blocks may also write", call,
                help="make sure the indices of different blocks never overlap, or use "
                     "atomic updates",
                notes=["scattered writes cannot be proven race-free by the checker"])
    for name, call in atomics.items():
        yield ctx.diag(
            "TL061", f"atomic updates to `{name}` are race-free, but blocks apply them in no "
                     "fixed order", call,
            notes=["floating-point sums may differ from run to run in the last bits"])
    for name, call in written.items():
        if name in read:
            yield ctx.diag(
                "TL062", f"`{name}` is both read and written by this kernel", call,
                labels=[ctx.label(read[name], f"`{name}` is read here")],
                notes=["a block that reads tiles other blocks write may see old or new values; "
                       "reading only the block's own tile is safe"])
