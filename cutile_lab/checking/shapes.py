"""The shapes pass: what is stored is provably the own tile, and the grid is used as it is.

What it proves:

* a store into a ``Mut`` output stores a tile whose symbolic shape (an expression over const
  generics and literals, normalised by ``tiletypes``: ``2*B`` is ``B*2``) *is* the output's tile
  shape: a different shape is an error (TL016); in safe code, a shape the checker cannot prove
  (an unknown op, a shape computed from runtime values, a loop that changes it) is an error too
  (TL035), whose help says what would be provable; a store given anything but one tile
  (``d.store(tile=t)`` in a helper, ``s(t, u)`` through a bound ``s = z.store``) cannot be
  checked, and is an error (TL025);
* the stored dtype converts to the output's without loss, or the conversion is written out:
  a lossy implicit conversion (int to a float too narrow for it, f32 to f16, float to int,
  signed to unsigned...) is an error (TL017); a lossless one is allowed, with a hint (TL018);
* ``tile_id(axis)`` names an axis of the launch grid: a constant below the rank of the
  partition (TL043); the outputs' tiles have at most 3 dimensions and one rank (TL040, TL041).
"""
from __future__ import annotations

import ast
from typing import Callable, Iterable, Iterator

from cutile_lab.checking.context import (KernelContext, a_, dtype_name, first_output, n_,
                                         own_store_calls, short)
from cutile_lab.checking.tiletypes import (TensorV, TileV, format_shape, int_of,
                                           lossless_cast)
from cutile_lab.diagnostics import Diagnostic
from cutile_lab.language.frontend import Param

Rule = Callable[[KernelContext], Iterable[Diagnostic]]
RULES: list[Rule] = []


def rule(fn: Rule) -> Rule:
    RULES.append(fn)
    return fn


def _proven_shape(t) -> bool:
    return isinstance(t, TileV) and t.shape is not None and \
        all(d is not None for d in t.shape)


def _unprovable(ctx: KernelContext, p: Param, t, arg: ast.AST, where, labels) -> Diagnostic:
    want = format_shape(tuple(p.shape))
    if isinstance(t, TensorV):
        what = f"`{short(arg)}` is a tensor, not a tile"
    elif isinstance(t, TileV) and t.shape is not None:
        what = f"the checker cannot prove that the tile's shape {format_shape(t.shape)} is " \
               f"{want}"
    else:
        what = f"the checker cannot prove that `{short(arg)}` has the shape {want}"
    return ctx.diag(
        "TL035", f"{what}, the tile shape of `{p.name}`", where, labels=labels,
        help=f"build the tile from shapes the checker can follow: `load_tile_like(x, {p.name})`, "
             f"`{p.name}.load()`, `load_tile(x, index, {want})` or `full({want}, ...)` with "
             "the declared const generics, then element-wise ops, reductions with "
             "`keepdims=True`, `reshape` to a written-out shape; or, if you know better, store "
             "it inside `with unsafe():` (reported as unchecked)",
        notes=["a store writes the tile at your own tile's position; a tile of another shape "
               "would land on other tiles' elements, so safe code must prove the shape"])


def _shape_help(got: tuple, want: tuple, p: Param, arg: ast.AST) -> str:
    t = short(arg)
    target = format_shape(want)
    if len(got) == len(want) == 2 and (got[1], got[0]) == want:
        return f"transpose it: `{p.name}.store(transpose({t}))`"
    for i in range(len(want)):
        if want[i] == 1 and tuple(want[:i]) + tuple(want[i + 1:]) == tuple(got):
            return (f"keep the reduced axis with `keepdims=True`, or reshape: "
                    f"`{p.name}.store(reshape({t}, {target}))`")
    if [d for d in got if d != 1] == [d for d in want if d != 1]:
        return f"reshape it: `{p.name}.store(reshape({t}, {target}))`"
    return (f"the tile stored into `{p.name}` must have exactly the shape {target}; compute it "
            f"with that shape (e.g. load it with `load_tile_like(x, {p.name})`)")


def _stored_tile(call: ast.Call) -> ast.AST | None:
    """The tile a store is given, its one positional argument; None when the call gives anything
    else (then what it stores cannot be checked: TL025)."""
    if len(call.args) == 1 and not call.keywords and not isinstance(call.args[0], ast.Starred):
        return call.args[0]
    return None


def _reported_as_method(ctx: KernelContext, info) -> bool:
    """``z.store(a, b)`` written on the parameter itself in the kernel: TL025 reports it there."""
    f = info.node.func
    return info.helper is None and isinstance(f, ast.Attribute) and \
        isinstance(f.value, ast.Name) and f.value.id in ctx.outputs and \
        f.value.id not in ctx.locals


@rule
def stored_tile_type(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL016 shape, TL035 unprovable shape, TL017 lossy dtype, TL018 lossless implicit
    conversion of a stored tile."""
    for info, p in own_store_calls(ctx):
        if p.name in ctx.broken:         # its declaration is reported (TL001)
            continue
        call = info.node
        arg = _stored_tile(call)
        decl = ctx.declared(p)
        labels = [decl] + ctx.helper_label(info, "the store")
        if arg is None:
            if not _reported_as_method(ctx, info):
                yield ctx.diag(
                    "TL025", f"`{p.name}.store(tile)` takes exactly one tile", ctx.at(info),
                    labels=labels, help=f"write `{short(call.func)}(t)` with a tile `t` of shape "
                                        f"{format_shape(tuple(p.shape))}")
            continue
        t = ctx.types.of(arg, info.path)
        want = tuple(p.shape)
        where = arg if info.helper is None else ctx.at(info)
        if not _proven_shape(t) and not info.in_unsafe:
            if not ctx.unknown_from_elsewhere(arg, info.path):
                yield _unprovable(ctx, p, t, arg, where, labels)
            continue
        if not isinstance(t, TileV):
            continue
        if t.shape is not None:
            if t.shape == ():
                yield ctx.diag(
                    "TL016", f"this stores a single value into `{p.name}`, whose tile shape is "
                             f"{format_shape(want)}", where,
                    labels=labels,
                    help=f"to fill the tile with it, write `{p.name}.store(full("
                         f"{format_shape(want)}, {short(arg)}, dtype={dtype_name(p)}))`",
                    notes=["a single value would be stored as a 1-element tile, at an index "
                           "that is not your own tile's position"])
                continue
            mismatch = len(t.shape) != len(want) or any(
                a is not None and b is not None and a != b for a, b in zip(t.shape, want))
            if mismatch:
                yield ctx.diag(
                    "TL016", f"this stores a tile of shape {format_shape(t.shape)} into "
                             f"`{p.name}`, whose tile shape is {format_shape(want)}", where,
                    labels=labels, help=_shape_help(t.shape, want, p, arg),
                    notes=["a store writes the tile at your own tile's position; a tile of "
                           "another shape would land on other tiles' elements"])
                continue
        if t.dtype is None or p.dtype is None or t.dtype == p.dtype:
            continue
        if t.loose:
            continue
        why = _dtype_origin(ctx, arg, t) if info.helper is None else []
        expr = short(arg)
        if not isinstance(arg, (ast.Name, ast.Call, ast.Attribute, ast.Subscript)):
            expr = f"({expr})"
        if lossless_cast(t.dtype, p.dtype):
            yield ctx.diag(
                "TL018", f"the {t.dtype} tile stored into `{p.name}` is converted to "
                         f"{p.dtype} implicitly", where, labels=labels,
                help=f"write the conversion explicitly: `{p.name}.store({expr}.astype("
                     f"{p.dtype}))`, or declare `{p.name}` with dtype {t.dtype}", notes=why)
        else:
            yield ctx.diag(
                "TL017", f"this stores {a_(t.dtype)} tile into `{p.name}`, whose dtype is "
                         f"{p.dtype}: the conversion can lose values", where, labels=labels,
                help=f"convert it: `{p.name}.store({expr}.astype({p.dtype}))`",
                notes=why + [f"not every {t.dtype} value is {a_(p.dtype)} value (it could lose "
                             "precision or range), so the conversion must be written out"])


def _dtype_origin(ctx: KernelContext, arg: ast.AST, t: TileV) -> list[str]:
    """For ``a * b``: a note naming the operand that made the result ``t.dtype``."""
    node = arg
    while isinstance(node, ast.BinOp):
        lt, rt = ctx.types.of(node.left), ctx.types.of(node.right)
        if not (isinstance(lt, TileV) and isinstance(rt, TileV)):
            return []
        if lt.dtype == t.dtype and rt.dtype != t.dtype and not lt.loose:
            side, other = node.left, rt
        elif rt.dtype == t.dtype and lt.dtype != t.dtype and not rt.loose:
            side, other = node.right, lt
        else:
            return []
        if isinstance(side, ast.BinOp):
            node = side
            continue
        if other.dtype is None or other.loose:
            return []
        return [f"`{short(side)}` is {t.dtype}, so `{short(node)}` is computed in {t.dtype} "
                f"(the {other.dtype} operand is promoted)"]
    return []



# --- the grid ------------------------------------------------------------------------------

@rule
def output_ranks(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL040: a tile with more than 3 dims; TL041: outputs with different tile ranks."""
    outs = list(ctx.outputs.values())
    for p in outs:
        if len(p.shape) > 3:
            yield ctx.diag(
                "TL040", f"the tile of `{p.name}` has {len(p.shape)} dimensions, but a launch "
                         "grid has at most 3 axes", p.span,
                help="merge dimensions: give the output a tile of at most 3 dimensions "
                     "(reshape the tensor on the host before partitioning it)",
                notes=["each tile of an output is one kernel instance, and instances are laid "
                       "out on a grid of up to 3 axes, one per tile dimension"])
    good = [p for p in outs if 0 < len(p.shape) <= 3]
    if len(good) > 1:
        first = good[0]
        for p in good[1:]:
            if len(p.shape) == len(first.shape):
                continue
            low, high = (p, first) if len(p.shape) < len(first.shape) else (first, p)
            dims = ["1"] * (len(high.shape) - len(low.shape)) + [str(d) for d in low.shape]
            if len(low.shape) == 1 and len(high.shape) == 2:
                dims = [str(low.shape[0]), "1"]
            yield ctx.diag(
                "TL041", f"the outputs `{first.name}` and `{p.name}` have tiles of different "
                         f"ranks ({len(first.shape)} and {len(p.shape)}), so they cannot share one "
                         "launch grid", p.span,
                labels=[ctx.declared(first, f"`{first.name}`: a tile of "
                                            f"{n_(len(first.shape), 'dimension')}")],
                help=f"give both outputs tiles of the same rank, e.g. `{low.name}: Mut[Tensor["
                     f"{dtype_name(low)}, \"{', '.join(dims)}\"]]`",
                notes=["one kernel instance writes one tile of every output, so all outputs are "
                       "split along the same grid axes"])


@rule
def tile_id_axes(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL043: ``tile_id(axis)`` with an axis that is not a constant below the grid's rank."""
    out = first_output(ctx)
    if out is None or not 0 < len(out.shape) <= 3:
        return
    rank = len(out.shape)
    for info in ctx.types.all_calls():
        if info.kind != "lang" or info.space != "lang" or info.name != "tile_id":
            continue
        if info.in_unsafe:
            # a grid with more axes than the partition (split-K) shares each tile between
            # instances: the user's claim, reported with its unchecked block
            continue
        axis_node = info.arg_node(0, "axis")
        if axis_node is None:
            continue
        axis = int_of(info.arg(0, "axis"))
        if axis is not None and 0 <= axis < rank:
            continue
        grid = f"{rank} ax{'i' if rank == 1 else 'e'}s"
        if axis is None:
            msg = f"`tile_id({short(axis_node)})`: the axis must be a constant"
        else:
            msg = f"`tile_id({axis})`: the launch grid of this kernel has {grid}"
        yield ctx.diag(
            "TL043", msg, ctx.at(info) if info.helper is not None else axis_node,
            labels=[ctx.declared(out, f"`{out.name}` has a tile of "
                                      f"{n_(rank, 'dimension')}: one grid axis each")]
            + ctx.helper_label(info, "the call"),
            help=f"use an axis from 0 to {rank - 1}: the grid has one axis per dimension of the "
                 "outputs' tiles",
            notes=["each kernel instance owns one tile; `tile_id(axis)` is its position along "
                   "one axis of the partition"])
