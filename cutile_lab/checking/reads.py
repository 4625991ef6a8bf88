"""The reads pass: the safe memory forms read what they may, by value, in the kernel and in every
helper it calls.

What it proves, on the types the typing pass (``typecheck``) gives every value:

* ``load_tile_like(x, z)`` takes its tile's shape and position from ``z``, one of the kernel's
  ``Mut`` outputs (TL020), and reads a tensor parameter ``x`` (TL021) of the same rank (TL022);
* ``load_tile(x, index, shape)`` is given all three (TL023), reads a tensor parameter (TL021)
  with an index and a shape of its rank (TL023);
* no load reads tiles that other instances of the launch are writing (TL024): ``load_tile`` of an
  output, or ``load_tile_like(y, z)`` of an output ``y`` whose tile is not shaped like ``z``'s
  (with the same tile shape it is ``y``'s own tile, as ``y.load()`` is).

A load inside a helper is checked with the helper's parameters bound to the arguments of each of
its calls, and reported at the kernel's call of the helper, with a label at the load.
"""
from __future__ import annotations

import ast
from typing import Iterator

from cutile_lab.checking.context import (KernelContext, dtype_name, first_output, n_,
                                         rule_registry, short, tile_shape_text)
from cutile_lab.checking.tiletypes import TileV
from cutile_lab.checking.typecheck_values import CallInfo
from cutile_lab.diagnostics import Diagnostic

RULES, rule = rule_registry()


class _Load:
    """One call of a safe load, where it stands: ``at(node)`` is where a diagnostic about
    ``node`` goes (the node itself in the kernel; the kernel's call of the helper otherwise), and
    ``labels`` the label that shows the load in its helper."""

    def __init__(self, ctx: KernelContext, info: CallInfo):
        self.info, self.call, self.path = info, info.node, info.path
        self.labels = ctx.helper_label(info, "the load")
        self._anchor = ctx.at(info)

    def at(self, node: ast.AST) -> ast.AST:
        return node if self.info.helper is None else self._anchor


def _loads(ctx: KernelContext, name: str) -> Iterator[_Load]:
    for info in ctx.types.all_calls():
        if info.kind == "lang" and info.space == "lang" and info.name == name:
            yield _Load(ctx, info)


@rule
def load_tile_like_args(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL020/TL021/TL022/TL024: ``load_tile_like(x, z)``."""
    out = first_output(ctx)
    for ld in _loads(ctx, "load_tile_like"):
        call = ld.call
        if len(call.args) != 2 or any(k.arg != "padding" for k in call.keywords):
            z = out.name if out else "z"
            yield ctx.diag(
                "TL020", "`load_tile_like` takes two arguments: the tensor to read and your "
                         "own output tile", ld.at(call), labels=ld.labels,
                help=f"write `load_tile_like(x, {z})`: it reads the tile of `x` at the position "
                     f"of `{z}`'s tile")
            continue
        x, z = call.args
        if any(isinstance(a, ast.Name) and a.id in ctx.broken for a in (x, z)):
            continue
        pz = ctx.param_named(z, roles=("mut",), path=ld.path)
        px = ctx.param_named(x, path=ld.path)
        if pz is None:
            yield _not_an_output(ctx, ld, x, z, out)
        elif px is None:
            t = ctx.types.of(x, ld.path)
            if isinstance(t, TileV) and t.shape not in (None, ()):
                help = f"`{short(x)}` is already a tile: use it directly"
            else:
                names = [p.name for p in ctx.shared.values()] or ["x"]
                help = f"pass a tensor parameter, e.g. `load_tile_like({names[0]}, {pz.name})`"
            yield ctx.diag(
                "TL021", f"`load_tile_like` reads from a tensor parameter, and `{short(x)}` is "
                         "not one", ld.at(x), labels=ld.labels, help=help)
        elif len(px.shape) != len(pz.shape):
            yield ctx.diag(
                "TL022", f"`{px.name}` has {n_(len(px.shape), 'dimension')} but the tile of "
                         f"`{pz.name}` has {len(pz.shape)}", ld.at(call),
                labels=[ctx.declared(px, f"`{px.name}`: {n_(len(px.shape), 'dimension')}"),
                        ctx.declared(pz, f"`{pz.name}`: a tile of "
                                         f"{n_(len(pz.shape), 'dimension')}")] + ld.labels,
                help=f"declare `{px.name}` with {n_(len(pz.shape), 'dimension')} (e.g. "
                     f"`Tensor[{dtype_name(px)}, \"{', '.join(['?'] * len(pz.shape))}\"]`), "
                     "or read it with `load_tile(x, index, shape)`")
        elif px.role == "mut" and tuple(px.shape) != tuple(pz.shape):
            yield ctx.diag(
                "TL024", f"`load_tile_like({px.name}, {pz.name})` reads a tile of the output "
                         f"`{px.name}` shaped like `{pz.name}`'s, which other tiles of the launch "
                         "are writing at the same time", ld.at(call),
                labels=[ctx.declared(px, f"`{px.name}`: tiles of {tile_shape_text(px)}"),
                        ctx.declared(pz, f"`{pz.name}`: tiles of {tile_shape_text(pz)}")]
                + ld.labels,
                help=f"read your own tile of `{px.name}` with `{px.name}.load()`; to read "
                     "other tiles, pass the data as a separate shared input",
                notes=["each tile of an output belongs to one kernel instance: the tile at your "
                       f"position of `{pz.name}` covers other instances' pieces of `{px.name}` "
                       "when their tile shapes differ"])


def _not_an_output(ctx: KernelContext, ld: _Load, x: ast.AST, z: ast.AST, out) -> Diagnostic:
    """TL020: the second argument of ``load_tile_like`` is not one of the outputs."""
    zp = ctx.param_named(z, roles=("shared",), path=ld.path)
    what = f"`{short(z)}` is a shared input" if zp is not None else \
        f"`{short(z)}` is not one of this kernel's `Mut` outputs"
    if out is not None:
        help = f"pass your output as the second argument: `load_tile_like({short(x)}, {out.name})`"
    else:
        help = ("`load_tile_like` needs a `Mut` output to take the tile position from; without "
                "one, read with `load_tile(x, index, shape)`")
    labels = [ctx.declared(zp)] if zp is not None else []
    return ctx.diag(
        "TL020", f"{what}: `load_tile_like(x, z)` takes the tile's shape and position from `z`, "
                 "which must be one of your outputs", ld.at(z), labels=labels + ld.labels,
        help=help)


def _arg_of(call: ast.Call, i: int, name: str) -> ast.AST | None:
    if len(call.args) > i:
        return call.args[i]
    return next((k.value for k in call.keywords if k.arg == name), None)


@rule
def load_tile_args(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL021/TL023/TL024: ``load_tile(x, index, shape)``."""
    for ld in _loads(ctx, "load_tile"):
        call = ld.call
        x, index, shape = _arg_of(call, 0, "x"), _arg_of(call, 1, "index"), \
            _arg_of(call, 2, "shape")
        if x is None or index is None or shape is None:
            yield ctx.diag(
                "TL023", "`load_tile` needs the tensor, the tile's index and the tile's shape",
                ld.at(call), labels=ld.labels,
                help="write e.g. `load_tile(x, (tile_id(0), k), (BM, BK))`: the index counts "
                     "tiles, not elements")
            continue
        if isinstance(x, ast.Name) and x.id in ctx.broken:
            continue
        p = ctx.param_named(x, path=ld.path)
        if p is None:
            names = [q.name for q in ctx.shared.values()] or ["x"]
            yield ctx.diag(
                "TL021", f"`load_tile` reads from a tensor parameter, and `{short(x)}` is not "
                         "one", ld.at(x), labels=ld.labels,
                help=f"pass a shared input, e.g. `load_tile({names[0]}, {short(index)}, "
                     f"{short(shape)})`")
        elif p.role == "mut":
            yield ctx.diag(
                "TL024", f"`load_tile` reads tiles of the output `{p.name}`, which other tiles "
                         "of the launch are writing at the same time", ld.at(call),
                labels=[ctx.declared(p)] + ld.labels,
                help=f"read your own tile with `{p.name}.load()`; to read other tiles, pass the "
                     "data as a separate shared input",
                notes=["each tile of an output belongs to one kernel instance; reading another "
                       "instance's tile while it is being written is a data race"])
        else:
            yield from _entries(ctx, ld, p, index, shape)


def _entries(ctx: KernelContext, ld: _Load, p, index: ast.AST,
             shape: ast.AST) -> Iterator[Diagnostic]:
    """TL023: an index or shape of ``load_tile`` with another number of entries than ``p``'s
    rank."""
    rank = len(p.shape)
    for what, node in (("index", index), ("shape", shape)):
        n = len(node.elts) if isinstance(node, ast.Tuple) else (
            1 if isinstance(node, (ast.Constant, ast.BinOp)) or
            (isinstance(node, ast.Call) and ctx.callee(node)[1] in ("tile_id", "bid"))
            else None)
        if n is None or n == rank:
            continue
        example = "(tile_id(0), k)" if what == "index" else "(BM, BK)"
        yield ctx.diag(
            "TL023", f"the {what} of `load_tile` has {n} entr{'y' if n == 1 else 'ies'}, but "
                     f"`{p.name}` has {rank} dimension{'s' if rank != 1 else ''}", ld.at(node),
            labels=[ctx.declared(p, f"`{p.name}` has {rank} dimension"
                                    f"{'s' if rank != 1 else ''}")] + ld.labels,
            help=f"give one entry per dimension of `{p.name}`"
                 + (f", e.g. `{example}`" if rank == 2 else ""))
