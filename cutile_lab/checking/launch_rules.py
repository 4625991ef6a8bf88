"""Launch-level rules: run on the host before every launch, over plain descriptions of the
arguments (``ArgDesc``), independent of any device API. The runtime builds the descriptions,
calls ``check_launch`` and refuses the launch on errors. Moves and in-flight borrows are asked of
a ``BorrowView`` (``borrows``) when the caller has one: the catalog's simulated host passes its
``BorrowState``; the runtime checks moves on the argument objects and in-flight work against its
byte-range registry itself (``runtime/ownership.py``), so it passes none.

The checks are cheap (a few comparisons per argument, a pairwise byte-range test over a handful
of arguments); diagnostics, and the source reading that places their labels, are only built when
something is wrong.

Where it lives: ``launch_args`` describes the arguments (``ArgDesc``) and their bytes,
``borrows`` words the ownership diagnostics (``use_diagnostic``), ``launch_report`` turns the problems found here into
diagnostics; this module holds the rules (TL100-TL120 at launch; for a plain cuTile kernel,
whose signature declares no roles, the aliasing rules and its grid (TL121):
``check_plain_launch``).
"""
from __future__ import annotations

import ast
from typing import Callable, Mapping, Sequence

from cutile_lab.checking.borrows import BorrowState, BorrowView, use_diagnostic
from cutile_lab.checking.launch_args import ArgDesc, dtype_name, overlaps_itself, views_overlap
from cutile_lab.checking.launch_report import LaunchReporter
from cutile_lab.diagnostics import Diagnostic, Label, Span
from cutile_lab.language.frontend import KernelDef

__all__ = ["ArgDesc", "BorrowState", "check_launch", "check_plain_launch", "check_tile_grid",
           "argument_problems",
           "alias_problems",
           "borrow_problems", "padded_reads", "views_overlap"]

# --- the launch check ---------------------------------------------------------------------------

class _Plan:
    """Per kernel, computed once: the parameters as plain tuples for the hot loop."""

    __slots__ = ("params", "by_name", "required", "rows", "consts")

    def __init__(self, kdef: KernelDef):
        self.params = list(kdef.params)
        self.by_name = {p.name: p for p in self.params}
        self.required = [p.name for p in self.params if p.role in ("mut", "shared", "scalar")]
        # (param, name, role, dtype name or None, shape)
        self.rows = [(p, p.name, p.role, p.dtype.name if p.dtype is not None else None,
                      tuple(p.shape)) for p in self.params]
        self.consts = [p for p in self.params if p.role == "const"]


def _plan(kdef: KernelDef) -> _Plan:
    plan = kdef.__dict__.get("_cl_launch_plan")
    if plan is None or plan.params != kdef.params:
        plan = _Plan(kdef)
        try:
            kdef._cl_launch_plan = plan
        except AttributeError:
            pass
    return plan


def check_launch(kdef: KernelDef, args: Sequence[ArgDesc], call_site: Span | None = None,
                 borrows: BorrowView | None = None, *, consts: Mapping[str, int] | None = None,
                 source_lookup: Callable[[str, int], str] | None = None) -> list[Diagnostic]:
    """Every launch-level diagnostic for launching ``kdef`` with ``args``, errors first.

    ``call_site`` (the user's launch line) is the primary span; ``consts`` are const generics
    given explicitly. The common case, a correct launch, costs a few microseconds: the work is
    a pass over the arguments and a byte-range test per (output, other array) pair; messages,
    and the reading of the user's line that places their labels, are only built on a problem."""
    plan = _plan(kdef)
    problems: list[tuple] = []      # (kind, payload...) turned into diagnostics at the end
    by_name = _named_arguments(plan, args, problems)
    bound = _scalar_consts(plan, by_name, consts)
    arrays = _array_arguments(plan, by_name, bound, problems)
    for p in plan.consts:
        if p.name not in bound and p.default is None:
            problems.append(("unbound", p))
    problems.extend(alias_problems(arrays))
    problems.extend(borrow_problems(arrays, borrows, call_site))
    if not problems:
        return []
    return LaunchReporter(kdef, call_site, source_lookup, by_name, bound).report(problems)


def check_plain_launch(kdef: KernelDef, args: Sequence[ArgDesc], call_site: Span | None = None,
                       *, grid: Sequence[int] | None = None, globals_: Mapping | None = None,
                       source_lookup: Callable[[str, int], str] | None = None
                       ) -> list[Diagnostic]:
    """TL100/TL101 for a plain cuTile kernel. Its signature declares nothing to check, but it is
    compiled on the same promise as a tile kernel, that no array parameter aliases another; so
    two array arguments that share a byte where one of them may be written (role ``"mut"``:
    every array the checker does not prove read-only) are refused. TL121: a ``grid`` with more
    than one block along an axis whose block id the kernel never reads, where it writes."""
    problems = alias_problems([a for a in args if a.is_array])
    if grid is not None:
        from cutile_lab.checking.cutile_index import grid_axes_told_apart
        used, writes = grid_axes_told_apart(kdef, globals_)
        if writes and used is not None:
            problems.extend(("grid_axis", a, n) for a, n in enumerate(grid)
                            if n > 1 and a not in used)
    if not problems:
        return []
    by_name = {a.name: a for a in args}
    return LaunchReporter(kdef, call_site, source_lookup, by_name, {}).report(problems)


def check_tile_grid(kdef: KernelDef, given: Sequence[int], partitions: Sequence[int] | None,
                    call_site: Span | None = None, *, persistent: bool = False,
                    globals_: Mapping | None = None) -> list[Diagnostic]:
    """TL122: a tile kernel launched with an explicit ``grid=`` other than its partitions' (one
    instance per tile; for a persistent schedule, any number of instances along one axis), while
    its own-tile stores are checked code: instances that differ only along an extra axis store
    the same tile, and tiles no instance reaches are never written. A kernel whose every write
    is in ``with unsafe():`` chooses its grid itself (the puzzles' split-K over a third axis)."""
    def trimmed(g):
        g = list(g)
        while len(g) > 1 and g[-1] == 1:
            g.pop()
        return tuple(g)
    if persistent:
        if all(n == 1 for n in tuple(given)[1:]):
            return []
    elif partitions is not None and trimmed(given) == trimmed(partitions):
        return []
    from cutile_lab.checking import context
    ctx = context.KernelContext(kdef, globals_)
    if not any(not info.in_unsafe for info, _ in context.own_store_calls(ctx)):
        return []
    want = "one axis (any number of instances)" if persistent else \
        f"{tuple(partitions)}, one instance per tile of the outputs' partitions"
    return [Diagnostic(
        "TL122", "error", f"`{kdef.name}` is launched with grid={tuple(given)}, but its grid is "
                          f"{want}", call_site,
        help="leave out `grid=`: a tile kernel's grid comes from the partitions of its `Mut` "
             "outputs (choose the tile shape to change it)",
        notes=("each instance stores its own tile (`z.store(t)`): instances that differ only "
               "along another axis would store the same tile, and tiles no instance reaches "
               "would keep whatever the memory held",))]


def _named_arguments(plan: _Plan, args: Sequence[ArgDesc], problems: list) -> dict[str, ArgDesc]:
    """Each argument by the parameter it binds; one given twice or binding no parameter, and a
    required parameter left out, are problems."""
    by_name: dict[str, ArgDesc] = {}
    pnames = plan.by_name
    for a in args:
        if a.name in pnames and a.name not in by_name:
            by_name[a.name] = a
        else:
            problems.append(("unexpected", a))
    if len(by_name) < len(plan.required):
        for name in plan.required:
            if name not in by_name:
                problems.append(("missing", name))
    return by_name


def _scalar_consts(plan: _Plan, by_name: dict[str, ArgDesc],
                   consts: Mapping[str, int] | None) -> dict[str, tuple[int, str, str]]:
    """The const generics bound so far: given explicitly, or by a scalar ``Const`` argument.
    const generic -> (value, how it was bound, the name of the argument that bound it)."""
    bound: dict[str, tuple[int, str, str]] = {}
    if consts:
        for k, v in consts.items():
            bound[k] = (v, "given explicitly", "")
    for p in plan.consts:
        a = by_name.get(p.name)
        if a is not None and isinstance(a.value, int) and p.name not in bound:
            bound[p.name] = (a.value, "arg", p.name)
    return bound


def _array_arguments(plan: _Plan, by_name: dict[str, ArgDesc], bound: dict,
                     problems: list) -> list[ArgDesc]:
    """The array arguments, each checked against its parameter (kind, dtype, rank, partition,
    every dimension: a number must match; a const generic is bound by its first use and must
    agree after)."""
    grids = None            # (the first Mut argument, its grid), to compare the others with
    arrays: list[ArgDesc] = []
    for p, name, role, want_dtype, shape in plan.rows:
        a = by_name.get(name)
        if a is None:
            continue
        if role != "mut" and role != "shared":
            if a.role != "scalar":
                problems.append(("kind", p, a))
            continue
        if a.role == "scalar":
            problems.append(("kind", p, a))
            continue
        arrays.append(a)
        if want_dtype is not None and a.dtype != want_dtype and a.dtype and \
                dtype_name(a.dtype) != want_dtype:
            problems.append(("dtype", p, a))
        if len(a.shape) != len(shape):
            problems.append(("rank", p, a))
            continue
        if role == "mut":
            if a.partition_tile is None:
                problems.append(("unpartitioned", p, a))
                continue
            if len(a.partition_tile) != len(shape):
                problems.append(("tile_rank", p, a))
                continue
            dims = a.partition_tile
            grids = _grid_problems(p, a, grids, problems)
        else:
            if a.partition_tile is not None:
                problems.append(("partitioned", p, a))
            dims = a.shape
        for axis, want_d in enumerate(shape):       # the declared dims (inline: the hot path)
            if want_d is None:
                continue
            got_d = dims[axis]
            if want_d.__class__ is int:
                if want_d != got_d:
                    problems.append(("tile" if role == "mut" else "dim", p, a, axis))
            else:
                prev = bound.get(want_d)
                if prev is None:
                    bound[want_d] = (got_d, role, name)
                elif prev[0] != got_d:
                    problems.append(("generic", p, a, axis, want_d, got_d, prev))
    return arrays


def _grid_problems(p, a: ArgDesc, grids, problems: list):
    """A partition whose tiles do not divide the tensor (ragged), or whose grid differs from the
    first partition's; returns the grid the next partitions are compared with. (The grid is
    built in one pass; the list of ragged axes only when some axis is ragged.)"""
    ashape, tile = a.shape, a.partition_tile
    if len(tile) == 1:
        s_, t_ = ashape[0], tile[0]
        grid = (-(-s_ // t_),) if t_ else (0,)
        ragged = t_ and s_ % t_
    else:
        grid = tuple(-(-s_ // t_) if t_ else 0 for s_, t_ in zip(ashape, tile))
        ragged = any(t_ and s_ % t_ for s_, t_ in zip(ashape, tile))
    if ragged:
        problems.append(("ragged", p, a,
                         [ax for ax, (s_, t_) in enumerate(zip(ashape, tile)) if t_ and s_ % t_]))
    if grids is None:
        return (a, grid)
    if grids[1] != grid and grids[0] is not None:
        problems.append(("grid", grids, (a, grid)))
        return (None, grid)
    return grids


def alias_problems(arrays: Sequence[ArgDesc]) -> list[tuple]:
    """("alias", a, b) for each pair of array arguments where some byte an output writes is
    also reachable through the other; ("self_alias", a) for an output two of whose elements
    share a byte (its tiles would write each other's memory)."""
    problems = [("self_alias", a) for a in arrays if a.role == "mut" and overlaps_itself(a)]
    n = len(arrays)
    if n > 1:
        ext = [a.extent() for a in arrays]
        for i in range(n):
            a = arrays[i]
            alo, ahi = ext[i]
            for j in range(i + 1, n):
                b = arrays[j]
                if a.role != "mut" and b.role != "mut":
                    continue
                blo, bhi = ext[j]
                if a.ptr == 0 and b.ptr == 0:
                    same = a.tensor_id is not None and a.tensor_id == b.tensor_id
                elif ahi <= blo or bhi <= alo or alo == ahi or blo == bhi:
                    continue
                else:
                    same = views_overlap(a, b)
                if same:
                    problems.append(("alias", a, b))
    return problems


def borrow_problems(arrays: Sequence[ArgDesc], borrows: BorrowView | None,
                    call_site: Span | None) -> list[tuple]:
    """("borrow", a, diagnostic) for each array argument the borrow view refuses (moved, or
    in-flight work conflicting with it)."""
    problems = []
    if borrows is not None and borrows.active():
        for a in arrays:
            if a.tensor_id is None:
                continue
            moved, moved_at = borrows.moved_at(a.tensor_id)
            d = use_diagnostic("launch_mut" if a.role == "mut" else "launch", call_site, a.name,
                               moved=moved and a.partition_tile is None, moved_at=moved_at,
                               borrows=borrows.borrows(a.tensor_id))
            if d is not None:
                problems.append(("borrow", a, d))
    return problems


# --- TL120: tiles that read padding ------------------------------------------------------------

_LIKE_READS: dict[int, tuple] = {}


def _like_reads(kdef: KernelDef) -> list[tuple[str, str, ast.Call]]:
    """``(shared input, Mut output, call)`` of every ``load_tile_like(x, z)`` in the kernel
    whose two arguments are the parameters themselves (remembered per kernel definition)."""
    held = _LIKE_READS.get(id(kdef))
    if held is not None and held[0] is kdef:
        return held[1]
    roles = {p.name: p.role for p in kdef.params}
    found = []
    for n in ast.walk(kdef.node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) \
                and n.func.id == "load_tile_like" and len(n.args) >= 2 \
                and all(isinstance(a, ast.Name) for a in n.args[:2]):
            x, z = n.args[0].id, n.args[1].id
            if roles.get(x) == "shared" and roles.get(z) == "mut":
                found.append((x, z, n))
    if len(_LIKE_READS) > 512:
        _LIKE_READS.clear()
    _LIKE_READS[id(kdef)] = (kdef, found)
    return found


def padded_reads(kdef: KernelDef, args: Sequence[ArgDesc],
                 call_site: Span | None = None) -> list[Diagnostic]:
    """TL120 (warning): ``load_tile_like(x, z)`` where the shared input ``x`` is shorter than
    the partitioned output ``z`` along some axis, so the tiles of ``z`` past ``x``'s end read
    padding instead of data (a launch the other rules accept, whose result would silently be
    wrong). One diagnostic per (input, output) pair, at the launch line, with a label at the
    read in the kernel."""
    reads = _like_reads(kdef)
    if not reads:
        return []
    by_name = {a.name: a for a in args}
    out: list[Diagnostic] = []
    seen: set[tuple[str, str]] = set()
    for x_name, z_name, call in reads:
        x, z = by_name.get(x_name), by_name.get(z_name)
        if x is None or z is None or (x_name, z_name) in seen or z.partition_tile is None \
                or len(x.shape) != len(z.shape) or len(z.partition_tile) != len(z.shape):
            continue
        short = [(ax, xs, zs, t) for ax, (xs, zs, t) in
                 enumerate(zip(x.shape, z.shape, z.partition_tile)) if t and xs < zs]
        if not short:
            continue
        seen.add((x_name, z_name))
        ax, xs, zs, t = short[0]
        tiles = -(-zs // t)
        first = xs // t                  # the first tile that reaches past x's end
        which = f"tile {first}" if first == tiles - 1 else f"tiles {first} to {tiles - 1}"
        axis = f" along axis {ax}" if len(z.shape) > 1 else ""
        noun = "elements" if len(z.shape) == 1 else "rows" if ax == 0 else "columns" \
            if ax == len(z.shape) - 1 else "entries"
        labels = (Label(kdef.source.span(call),
                        f"`{x_name}` is read in the shape of `{z_name}`'s tile here"),)
        out.append(Diagnostic(
            "TL120", "warning",
            f"`{x_name}` has {xs} {noun}{axis} but the partitioned `{z_name}` has {zs}: "
            f"{which} (of {tiles}) of `{z_name}` read past the end of `{x_name}` and get "
            "padding, not data", call_site, labels,
            help=f"pass an `{x_name}` that covers `{z_name}` (shape {tuple(z.shape)}), or "
                 f"partition only the part of `{z_name}` that `{x_name}` covers",
            notes=("a load past the end of a tensor is padded (masked), so no error stops "
                   "it: the result is just wrong",)))
    return out


def argument_problems(kdef: KernelDef, given: Sequence[str], call_site: Span | None = None,
                      *, extra_positional: int = 0,
                      source_lookup: Callable[[str, int], str] | None = None
                      ) -> list[Diagnostic]:
    """TL117 for a call's argument *names* alone (before anything about the values is known):
    more positional arguments than parameters, a name given twice or matching no parameter, and
    a required parameter left out."""
    plan = _plan(kdef)
    problems: list[tuple] = [("extra", extra_positional)] if extra_positional else []
    seen: dict[str, ArgDesc] = {}
    for name in given:
        a = ArgDesc(name, "scalar")
        if name in plan.by_name and name not in seen:
            seen[name] = a
        else:
            problems.append(("unexpected", a))
    problems.extend(("missing", name) for name in plan.required if name not in seen)
    if not problems:
        return []
    return LaunchReporter(kdef, call_site, source_lookup, seen, {}).report(problems)

