"""The unsafe pass: raw memory stays inside ``with unsafe():``, and every unsafe block is seen.

What it proves: no raw memory operation (cuTile's ``store``/``load``/``gather``/``scatter``/
atomics, the raw block index, ``get_raw_memory()`` and its offset loads and stores), however it is
reached (a bare name, ``ct.``, a renamed ``import cuda.tile as ctile``, a name imported from
``cuda.tile``, a helper function's body), runs outside ``with unsafe():`` (TL011); no raw write,
even inside ``unsafe``, targets a shared input under any name (TL019); an ``unsafe`` block that
holds nothing unsafe is pointed out (TL012). And it makes what it cannot check visible: every
``with unsafe():`` block, and every helper call that runs unchecked code, is reported as
*unchecked* (TL050, a note with the block's span), so a kernel holding unchecked code is never
summarised as having no problems.
"""
from __future__ import annotations

import ast
from typing import Callable, Iterable, Iterator

from cutile_lab.checking.context import (RAW_INDEX, RAW_READS, RAW_WRITES, KernelContext,
                                         first_output, short)
from cutile_lab.checking.tiletypes import TensorV
from cutile_lab.checking.typecheck_values import CallInfo, RawMemV
from cutile_lab.diagnostics import Diagnostic, Span

Rule = Callable[[KernelContext], Iterable[Diagnostic]]
RULES: list[Rule] = []


def rule(fn: Rule) -> Rule:
    RULES.append(fn)
    return fn


def raw_target(info: CallInfo):
    """The value a raw operation reads or writes: its array argument, or the array whose raw
    memory an offset method works on."""
    if isinstance(info.recv, RawMemV):
        return info.recv.array
    return info.arg(0, "array", "x")


_RAW_HELP = {
    "store": "write your own tile with `{out}.store(tile)`; for a store at an index you "
             "compute yourself, wrap it in `with unsafe():`",
    "load": "read with `load_tile_like(x, {out})` (the tile at your own position) or "
            "`load_tile(x, index, shape)`; for a raw load, wrap it in `with unsafe():`",
    "gather": "element-wise indexed reads need `with unsafe():` around them",
    "scatter": "element-wise indexed writes need `with unsafe():` around them",
    "atomic": "atomic updates can touch any element of the tensor: wrap them in "
              "`with unsafe():`",
    "raw": "raw memory (`get_raw_memory()`, offset loads and stores) reaches any element of "
           "the tensor: use it inside `with unsafe():`, or read and write tiles with "
           "`load_tile_like(x, {out})` and `{out}.store(tile)`",
}


@rule
def raw_memory_outside_unsafe(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL011: raw memory operations (and the raw block index) outside ``with unsafe():``."""
    out = first_output(ctx)
    out_name = out.name if out is not None else "z"
    for info in ctx.types.all_calls():
        op = info.raw_op
        if op is None or info.in_unsafe:
            continue
        call, at = info.node, ctx.at(info)
        labels = ctx.helper_label(info, "the raw operation")
        spelled = short(call.func)
        if op in RAW_INDEX:
            if op == "bid":
                axis = short(call.args[0]) if call.args else "0"
                yield ctx.diag(
                    "TL011", f"`{spelled}` is cuTile's raw block index; a tile kernel gets its "
                             "position from its own tile", at, labels=labels,
                    help=f"write `tile_id({axis})` (the index of this kernel's own tile), or "
                         "use it inside `with unsafe():`")
            else:
                yield ctx.diag(
                    "TL011", f"`{spelled}` is cuTile's raw grid size", at, labels=labels,
                    help="write `num_tiles(axis)`, or use it inside `with unsafe():`")
            continue
        if op == "get_raw_memory":
            key = "raw"
        elif op.endswith("_offset"):
            key = "atomic" if op.startswith("atomic_") else \
                ("store" if op == "store_offset" else "load")
        else:
            key = "atomic" if op.startswith("atomic_") else \
                ("store" if op in ("store", "store_advanced_indexing") else
                 ("load" if op in ("load", "load_advanced_indexing") else op))
        what = "writes" if op in RAW_WRITES else ("reads" if op in RAW_READS else "accesses")
        where = f" (inside `{info.helper.name}`)" if info.helper is not None else ""
        yield ctx.diag(
            "TL011", f"`{spelled}` {what} memory at an index the checker cannot verify{where}; "
                     "it is only allowed inside `with unsafe():`", at, labels=labels,
            help=_RAW_HELP.get(key, _RAW_HELP["store"]).format(out=out_name),
            notes=["inside `with unsafe():` you take over the checker's job: the report marks "
                   "the block as unchecked, and the simulator can still catch out-of-bounds "
                   "accesses and write-write conflicts there"])


@rule
def needless_unsafe(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL012: an ``unsafe`` block with no raw memory operation in it."""
    for w in ctx.unsafe_blocks:
        inside = {id(n) for s in w.body for n in ast.walk(s)}
        ops = {info.raw_op for info in ctx.types.all_calls()
               if info.raw_op is not None and id(info.anchor) in inside}
        if ops - RAW_INDEX:
            continue
        item = w.items[0].context_expr
        extra = ""
        if ops:
            extra = " (`bid` and `num_blocks` alone are not unsafe: `tile_id(axis)` and " \
                    "`num_tiles(axis)` are their safe spellings)"
        yield ctx.diag(
            "TL012", "this `with unsafe():` block contains no raw memory operation", item,
            help="remove the `with unsafe():` line and dedent its body, so that the checker "
                 "keeps checking this code" + extra)


@rule
def unsafe_write_into_shared(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL019: raw writes inside ``unsafe`` whose target is a shared input."""
    for info in ctx.types.all_calls():
        op = info.raw_op
        if op not in RAW_WRITES or not info.in_unsafe:
            continue
        target = raw_target(info)
        if not (isinstance(target, TensorV) and target.param.role == "shared"):
            continue
        p = target.param
        yield ctx.diag(
            "TL019", f"this unsafe `{short(info.node.func)}` writes into `{p.name}`, which is "
                     "declared as a shared (read-only) input", ctx.at(info),
            labels=[ctx.declared(p)] + ctx.helper_label(info, "the write"),
            help=f"declare `{p.name}` as an output (`{p.name}: Mut[Tensor[...]]`) if the kernel "
                 "writes it",
            notes=["the compiler is told that shared inputs are read-only and do not alias any "
                   "output, and other work may read them at the same time: writing one gives "
                   "undefined results"])


def unchecked_spans(ctx: KernelContext) -> list[Span]:
    """The spans of the kernel's ``with unsafe():`` blocks, in source order."""
    return [ctx.span(w) for w in sorted(ctx.unsafe_blocks, key=lambda w: (w.lineno,
                                                                             w.col_offset))]


@rule
def unchecked_code(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL050: every ``with unsafe():`` block, and every helper call that runs raw operations
    outside one of the kernel's own unsafe blocks, is reported as unchecked."""
    for w in sorted(ctx.unsafe_blocks, key=lambda w: (w.lineno, w.col_offset)):
        span = ctx.span(w)              # the file's lines, not the kernel source's own
        first, last = span.line, span.end_line or span.line
        lines = f"line {first}" if last == first else f"lines {first}-{last}"
        yield ctx.diag(
            "TL050", f"unchecked: the `with unsafe():` block ({lines}) is not checked for "
                     "ownership", w,
            notes=["the code in this block may write anywhere: its correctness is yours, not "
                   "the checker's; the simulator still catches out-of-bounds accesses and "
                   "write-write conflicts there"])
    seen = set()
    for info in ctx.types.all_calls():
        if info.raw_op is None or info.helper is None or id(info.anchor) in seen or \
                ctx.in_unsafe(info.anchor):
            continue
        if not info.in_unsafe:
            continue               # outside unsafe: TL011 reports it
        seen.add(id(info.anchor))
        yield ctx.diag(
            "TL050", f"unchecked: `{info.helper.name}` runs a `with unsafe():` block",
            info.anchor, labels=ctx.helper_label(info, "unchecked code"),
            notes=["the helper's unsafe code may write anywhere: its correctness is yours, not "
                   "the checker's"])
