"""Launch-level rules: run on the host before every launch, over plain descriptions of the
arguments (``ArgDesc``), independent of any device API. The runtime builds the descriptions,
calls ``check_launch`` and refuses the launch on errors; it keeps a ``BorrowState`` up to date
(moves into partitions, borrows by in-flight work, releases when work completes) and asks it
before every host access.

The checks are cheap (a few comparisons per argument, a pairwise byte-range test over a handful
of arguments); diagnostics, and the source reading that places their labels, are only built when
something is wrong.
"""
from __future__ import annotations

import ast
import linecache
import threading
from dataclasses import dataclass
from typing import Callable, Literal, Mapping, Sequence

from cutile_lab.diagnostics import CODES, Diagnostic, Label, Span
from cutile_lab.language.dtypes import DTYPES, dtype_by_name
from cutile_lab.language.frontend import KernelDef

Role = Literal["mut", "shared", "scalar"]
Use = Literal["read", "write", "launch", "launch_mut"]


@dataclass(slots=True)
class ArgDesc:
    """One launch argument, described without any device API.

    ``name`` is the kernel parameter it is bound to; ``ptr`` the address of element 0 (of the
    view), ``strides`` in elements (negative allowed), ``itemsize`` in bytes; ``tensor_id``
    identifies the owning tensor for the borrow state; ``partition_tile`` is the tile shape when
    the argument is a partition; ``origin`` is where the user created it (a label, if given);
    ``value`` is a scalar argument's value (it binds a ``Const`` parameter)."""

    name: str
    role: Role
    ptr: int = 0
    shape: tuple = ()
    strides: tuple = ()
    itemsize: int = 0
    dtype: str = ""
    tensor_id: int | None = None
    partition_tile: tuple | None = None
    origin: Span | None = None
    value: object = None

    @property
    def is_array(self) -> bool:
        return self.role in ("mut", "shared")

    def extent(self) -> tuple[int, int]:
        """The bytes ``[lo, hi)`` the view can touch; ``lo == hi`` when it is empty."""
        lo = hi = self.ptr
        for s, st in zip(self.shape, self.strides):
            if s <= 0:
                return self.ptr, self.ptr
            d = (s - 1) * st * self.itemsize
            if d < 0:
                lo += d
            else:
                hi += d
        if len(self.strides) < len(self.shape):
            # strides unknown: assume a contiguous row-major block
            n = 1
            for s in self.shape:
                if s <= 0:
                    return self.ptr, self.ptr
                n *= s
            return self.ptr, self.ptr + n * self.itemsize
        return lo, hi + self.itemsize


def views_overlap(a: ArgDesc, b: ArgDesc, budget: int = 4000) -> bool:
    """Whether some byte of view ``a`` is also a byte of view ``b``.

    Disjoint byte ranges settle it; otherwise the question is an integer equation over the
    index vectors of both views (``Σ i·sa - Σ j·sb`` must land within an element's width of
    ``ptr_b - ptr_a``), solved exactly by a bounded search, largest strides first. Interleaved
    views (``x[::2]`` and ``x[1::2]``) and column blocks of one matrix come out disjoint; when the
    search runs past ``budget`` steps the answer is "overlaps", which is the safe side."""
    alo, ahi = a.extent()
    blo, bhi = b.extent()
    if alo == ahi or blo == bhi or ahi <= blo or bhi <= alo:
        return False
    if len(a.strides) < len(a.shape) or len(b.strides) < len(b.shape):
        return True
    # variables: a's indices (coefficient +stride) and b's (coefficient -stride), in bytes
    terms = []
    for s, st in zip(a.shape, a.strides):
        if s > 1 and st != 0:
            terms.append((st * a.itemsize, s - 1))
    for s, st in zip(b.shape, b.strides):
        if s > 1 and st != 0:
            terms.append((-st * b.itemsize, s - 1))
    # normalise to positive coefficients: c*x with x in [0, n] == |c|*(n - x) + c*n
    target_lo = b.ptr - a.ptr - a.itemsize + 1   # Σ must be in [target_lo, target_hi]
    target_hi = b.ptr - a.ptr + b.itemsize - 1
    coeffs = []
    for c, n in terms:
        if c < 0:
            target_lo -= c * n
            target_hi -= c * n
            c = -c
        coeffs.append((c, n))
    coeffs.sort(key=lambda t: -t[0])
    # suffix sums of the largest value the remaining terms can add
    rest = [0] * (len(coeffs) + 1)
    for k in range(len(coeffs) - 1, -1, -1):
        rest[k] = rest[k + 1] + coeffs[k][0] * coeffs[k][1]
    steps = [0]

    def search(k: int, lo: int, hi: int) -> bool:
        steps[0] += 1
        if steps[0] > budget:
            raise _Budget
        if hi < 0 or lo > rest[k]:
            return False
        if k == len(coeffs):
            return lo <= 0 <= hi
        c, n = coeffs[k]
        # x must satisfy lo - rest[k+1] <= c*x <= hi
        x_min = max(0, -((-(lo - rest[k + 1])) // c))
        x_max = min(n, hi // c) if hi >= 0 else -1
        for x in range(x_min, x_max + 1):
            if search(k + 1, lo - c * x, hi - c * x):
                return True
        return False

    try:
        return search(0, target_lo, target_hi)
    except _Budget:
        return True


class _Budget(Exception):
    pass


# --- the borrow state ---------------------------------------------------------------------------

@dataclass
class _Borrow:
    key: object
    description: str
    where: Span | None
    mutable: bool


def _op_key(op) -> object:
    try:
        hash(op)
        return op
    except TypeError:
        return ("id", id(op))


def _describe(op, description: str | None) -> str:
    if description:
        return description
    if isinstance(op, str):
        return op
    return getattr(op, "description", None) or getattr(op, "name", None) or repr(op)


class BorrowState:
    """Who owns each tensor right now, as the runtime sees it.

    The runtime reports: ``moved(tensor_id, where)`` when a tensor is moved into a partition,
    ``restored(tensor_id)`` when ownership comes back (the launch's result, an un-partition),
    ``borrow_mut``/``borrow_shared(tensor_id, op, where)`` when it queues work that writes/reads
    the tensor, and ``release(op)`` when that work completes. It asks ``check_use(tensor_id, how,
    where)`` before touching a tensor: ``how`` is ``'read'``/``'write'`` for host access,
    ``'launch'`` for a launch that reads it and ``'launch_mut'`` for one that writes it.
    Thread-safe (completion callbacks may run on another thread)."""

    def __init__(self) -> None:
        # Reentrant: a garbage collection inside a locked section can run a tensor's __del__,
        # which reports back here (``restored``) on the same thread.
        self._lock = threading.RLock()
        self._moved: dict[int, Span | None] = {}
        self._borrows: dict[int, list[_Borrow]] = {}
        self._by_op: dict[object, set[int]] = {}

    # updates

    def moved(self, tensor_id: int, where: Span | None = None) -> None:
        with self._lock:
            self._moved[tensor_id] = where

    def restored(self, tensor_id: int) -> None:
        with self._lock:
            self._moved.pop(tensor_id, None)

    def borrow_mut(self, tensor_id: int, op, where: Span | None = None,
                   description: str | None = None) -> None:
        self._borrow(tensor_id, op, where, description, True)

    def borrow_shared(self, tensor_id: int, op, where: Span | None = None,
                      description: str | None = None) -> None:
        self._borrow(tensor_id, op, where, description, False)

    def _borrow(self, tensor_id, op, where, description, mutable) -> None:
        key = _op_key(op)
        b = _Borrow(key, _describe(op, description), where, mutable)
        with self._lock:
            self._borrows.setdefault(tensor_id, []).append(b)
            self._by_op.setdefault(key, set()).add(tensor_id)

    def release(self, op) -> None:
        """The work ``op`` has completed: its borrows end."""
        key = _op_key(op)
        with self._lock:
            for tid in self._by_op.pop(key, ()):
                left = [b for b in self._borrows.get(tid, ()) if b.key != key]
                if left:
                    self._borrows[tid] = left
                else:
                    self._borrows.pop(tid, None)

    def clear(self) -> None:
        with self._lock:
            self._moved.clear()
            self._borrows.clear()
            self._by_op.clear()

    # queries

    def is_moved(self, tensor_id: int) -> bool:
        return tensor_id in self._moved

    def in_flight(self, tensor_id: int) -> list[tuple[str, bool, Span | None]]:
        """(description, mutable, where launched) of the work still using ``tensor_id``."""
        return [(b.description, b.mutable, b.where) for b in self._borrows.get(tensor_id, ())]

    def check_use(self, tensor_id: int | None, how: Use, where: Span | None = None,
                  name: str | None = None, *, allow_moved: bool = False,
                  param: str | None = None) -> Diagnostic | None:
        """A diagnostic if using ``tensor_id`` this way now would break ownership, else None.

        ``name``: the user's name of the tensor; ``param``: the kernel parameter it is passed
        as, for a launch (the message names both when they differ)."""
        if tensor_id is None or (not self._moved and not self._borrows):
            return None
        with self._lock:
            moved = tensor_id in self._moved
            moved_at = self._moved.get(tensor_id)
            borrows = list(self._borrows.get(tensor_id, ()))
        what = f"`{name}`" if name else "this tensor"
        if param and param != name:
            what = f"`{name}` (as `{param}`)" if name else f"the argument `{param}`"
        if moved and not allow_moved:
            verb = {"read": "read on the host", "write": "written on the host",
                    "launch": "passed to a launch", "launch_mut": "passed to a launch"}.get(
                        how, "used")
            labels = (Label(moved_at, f"{what} was moved into a partition here"),) \
                if moved_at is not None else ()
            return Diagnostic(
                "TL102", "error", f"{what} was moved into a partition, so it cannot be {verb} "
                                  "directly", where, labels,
                help="use the partition instead, or take the tensor back with "
                     "`p.unpartition()`; to keep the tensor usable, borrow it with "
                     "`t.partition_mut(...)` instead of moving it",
                notes=("a partition owns its tensor's memory: each of its tiles belongs to one "
                       "kernel instance, so nothing else may touch the tensor meanwhile",))
        writer = next((b for b in borrows if b.mutable), None)
        if writer is not None:
            label = (Label(writer.where, f"`{writer.description}` was launched here and may "
                                         "still be running"),) if writer.where else ()
            if how in ("read", "write"):
                return Diagnostic(
                    "TL103", "error", f"{what} cannot be {'read' if how == 'read' else 'written'}"
                                      f" on the host: `{writer.description}` is still writing "
                                      "it", where, label,
                    help="wait for that work first (call `.sync()` on it, or `await` it), then "
                         "access the tensor",
                    notes=("until the work completes, the tensor may hold a mix of old and new "
                           "tiles",))
            return Diagnostic(
                "TL104", "error", f"{what} cannot be passed to this launch: `{writer.description}`"
                                  ", still in flight, is writing it", where, label,
                help="wait for that work first, or chain the two with `.then(...)` so that they "
                     "run in order")
        if how in ("write", "launch_mut"):
            reader = next((b for b in borrows if not b.mutable), None)
            if reader is not None:
                label = (Label(reader.where, f"`{reader.description}` was launched here and may "
                                             "still be running"),) if reader.where else ()
                action = "written on the host" if how == "write" else \
                    "passed as an output of this launch"
                return Diagnostic(
                    "TL105", "error", f"{what} cannot be {action}: `{reader.description}`, still "
                                      "in flight, is reading it", where, label,
                    help="wait for that work first, or chain the two with `.then(...)`",
                    notes=("changing the tensor now would change what the running work reads",))
        return None


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


def _dtype_name(name: str) -> str:
    if name in DTYPES:
        return name
    d = dtype_by_name(name)
    if d is not None:
        return d.name
    from cutile_lab.language.dtypes import dtype_of_numpy
    d = dtype_of_numpy(name)
    return d.name if d is not None else name


def check_launch(kdef: KernelDef, args: Sequence[ArgDesc], call_site: Span | None = None,
                 borrows: BorrowState | None = None, *, consts: Mapping[str, int] | None = None,
                 source_lookup: Callable[[str, int], str] | None = None) -> list[Diagnostic]:
    """Every launch-level diagnostic for launching ``kdef`` with ``args``, errors first.

    ``call_site`` (the user's launch line) is the primary span; ``consts`` are const generics
    given explicitly. The common case, a correct launch, costs a few microseconds: the work is
    a pass over the arguments and a byte-range test per (output, other array) pair; messages,
    and the reading of the user's line that places their labels, are only built on a problem."""
    plan = _plan(kdef)
    problems: list[tuple] = []      # (kind, payload...) turned into diagnostics at the end
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
    # const generic -> (value, how it was bound: "", or the name of the argument that bound it)
    bound: dict[str, tuple[int, str, str]] = {}
    if consts:
        for k, v in consts.items():
            bound[k] = (v, "given explicitly", "")
    for p in plan.consts:
        a = by_name.get(p.name)
        if a is not None and isinstance(a.value, int) and p.name not in bound:
            bound[p.name] = (a.value, "arg", p.name)
    grids = None
    arrays: list[ArgDesc] = []
    for p, name, role, want_dtype, shape in plan.rows:
        a = by_name.get(name)
        if a is None:
            continue
        if role == "mut" or role == "shared":
            if a.role == "scalar":
                problems.append(("kind", p, a))
                continue
            arrays.append(a)
            if want_dtype is not None and a.dtype != want_dtype and a.dtype and \
                    _dtype_name(a.dtype) != want_dtype:
                problems.append(("dtype", p, a))
            ashape = a.shape
            if len(ashape) != len(shape):
                problems.append(("rank", p, a))
                continue
            tile = a.partition_tile
            if role == "mut":
                if tile is None:
                    problems.append(("unpartitioned", p, a))
                    continue
                if len(tile) != len(shape):
                    problems.append(("tile_rank", p, a))
                    continue
                dims = tile
                ragged = False
                for s_, t_ in zip(ashape, tile):
                    if t_ and s_ % t_:
                        ragged = True
                if ragged:
                    problems.append(("ragged", p, a, [ax for ax, (s_, t_) in
                                                      enumerate(zip(ashape, tile))
                                                      if t_ and s_ % t_]))
                grid = tuple(-(-s_ // t_) if t_ else 0 for s_, t_ in zip(ashape, tile))
                if grids is None:
                    grids = (a, grid)
                elif grids[1] != grid and grids[0] is not None:
                    problems.append(("grid", grids, (a, grid)))
                    grids = (None, grid)
            else:
                if tile is not None:
                    problems.append(("partitioned", p, a))
                dims = ashape
            for axis, want_d in enumerate(shape):
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
        elif a.role != "scalar":
            problems.append(("kind", p, a))
    for p in plan.consts:
        if p.name not in bound and p.default is None:
            problems.append(("unbound", p))
    problems.extend(alias_problems(arrays))
    problems.extend(borrow_problems(arrays, borrows, call_site))
    if not problems:
        return []
    return _Reporter(kdef, call_site, source_lookup, by_name, bound).report(problems)


def alias_problems(arrays: Sequence[ArgDesc]) -> list[tuple]:
    """("alias", a, b) for each pair of array arguments where some byte an output writes is
    also reachable through the other."""
    problems = []
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


def borrow_problems(arrays: Sequence[ArgDesc], borrows: BorrowState | None,
                    call_site: Span | None) -> list[tuple]:
    """("borrow", a, diagnostic) for each array argument the borrow state refuses (moved, or
    in-flight work conflicting with it)."""
    problems = []
    if borrows is not None and (borrows._moved or borrows._borrows):
        for a in arrays:
            if a.tensor_id is None:
                continue
            d = borrows.check_use(a.tensor_id, "launch_mut" if a.role == "mut" else "launch",
                                  call_site, a.name, allow_moved=a.partition_tile is not None)
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


# --- turning problems into diagnostics ------------------------------------------------------------

def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _fmt_grid(g) -> str:
    return str(g[0]) if len(g) == 1 else " x ".join(str(n) for n in g)


def _fmt_tuple(t) -> str:
    t = tuple(t)
    return f"({t[0]},)" if len(t) == 1 else "(" + ", ".join(str(x) for x in t) + ")"


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
    return _Reporter(kdef, call_site, source_lookup, seen, {}).report(problems)


class _Reporter:
    def __init__(self, kdef, call_site, lookup, by_name, bound):
        self.kdef = kdef
        self.call_site = call_site
        self.lookup = lookup or (lambda f, n: linecache.getline(f, n).rstrip("\r\n"))
        self.by_name = by_name
        self.bound = bound
        self._spans: dict[str, tuple[Span, str]] | None = None

    # where each argument is written in the user's launch line

    def arg_spans(self) -> dict[str, tuple[Span, str]]:
        if self._spans is None:
            try:
                self._spans = _argument_spans(self.kdef, self.call_site, self.lookup)
            except Exception:   # reading the user's line is a nicety, never a failure
                self._spans = {}
        return self._spans

    def arg_text(self, name: str) -> str:
        hit = self.arg_spans().get(name)
        return hit[1] if hit else name

    def arg_label(self, a: ArgDesc, message: str, origin: bool = False) -> list[Label]:
        """A label on the argument in the launch line; with ``origin``, another where the
        tensor was made (for shape, dtype and overlap problems)."""
        hit = self.arg_spans().get(a.name)
        labels = []
        if hit is not None:
            labels.append(Label(hit[0], message))
        if origin and a.origin is not None and (self.call_site is None or a.origin.line !=
                                     self.call_site.line or a.origin.filename !=
                                     self.call_site.filename):
            labels.append(Label(a.origin, f"`{self.arg_text(a.name)}` comes from here"))
        return labels

    @property
    def primary(self) -> Span | None:
        """The kernel's name in the launch expression when it can be found (the arguments get
        their own labels), else the whole call site."""
        hit = self.arg_spans().get(CALLEE)
        return hit[0] if hit is not None and len(self.arg_spans()) > 1 else self.call_site

    def diag(self, code, message, labels=(), help=None, notes=()) -> Diagnostic:
        # the same tensor passed twice gets one "comes from here", not two
        return Diagnostic(code, CODES[code].severity, message, self.primary,
                          tuple(dict.fromkeys(labels)), help, tuple(notes))

    def report(self, problems) -> list[Diagnostic]:
        from cutile_lab.diagnostics import sort_diagnostics
        out = []
        for prob in problems:
            d = getattr(self, "_" + prob[0])(*prob[1:])
            if d is not None:
                out.append(d)
        return sort_diagnostics(out)

    # one method per problem kind

    def _unexpected(self, a: ArgDesc):
        names = ", ".join(f"`{p.name}`" for p in self.kdef.params)
        dup = a.name in self.by_name
        msg = f"`{a.name}` is given twice" if dup else \
            f"`{self.kdef.name}` has no parameter `{a.name}`"
        return self.diag("TL117", msg, self.arg_label(a, "this argument"),
                         help=f"`{self.kdef.name}` takes {names}")

    def _extra(self, count: int):
        n = len(self.kdef.params)
        return self.diag("TL117", f"`{self.kdef.name}` takes {n} arguments, {n + count} were "
                                  "given",
                         help=f"pass one argument per parameter: "
                              f"{', '.join(p.name for p in self.kdef.params)}")

    def _missing(self, name: str):
        p = next(p for p in self.kdef.params if p.name == name)
        return self.diag("TL117", f"the launch of `{self.kdef.name}` gives no argument for "
                                  f"`{name}`", [Label(p.span, f"`{name}` is declared here")],
                         help=f"pass one argument per parameter: "
                              f"{', '.join(q.name for q in self.kdef.params if q.role != 'const')}")

    def _unbound(self, p):
        return self.diag("TL117", f"the const parameter `{p.name}` of `{self.kdef.name}` has no "
                                  "value", [Label(p.span, f"`{p.name}` is declared here")],
                         help=f"give it a default in the signature (`{p.name}: Const[int] = 64`) "
                              "or pass a value for it")

    def _kind(self, p, a: ArgDesc):
        if p.role in ("mut", "shared"):
            msg = f"`{p.name}` is a tensor parameter, but the argument is a scalar"
            help = f"pass a {'partitioned ' if p.role == 'mut' else ''}tensor for `{p.name}`"
        else:
            msg = f"`{p.name}` is a {'compile-time constant' if p.role == 'const' else 'scalar'}" \
                  " parameter, but the argument is a tensor"
            help = f"pass a number for `{p.name}`"
        return self.diag("TL118", msg, self.arg_label(a, "this argument") +
                         [Label(p.span, f"`{p.name}` is declared here")], help=help)

    def _dtype(self, p, a: ArgDesc):
        want = p.dtype.name
        got = _dtype_name(a.dtype)
        return self.diag(
            "TL112", f"`{p.name}` expects {want} elements, but the argument holds {got}",
            self.arg_label(a, f"this is {got}", True) +
            [Label(p.span, f"`{p.name}` is declared {want} here")],
            help=f"convert the tensor to {want} before the launch, or declare `{p.name}` with "
                 f"dtype {got}")

    def _rank(self, p, a: ArgDesc):
        return self.diag(
            "TL113", f"`{p.name}` is declared with {_n(len(p.shape), 'dimension')}, but the "
                     f"argument has {len(a.shape)} (shape {_fmt_tuple(a.shape)})",
            self.arg_label(a, _n(len(a.shape), "dimension"), True) +
            [Label(p.span, f"`{p.name}` is declared here")],
            help="reshape the tensor before the launch, or change the declared shape to "
                 f"\"{', '.join(['?'] * len(a.shape))}\"")

    def _suggest_tile(self, p) -> str:
        dims = []
        for d in p.shape:
            if isinstance(d, int):
                dims.append(d)
            elif isinstance(d, str) and d in self.bound:
                dims.append(self.bound[d][0])
            else:
                dims.append(128 if len(p.shape) == 1 else 64)
        return _fmt_tuple(dims)

    def _unpartitioned(self, p, a: ArgDesc):
        tile = self._suggest_tile(p)
        return self.diag(
            "TL115", f"`{p.name}` is a `Mut` output: it needs a partitioned tensor, one tile per "
                     "kernel instance",
            self.arg_label(a, "this tensor is not partitioned") +
            [Label(p.span, f"`{p.name}` is declared here as `Mut[...]`")],
            help=f"partition it into tiles: `{self.arg_text(a.name)}.partition({tile})`",
            notes=("the partition decides the launch grid (one kernel instance per tile) and "
                   "hands each instance its own tile to write",))

    def _tile_rank(self, p, a: ArgDesc):
        return self.diag(
            "TL110", f"`{p.name}` has a tile of {_n(len(p.shape), 'dimension')}, but the "
                     f"partition's tile {_fmt_tuple(a.partition_tile)} has "
                     f"{len(a.partition_tile)}",
            self.arg_label(a, f"partitioned into {_fmt_tuple(a.partition_tile)} tiles") +
            [Label(p.span, f"`{p.name}` is declared here")],
            help=f"partition with {_n(len(p.shape), 'tile dimension')}, e.g. "
                 f"`.partition({self._suggest_tile(p)})`")

    def _tile(self, p, a: ArgDesc, axis: int):
        want = p.shape[axis]
        return self.diag(
            "TL110", f"the partition of `{p.name}` has tiles {_fmt_tuple(a.partition_tile)}, but "
                     f"the signature fixes dimension {axis} of the tile to {want}",
            self.arg_label(a, f"tiles of {_fmt_tuple(a.partition_tile)}") +
            [Label(p.span, f"`{p.name}`'s tile is declared here")],
            help=f"partition with `.partition({self._suggest_tile(p)})`, or name the size in "
                 "the signature (e.g. \"B\") to make it a const generic")

    def _dim(self, p, a: ArgDesc, axis: int):
        return self.diag(
            "TL110", f"`{p.name}` must have size {p.shape[axis]} in dimension {axis}, but the "
                     f"argument's shape is {_fmt_tuple(a.shape)}",
            self.arg_label(a, f"shape {_fmt_tuple(a.shape)}", True) +
            [Label(p.span, f"`{p.name}` is declared here")],
            help="pass a tensor of that size, or write `?` in the signature for any size")

    def _generic(self, p, a: ArgDesc, axis: int, g: str, got: int, prev: tuple):
        where = "tile" if p.role == "mut" else "shape"
        value, how, arg = prev
        if how == "mut":
            source = f"the tile of `{arg}`"
        elif how == "shared":
            source = f"the shape of `{arg}`"
        elif how == "arg":
            source = f"the argument `{arg}`"
        else:
            source = how
        return self.diag(
            "TL111", f"`{g}` would be {value} from {source} but {got} from the {where} of "
                     f"`{a.name}`",
            self.arg_label(a, f"here `{g}` = {got}", True) +
            [Label(p.span, f"`{p.name}` uses `{g}` in dimension {axis}")],
            help=f"every use of `{g}` must have the same size in one launch: make the tiles and "
                 "shapes agree, or use different names in the signature",
            notes=(f"`{g}` is a const generic: one value per compiled specialization",))

    def _ragged(self, p, a: ArgDesc, axes: list):
        parts = []
        for ax in axes:
            s, t = a.shape[ax], a.partition_tile[ax]
            parts.append(f"dimension {ax}: {s} is not a multiple of {t}, so the last tile holds "
                         f"only {s % t} of its {t} elements")
        return self.diag(
            "TL114", f"the partition of `{a.name}` is ragged: its last tiles stick out past the "
                     "end of the tensor", self.arg_label(a, "partitioned here"),
            notes=tuple(parts) + ("loads past the end read zeros and stores there are masked, "
                                  "so the result is correct; a tile size that divides the shape "
                                  "avoids the masked tail",))

    def _partitioned(self, p, a: ArgDesc):
        return self.diag(
            "TL116", f"`{p.name}` is a shared input, but the argument is a partition",
            self.arg_label(a, "this is a partition") +
            [Label(p.span, f"`{p.name}` is declared here as a shared input")],
            help="pass the tensor itself; only `Mut` outputs take partitions (a shared input "
                 "can be read anywhere, with `load_tile_like` or `load_tile`)")

    def _grid(self, first, other):
        (a, ga), (b, gb) = first, other
        fa, fb = _fmt_grid(ga), _fmt_grid(gb)
        return self.diag(
            "TL119", f"the outputs `{a.name}` and `{b.name}` split into different numbers of "
                     f"tiles: {fa} and {fb}",
            self.arg_label(a, f"{fa} tiles") + self.arg_label(b, f"{fb} tiles"),
            help="choose tile sizes so that every output has the same number of tiles along "
                 "each axis",
            notes=("the launch grid has one kernel instance per tile, and each instance writes "
                   "one tile of every output",))

    def _alias(self, a: ArgDesc, b: ArgDesc):
        if a.role != "mut":
            a, b = b, a
        both_mut = b.role == "mut"
        same = a.tensor_id is not None and a.tensor_id == b.tensor_id and \
            a.ptr == b.ptr and a.shape == b.shape and a.strides == b.strides
        if both_mut:
            code = "TL101"
            msg = f"the same tensor is passed as two outputs, `{a.name}` and `{b.name}`" if same \
                else f"the outputs `{a.name}` and `{b.name}` overlap in memory"
            labels = self.arg_label(a, f"written as `{a.name}`", True) + \
                self.arg_label(b, f"also written as `{b.name}`", True)
            help = "give each output its own tensor"
            notes = ("two kernel instances could write the same element at the same time, and "
                     "which write lands would be unpredictable",
                     "in Rust terms: two mutable borrows of the same memory (E0499)")
        else:
            code = "TL100"
            msg = f"the same tensor is passed as the output `{a.name}` and the input `{b.name}`" \
                if same else f"the output `{a.name}` overlaps the input `{b.name}` in memory"
            labels = self.arg_label(a, f"written as `{a.name}`", True) + \
                self.arg_label(b, f"read as `{b.name}`", True)
            help = (f"write the result into a separate tensor (a new, empty one), or pass a "
                    f"copy of the input as `{b.name}`")
            notes = ("the kernel is compiled on the promise that its inputs and outputs do not "
                     "overlap; tiles would read values that other tiles have already "
                     "overwritten",
                     "in Rust terms: a mutable and a shared borrow of the same memory (E0502)")
        alo, ahi = a.extent()
        blo, bhi = b.extent()
        shared = min(ahi, bhi) - max(alo, blo)
        detail = f"`{a.name}` covers bytes {alo:#x}..{ahi:#x} and `{b.name}` covers " \
                 f"{blo:#x}..{bhi:#x}: up to {shared} bytes in common" if a.ptr or b.ptr \
            else None
        if detail and not same:
            notes = notes + (detail,)
        return self.diag(code, msg, labels, help=help, notes=notes)

    def _borrow(self, a: ArgDesc, d: Diagnostic):
        text = self.arg_text(a.name)
        message = d.message.replace(f"`{a.name}`", f"`{text}`", 1) if text != a.name else \
            d.message
        theirs = tuple(Label(lab.span, lab.message.replace(f"`{a.name}`", f"`{text}`", 1))
                       for lab in d.labels) if text != a.name else d.labels
        labels = tuple(self.arg_label(a, f"passed as `{a.name}`")) + theirs
        return Diagnostic(d.code, d.severity, message, self.primary, labels, d.help, d.notes)


CALLEE = "\0callee"


def _argument_spans(kdef: KernelDef, call_site: Span | None, lookup) -> dict[str, tuple[Span, str]]:
    """Where each argument sits in the user's launch expression, read from its source lines:
    parameter name -> (span, source text of the argument)."""
    if call_site is None or call_site.line < 1:
        return {}
    first = call_site.line
    last = max(call_site.end_line or first, first)
    if last - first > 30:
        return {}
    lines = [(lookup(call_site.filename, n) or "").rstrip("\r\n")
             for n in range(first, last + 1)]
    if not lines[0].strip():
        return {}
    head = lines[0]
    stripped = head.lstrip()
    base = len(head.encode("utf-8")) - len(stripped.encode("utf-8"))   # bytes, line 1 only
    text = "\n".join([stripped] + lines[1:])
    tree = None
    for candidate in (text, text.rstrip() + "\n    pass"):
        try:
            tree = ast.parse(candidate)
            break
        except SyntaxError:
            continue
    if tree is None:
        return {}
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]   # outermost first

    def callee(n: ast.Call) -> str | None:
        f = n.func
        if isinstance(f, ast.Subscript):      # kernel[grid](...)
            f = f.value
        return f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)

    n_args = len(kdef.params)
    best = next((c for c in calls if callee(c) == kdef.name), None)
    if best is None:
        fits = [c for c in calls if 0 < len(c.args) + len(c.keywords) <= n_args
                and len(c.args) + len(c.keywords) >= sum(p.role != "const" for p in kdef.params)]
        best = fits[0] if len(fits) == 1 else None
    if best is None:
        return {}

    def span_of(n: ast.AST) -> Span:
        end_lineno = n.end_lineno or n.lineno
        return Span(call_site.filename, first + n.lineno - 1,
                    n.col_offset + (base if n.lineno == 1 else 0),
                    first + end_lineno - 1,
                    (n.end_col_offset or n.col_offset) + (base if end_lineno == 1 else 0))

    out: dict[str, tuple[Span, str]] = {CALLEE: (span_of(best.func), ast.unparse(best.func))}
    for p, arg in zip(kdef.params, best.args):
        if isinstance(arg, ast.Starred):
            break
        out[p.name] = (span_of(arg), ast.unparse(arg))
    for kw in best.keywords:
        if kw.arg is not None:
            out[kw.arg] = (span_of(kw.value), ast.unparse(kw.value))
    return out
