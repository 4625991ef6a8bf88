"""The checks of a launch on the host, before anything is enqueued: moved tensors (TL102) and
dead views, the checker's launch-level rules (``checking.launch_rules.check_launch`` over
``ArgDesc``s of the real arguments: roles, aliasing, tile shapes, dtypes, ragged partitions),
and the in-flight borrows (TL104/TL105) of the memory the launch reads and writes against the
work of other streams.

The borrow model is ``runtime.ownership``'s: byte ranges (``Borrow``) recorded in the launch's
``Flight`` and checked under the registry's lock, the one record of what in-flight work borrows; a
conflict is worded by the checker's ``use_diagnostic`` from the facts of the flight found. The
launch rules get no ``BorrowView``: moves are checked on the argument objects (``raise_moved``)
before them and in-flight work against the registry after them. Each check here runs on every
launch; what makes it cheap is what the entry of an argument layout keeps (which arrays are
written, their names).

``STATS`` / ``MEASURE``: what the checks cost on the host, counted while ``MEASURE[0]`` is true
(the runtime benchmark).
"""
from __future__ import annotations

import functools
import math
import warnings

from cutile_lab.checking.launch_rules import (ArgDesc, check_launch, check_plain_launch,
                                             check_tile_grid, padded_reads)
from cutile_lab.checking.read_only import read_only_parameters
from cutile_lab.diagnostics import Diagnostic, Span
from cutile_lab.errors import LaunchWarning
from cutile_lab.runtime import ownership
from cutile_lab.runtime.callsite import as_span, user_name_of
from cutile_lab.runtime.ownership import Borrow, OwnershipError
from cutile_lab.runtime.partition import Partition, raise_dead_view
from cutile_lab.runtime.tensor import Tensor

# what the launch checks cost on the host (measured when MEASURE[0] is true: the benchmark)
STATS = {"check_s": 0.0, "checks": 0}
MEASURE = [False]


def raise_moved(label: str, values: dict, where) -> None:
    """Raise the use-after-move (TL102) or dead-view error of the first argument that has been
    moved (the caller found that one has)."""
    for name, v in values.items():
        if isinstance(v, (Tensor, Partition)) and (
                v.moved is not None or (isinstance(v, Partition) and
                                        v.tensor.moved is not None)):
            obj = v if v.moved is not None else v.tensor
            ownership.raise_use_after_move(
                obj, f"pass it to `{label}` as `{name}`", where=where, how="launch")
        # a view — a partition's too — that a later move of its memory ended
        t = v.tensor if type(v) is Partition else v
        if type(t) is Tensor and t.storage.moves is not None and t.dead_view() is not None:
            raise_dead_view(t, f"pass it to `{label}` as `{name}`", where, "launch",
                            user_name_of(v) if t is not v else None)
    # the caller found a moved object among the arguments: never let it through unworded
    raise OwnershipError([Diagnostic(
        "TL102", "error", f"cannot launch `{label}`: an argument was moved or its borrow ended",
        as_span(where),
        help="use the partition the move made (or `p.unpartition()`), or borrow with "
             "`t.partition_mut(...)` instead of moving")])


def check_in_flight(start, ctx, where) -> None:
    """TL104/TL105: a launch's arrays against the borrows of work in flight on other streams.
    ``start``: the launch's ``ReusableStart`` (its entry, arguments and borrows); what the check
    needs of them — [(param, tensor, mut)] and their byte ranges — is kept on it."""
    in_flight = start.in_flight
    if in_flight is None:
        values = start.values
        args = []
        for name, mut in start.entry.arrays:
            v = values[name]
            if type(v) is Partition:
                # a borrowing partition is checked (and named) as the tensor it lends
                v = v._source if v._source is not None else v.tensor
            args.append((name, v, mut))
        in_flight = start.in_flight = (args, ownership.launch_ranges(args))
    lane = ctx.flight.lane if ctx.capture is None else ownership.NO_LANE
    hits = ownership.check_launch_borrows(in_flight[0], ctx.flight, where, lane, in_flight[1])
    if hits:
        raise OwnershipError([d for _, d in hits])


# Borrow(...) at a plain tuple's cost: ``as_borrow((lo, hi, mut, tensor, param))``
as_borrow = functools.partial(tuple.__new__, Borrow)


def borrows_of(entry, values) -> list:
    """The in-flight record's ``Borrow``s of a launch: what it reads and writes. A borrowing
    partition borrows the tensor it lends (its own view of it covers the very same bytes)."""
    borrows = []
    for name, mut in entry.arrays:
        t = values[name]
        if type(t) is Partition:
            t = t.tensor if t._source is None else t._source
        lo, hi = t.range
        if hi > lo:
            borrows.append(as_borrow((lo, hi, mut, t, name)))
    return borrows


def tensor_mut(info) -> dict:
    """Parameter name -> is a tensor passed as it written to (``is_mut`` of a tensor; a partition
    always is), worked out once per kernel: what the start path marks each borrow with."""
    table = info.tensor_mut
    if table is None:
        table = info.tensor_mut = {name: is_mut(info, name, None) for name in info.names}
    return table


def is_mut(info, name, value) -> bool:
    role = info.roles.get(name)
    if role == "mut" or isinstance(value, Partition):
        return True
    # plain cuTile kernels do not say what they write: every array may be written, except
    # those the checker proves are only read (shared: one input may be passed twice)
    if info.kdef.kind != "cutile":
        return False
    return name not in read_only_parameters(info.kdef)


# --- the launch-level rules (cutile_lab.checking.launch_rules) ----------------------------------

def arg_descs(info, values) -> list:
    """``ArgDesc``s of the real arguments for ``check_launch`` (for a plain cuTile kernel, an
    array it may write is ``"mut"``)."""
    out = []
    plain = info.kdef.kind == "cutile"
    for name in info.names:
        if name not in values:
            continue
        v = values[name]
        role = info.roles.get(name, "shared")
        if isinstance(v, (Tensor, Partition)):
            t = v.tensor if isinstance(v, Partition) else v
            mut = role == "mut" or (plain and is_mut(info, name, v))
            out.append(ArgDesc(
                name, "mut" if mut else "shared", t.ptr, t.shape, t.strides,
                t.itemsize, t.dtype.name, t.id,
                v.tile_shape if isinstance(v, Partition) else None, v.origin))
        else:
            out.append(ArgDesc(name, "scalar", value=v))
    return out


def launch_rules(info, values, where: Span | None, consts, grid=None,
                 globals_=None) -> list[Diagnostic]:
    """The checker's launch-level rules (tile-language kernels; plain cuTile kernels declare no
    roles or shapes to check against, so only their aliasing and their ``grid`` are checked)."""
    if info.kdef.kind == "cutile":
        return check_plain_launch(info.kdef, arg_descs(info, values), where,
                                  grid=tuple(grid) if grid is not None else None,
                                  globals_=globals_)
    if info.kdef.kind != "tile":
        return []
    descs = arg_descs(info, values)
    diags = list(check_launch(info.kdef, descs, where, None,
                              consts=consts or None))
    if not any(d.is_error for d in diags):
        diags += padded_reads(info.kdef, descs, where)
    return diags


def tile_grid(info, op, values) -> list[Diagnostic]:
    """TL122 for a tile kernel launched with an explicit ``grid=`` (the rule is the checker's
    ``check_tile_grid``; the partitions' grid is the one ``grid_of`` would give)."""
    from cutile_lab.compiling.lowering import is_persistent, tile_order
    part = next((v for v in (values.get(n) for n in info.names) if isinstance(v, Partition)),
                None)
    partitions = None
    if part is not None:
        partitions = (math.prod(part.grid),) if tile_order(info.kdef) is not None \
            else tuple(part.grid)
    return check_tile_grid(info.kdef, op.grid, partitions, op.where,
                           persistent=is_persistent(info.kdef),
                           globals_=getattr(op.kernel, "globals", None))


def warn(diags) -> None:
    """Warning diagnostics of a launch that goes ahead, as ``LaunchWarning``s at its line
    (once per new argument layout: a repeated launch reuses its checked entry)."""
    for d in diags:
        if d.severity == "warning":
            span = d.span
            warnings.warn_explicit(LaunchWarning(d), LaunchWarning,
                                   span.filename if span else "<launch>",
                                   span.line if span else 0)


__all__ = ["raise_moved", "check_in_flight", "borrows_of", "as_borrow", "is_mut", "tensor_mut",
           "arg_descs", "launch_rules", "tile_grid", "warn", "STATS", "MEASURE"]
