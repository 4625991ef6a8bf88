"""The plain-cuTile index analysis: race freedom of ``@ct.kernel`` kernels, by value.

Their signatures say nothing about ownership, so the pass proves what it can from the values the
typing pass gives the indices of ``ct.store`` (in the kernel and in the helpers it calls):

* a store whose index holds the block's own id on every grid axis the kernel uses is race-free:
  ``ct.bid(i)`` written in place, a name or a tuple that holds it (``row = ct.bid(0)``,
  ``idx = (ct.bid(0),)``), the variable of a persistent loop
  ``for i in range(ct.bid(0), n, ct.num_blocks(0))``, or the pair ``(bid // n, bid % n)`` of
  one id split by one ``n`` (TileGym's 2-D tile from a 1-D grid); the other entries may be
  anything (a constant on an axis whose tile spans the whole extent, as in a row softmax, a
  loop counter): two blocks differ in an own-id entry, so their tiles differ. Every store into the same array
  must put the own ids at the same places, with tiles of one proven shape, or the tiles of
  different stores could meet;
* anything else that writes is flagged (TL060): a store not indexed that way, ``ct.scatter``,
  offset stores through ``get_raw_memory()``; atomic updates are race-free but unordered (TL061);
  an array both read and written gets a note (TL062), and where its stores are proven, a read of
  it at a tile that is not the block's own (the index and shape of its stores) is flagged too
  (TL060): another block may be writing that tile;
* a store into an array the checker cannot tie to one parameter (``a = z if c else x``) is
  never proven (TL060);
* the proof holds for a grid with one block along every axis the kernel does not read; which
  axes those are is ``grid_axes_told_apart``, checked against each launch's grid (TL121);
* a helper whose body the checker cannot follow, and a call whose callee it cannot tell
  (``getattr(ct, "store")``, ``ct.__dict__["store"]``, a method of a class or of another
  module), is reported as unchecked (TL063), never passed over in silence.
"""
from __future__ import annotations

import ast
from typing import Callable, Iterable, Iterator

from cutile_lab.checking.context import (RAW_READS, RAW_WRITES, KernelContext,
                                         outermost_calls, short)
from cutile_lab.checking.tiletypes import TensorV, TileV, TupleV, int_of
from cutile_lab.checking.typecheck_values import CallInfo, RawMemV
from cutile_lab.diagnostics import Diagnostic

Rule = Callable[[KernelContext], Iterable[Diagnostic]]
CUTILE_RULES: list[Rule] = []


def rule(fn: Rule) -> Rule:
    CUTILE_RULES.append(fn)
    return fn


def _array(info: CallInfo):
    if isinstance(info.recv, RawMemV):
        return info.recv.array
    return info.arg(0, "array")


def _name(v, info: CallInfo) -> str | None:
    """The array parameter a raw operation works on; None where the checker cannot tell which
    (``a = z if c else x``): such a store is never proven race-free."""
    return v.param.name if isinstance(v, TensorV) else None


def own_axes(index) -> tuple | None:
    """Per entry of a store's index, the grid axis whose block id it holds: ``a`` for
    ``ct.bid(a)`` itself, ``("div", a)`` / ``("mod", a)`` for ``bid // n`` / ``bid % n`` (which
    count only as a pair with the same ``n``), ``None`` for anything else; None if the index
    is not a tuple or scalar the checker can read."""
    items = index.items if isinstance(index, TupleV) else (index,)
    out = []
    for v in items:
        o = v.origin if isinstance(v, TileV) else None
        if isinstance(o, tuple) and o[0] == "bid" and o[1] is not None:
            out.append(o[1])
        elif isinstance(o, tuple) and o[0] in ("div", "mod") and o[1][1] is not None:
            out.append((o[0], o[1][1], o[2]))
        elif isinstance(v, TileV):
            out.append(None)
        else:
            return None
    return tuple(out)


def _covered(axes: tuple) -> set:
    """The grid axes an index's own-id entries tell apart."""
    got = {a for a in axes if isinstance(a, int)}
    pairs = {a for a in axes if isinstance(a, tuple)}
    for kind, axis, token in pairs:
        if kind == "div" and ("mod", axis, token) in pairs:
            got.add(axis)
    return got


def _grid_axes_used(ctx: KernelContext) -> set[int]:
    axes = set()
    for info in ctx.types.all_calls():
        if info.kind == "lang" and info.name in ("bid", "num_blocks"):
            a = int_of(info.arg(0, "axis"))
            axes.add(a if a is not None else -1)   # an axis it cannot read: any
    return axes


def _tile_shape(info: CallInfo):
    t = info.arg(2, "tile")
    if isinstance(t, TileV) and t.shape is not None and all(d is not None for d in t.shape):
        return t.shape
    return None


@rule
def possible_races(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL060: writes not proven race-free; TL061: atomics; TL062: read and written; TL063:
    calls the analysis cannot follow."""
    used = _grid_axes_used(ctx)
    written: dict[str, ast.AST] = {}
    read: dict[str, list] = {}            # array -> its reads
    atomics: dict[str, CallInfo] = {}
    pattern: dict[str, tuple] = {}        # array -> (own-id positions, tile shape) of its stores
    unproven: set[str] = set()            # arrays with a write already flagged
    calls = ctx.types.all_calls()
    unknown = {id(i.node) for i in outermost_calls([i for i in calls if _unidentified(ctx, i)])}
    for info in calls:
        if info.kind == "helper" and info.problem is not None:
            yield _unfollowed_call(ctx, info)
            continue
        if _unidentified(ctx, info):
            if id(info.node) in unknown:
                yield _unfollowed_call(ctx, info, "the checker cannot tell what it calls")
            continue
        op = info.raw_op
        if op is None:
            continue
        name = _name(_array(info), info)
        at = ctx.at(info)
        if op in RAW_READS and name:
            read.setdefault(name, []).append(info)
        if op not in RAW_WRITES:
            continue
        if name:
            written.setdefault(name, at)
        if op.startswith("atomic_"):
            if name and name not in atomics:
                atomics[name] = info
            continue
        if op != "store":
            unproven.add(name)
            yield _scattered_write(ctx, info, name, at)
            continue
        d = _store_race(ctx, info, name, at, used, pattern)
        if d is not None:
            unproven.add(name)
            yield d
    yield from _unordered_updates(ctx, atomics, written, read)
    for name in written:
        if name in read and name in pattern and name not in unproven and name not in atomics:
            foreign = [i for i in read[name] if _tile_key(ctx, i, used) != pattern[name]]
            if foreign:
                yield _foreign_read(ctx, foreign[0], name, written[name])


def _unidentified(ctx: KernelContext, info: CallInfo) -> bool:
    """A call whose callee the typing pass cannot tell (``getattr(ct, "store")(...)``,
    ``ct.__dict__["store"](...)``, a method of a class or of a module the checker does not read),
    or a writing method of a value it cannot tie to one array (raw memory, a tiled view). A
    method of a local value whose type it could not work out (``y.astype``, with ``y`` computed
    from an untyped scalar) is a tile's."""
    if info.kind == "unknown":
        return True
    if info.kind != "method" or isinstance(info.recv, (TensorV, TileV, RawMemV)):
        return False
    if info.name in ("get_raw_memory", "store") or info.name.endswith("_offset") or \
            info.name.startswith("atomic_"):
        return True       # raw memory, or a tiled view's store (`z.tiled_view(shape).store`)
    root = info.node.func
    while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
        root = root.func if isinstance(root, ast.Call) else root.value
    if not isinstance(root, ast.Name):
        return False
    fn = info.helper.node if info.helper is not None else ctx.fn
    bound = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)} | \
        {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return root.id not in bound


def _unfollowed_call(ctx: KernelContext, info: CallInfo, why: str | None = None) -> Diagnostic:
    """TL063: a call the analysis cannot follow (a helper it cannot read, a callee it cannot
    tell), so whatever it writes is unchecked."""
    what = f"`{info.name}` ({info.problem})" if why is None else \
        f"`{short(info.node.func)}` ({why})"
    return ctx.diag(
        "TL063", f"the checker cannot follow the call of {what}: whatever it writes is "
                 "unchecked", ctx.at(info),
        labels=ctx.helper_label(info, "the call"),
        help="define the helper in the same file (or an earlier cell) as a plain "
             "function or a `@ct.function`, so that the checker can read its body",
        notes=["the race analysis follows helpers through their bodies; a call it cannot "
               "follow could write anywhere"])


def _scattered_write(ctx: KernelContext, info: CallInfo, name: str | None,
                     at: ast.AST) -> Diagnostic:
    """TL060 for a write that is not a tile store (scatter, raw-memory store): never proven."""
    what = f"`{name}`" if name else "the array"
    return ctx.diag(
        "TL060", f"possible data race: `{short(info.node.func)}` writes elements of "
                 f"{what} that other blocks may also write", at,
        labels=ctx.helper_label(info, "the write"),
        help="make sure the indices of different blocks never overlap, or use atomic "
             "updates",
        notes=["scattered writes and raw-memory (offset) stores cannot be proven "
               "race-free by the checker"])


def _store_race(ctx: KernelContext, info: CallInfo, name: str | None, at: ast.AST,
                used: set, pattern: dict) -> Diagnostic | None:
    """TL060 for a tile store unless its index holds the block's own id on every grid axis used,
    at the same places (and tile shape) as every other store into the array."""
    index = info.arg(1, "index")
    axes = own_axes(index)
    shape = _tile_shape(info)
    proven = axes is not None and -1 not in used and used <= _covered(axes) and name is not None
    if proven and name is not None:
        key = (tuple(a if a is None or isinstance(a, int) else a[:2] for a in axes), shape)
        if name in pattern and (pattern[name] != key or shape is None):
            proven = False
        pattern.setdefault(name, key)
    if proven:
        return None
    what = f"`{name}`" if name else "the array"
    node = info.arg_node(1, "index")
    idx = short(node) if node is not None else "?"
    array = info.arg_node(0, "array")
    why = f"index `{idx}` is not the block's own id" if name or array is None else \
        f"the checker cannot tell which array `{short(array)}` is"
    if not name and array is not None:
        node = array
    return ctx.diag(
        "TL060", f"possible data race: blocks may store to the same tile of {what} ({why})",
        node if node is not None and info.helper is None else at,
        labels=ctx.helper_label(info, "the write"),
        help="index the store by the block's own id on every grid axis, e.g. "
             "`index=(ct.bid(0),)`, `(ct.bid(0), ct.bid(1))` or `(row, 0)` with "
             "`row = ct.bid(0)`, or write the kernel in the tile language with a `Mut` "
             "output; if every block really writes a different tile, this warning can be "
             "ignored",
        notes=["the checker proves a store race-free when its index holds the block's own "
               "id (`ct.bid(axis)`, through any name) for every grid axis the kernel uses, "
               "and every store into the array does so at the same places"])


def _tile_key(ctx: KernelContext, info: CallInfo, used: set, shape=None) -> tuple | None:
    """(own-id positions, tile shape) of a tile load or store whose index holds the block's own
    id on every grid axis used; None for any other access."""
    if info.raw_op not in ("load", "store"):
        return None
    axes = own_axes(info.arg(1, "index"))
    if info.raw_op == "load":
        t = ctx.types.of(info.node, info.path)
        shape = t.shape if isinstance(t, TileV) and t.shape is not None and \
            all(d is not None for d in t.shape) else None
    else:
        shape = _tile_shape(info)
    if axes is None or -1 in used or not used <= _covered(axes) or shape is None:
        return None
    return (tuple(a if a is None or isinstance(a, int) else a[:2] for a in axes), shape)


def _foreign_read(ctx: KernelContext, info: CallInfo, name: str, store: ast.AST) -> Diagnostic:
    """TL060 for a read of an array whose stores are race-free, at a tile that is not the
    block's own: another block may be writing it."""
    node = info.arg_node(1, "index")
    idx = short(node) if node is not None else "?"
    return ctx.diag(
        "TL060", f"possible data race: this reads a tile of `{name}` (index `{idx}`) that "
                 "other blocks may be writing", ctx.at(info),
        labels=[ctx.label(store, f"`{name}` is written here, each block its own tile")] +
        ctx.helper_label(info, "the read"),
        help=f"read only the block's own tile of `{name}` (the index and shape of its store), "
             "or pass the data the kernel reads as a separate input array",
        notes=["blocks run in no fixed order: a read of another block's tile may see its old "
               "or its new values"])


def _unordered_updates(ctx: KernelContext, atomics: dict, written: dict,
                       read: dict) -> Iterator[Diagnostic]:
    """TL061 per array updated by atomics; TL062 per array both read and written."""
    for name, info in atomics.items():
        yield ctx.diag(
            "TL061", f"atomic updates to `{name}` are race-free, but blocks apply them in no "
                     "fixed order", ctx.at(info),
            notes=["floating-point sums may differ from run to run in the last bits"])
    for name, at in written.items():
        if name in read:
            yield ctx.diag(
                "TL062", f"`{name}` is both read and written by this kernel", at,
                labels=[ctx.label(ctx.at(read[name][0]), f"`{name}` is read here")],
                notes=["a block that reads tiles other blocks write may see old or new values; "
                       "reading only the block's own tile is safe"])


def grid_axes_told_apart(kdef, globals_=None) -> tuple[frozenset[int] | None, bool]:
    """For a launch of a plain cuTile kernel: the grid axes whose block ids the kernel reads
    (``ct.bid`` / ``ct.num_blocks``; None: an axis it cannot read, so any), and whether it writes
    memory at all. Blocks that differ only along another axis run the very same code: every
    write of one is a write of the others (remembered per kernel definition)."""
    cached = kdef.__dict__.get("_grid_axes")
    if cached is not None and cached[0] is kdef.node:
        return cached[1]
    ctx = KernelContext(kdef, globals_)
    used = _grid_axes_used(ctx)
    writes = any(i.raw_op in RAW_WRITES or (i.kind == "helper" and i.problem is not None)
                 or _unidentified(ctx, i) for i in ctx.types.all_calls())
    result = (None if -1 in used else frozenset(used), writes)
    kdef.__dict__["_grid_axes"] = (kdef.node, result)
    return result
