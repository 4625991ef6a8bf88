"""Kernel-level rules: each reads one kernel's syntax tree (through a ``KernelContext``) and yields
diagnostics. One rule per function, registered in ``TILE_RULES`` in the order they run; a rule
must not assume another ran, and must tolerate any syntax tree the parser accepts (including
kernels with signature errors: a parameter's dtype may be ``None``).

The rules only cover tile-language kernels (``kind == "tile"``); plain cuTile Python kernels have
their own in ``cutile_rules``.
"""
from __future__ import annotations

import ast
from typing import Callable, Iterable, Iterator

from cutile_lab.checking.context import (PY_BUILTIN_NAMES, RAW_INDEX, RAW_WRITES,
                                         TILE_ATTRS, TILE_METHODS, KernelContext, ct_has,
                                         did_you_mean, is_unsafe_with, short, tile_shape_text)
from cutile_lab.checking.tiletypes import TileV, format_shape, implicit_cast_ok
from cutile_lab.errors import Diagnostic
from cutile_lab.language import surface
from cutile_lab.language.frontend import Param
from cutile_lab.language.options import option_problem

Rule = Callable[[KernelContext], Iterable[Diagnostic]]
TILE_RULES: list[Rule] = []


def rule(fn: Rule) -> Rule:
    TILE_RULES.append(fn)
    return fn


def _first_output(ctx: KernelContext) -> Param | None:
    return next(iter(ctx.outputs.values()), None)


def _a(dtype) -> str:
    """``an f32``, ``an i8``, ``a bf16``, ``a u8``."""
    name = str(dtype)
    return f"an {name}" if name[:1] in "fi" else f"a {name}"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _dtype_name(p: Param | None, default: str = "f32") -> str:
    return p.dtype.name if p is not None and p.dtype is not None else default


def _fill_example(p: Param) -> str:
    return f"full({tile_shape_text(p)}, 0, dtype={_dtype_name(p)})"


def _own_store_calls(ctx: KernelContext) -> Iterator[tuple[ast.Call, Param]]:
    """Every ``z.store(...)`` where ``z`` is one of the kernel's outputs."""
    for call in ctx.calls():
        kind, name, obj = ctx.callee(call)
        if kind == "method" and name == "store":
            p = ctx.param_named(obj, roles=("mut",))
            if p is not None:
                yield call, p


# --- the decorator ----------------------------------------------------------------------------

@rule
def kernel_options(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL004: ``@kernel(...)`` options the lowering would refuse, at the keyword that is wrong;
    a value that is not a literal (it would be dropped: a kernel compiles before any variable of
    the notebook exists)."""
    kdef = ctx.kdef
    keywords = {kw.arg: kw for dec in kdef.node.decorator_list if isinstance(dec, ast.Call)
                for kw in dec.keywords if kw.arg is not None}
    for name, kw in keywords.items():
        try:
            ast.literal_eval(kw.value)
        except ValueError:
            yield ctx.diag("TL004", f"the value of `{name}=` must be written out in the "
                           "decorator", kw.value, help=f"write a literal, e.g. `{name}=2`: the "
                           "decorator is read from the source, before any variable exists")
    problem = option_problem(kdef.options)
    if problem is not None:
        where = keywords.get(problem.option, kdef.node)
        yield ctx.diag("TL004", problem.message, where, help=problem.help)


# --- memory access ----------------------------------------------------------------------------

@rule
def store_into_shared(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL010: ``x.store(t)`` where ``x`` is a shared input."""
    for call in ctx.calls():
        kind, name, obj = ctx.callee(call)
        if kind != "method" or name != "store":
            continue
        p = ctx.param_named(obj, roles=("shared",))
        if p is None:
            continue
        out = _first_output(ctx)
        tile = short(call.args[0]) if call.args else "tile"
        if out is not None:
            help = f"store into your own output tile instead: `{out.name}.store({tile})`"
        else:
            help = ('add an output parameter, e.g. `out: Mut[Tensor[f32, "B"]]`, and store '
                    f"into it: `out.store({tile})`")
        yield ctx.diag(
            "TL010", f"`{p.name}` is a shared input: a kernel cannot store into it", call,
            labels=[ctx.declared(p, f"`{p.name}` is declared here as `Tensor[...]`: shared, "
                                    "read-only")],
            help=help,
            notes=["every tile of the launch may read a shared input at the same time; a store "
                   "into it would race with those reads. Only `Mut` outputs can be written, "
                   "and each tile only writes its own piece"])


_RAW_HELP = {
    "store": "write your own tile with `{out}.store(tile)`; for a store at an index you "
             "compute yourself, wrap it in `with unsafe():`",
    "load": "read with `load_tile_like(x, {out})` (the tile at your own position) or "
            "`load_tile(x, index, shape)`; for a raw load, wrap it in `with unsafe():`",
    "gather": "element-wise indexed reads need `with unsafe():` around them",
    "scatter": "element-wise indexed writes need `with unsafe():` around them",
    "atomic": "atomic updates can touch any element of the tensor: wrap them in "
              "`with unsafe():`",
}


@rule
def raw_memory_outside_unsafe(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL011: raw memory operations (and the raw block index) outside ``with unsafe():``."""
    out = _first_output(ctx)
    out_name = out.name if out is not None else "z"
    for call in ctx.calls():
        op = ctx.raw_op(call)
        if op is None or ctx.in_unsafe(call):
            continue
        spelled = short(call.func)
        if op in RAW_INDEX:
            if op == "bid":
                axis = short(call.args[0]) if call.args else "0"
                yield ctx.diag(
                    "TL011", f"`{spelled}` is cuTile's raw block index; a tile kernel gets its "
                             "position from its own tile", call,
                    help=f"write `tile_id({axis})` (the index of this kernel's own tile), or "
                         "use it inside `with unsafe():`")
            else:
                yield ctx.diag(
                    "TL011", f"`{spelled}` is cuTile's raw grid size", call,
                    help="write `num_tiles(axis)`, or use it inside `with unsafe():`")
            continue
        key = "atomic" if op.startswith("atomic_") else \
            ("store" if op in ("store", "store_advanced_indexing") else
             ("load" if op in ("load", "load_advanced_indexing") else op))
        what = "writes" if op in RAW_WRITES else "reads"
        yield ctx.diag(
            "TL011", f"`{spelled}` {what} memory at an index the checker cannot verify; it is "
                     "only allowed inside `with unsafe():`", call,
            help=_RAW_HELP.get(key, _RAW_HELP["store"]).format(out=out_name),
            notes=["inside `with unsafe():` you take over the checker's job: the report marks "
                   "the block as unchecked, and the simulator can still catch out-of-bounds "
                   "accesses and write-write conflicts there"])


@rule
def needless_unsafe(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL012: an ``unsafe`` block with no raw memory operation in it."""
    for w in ctx.unsafe_blocks:
        ops = set()
        for s in w.body:
            for n in ast.walk(s):
                if isinstance(n, ast.Call):
                    op = ctx.raw_op(n)
                    if op is not None:
                        ops.add(op)
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
    for call in ctx.calls():
        op = ctx.raw_op(call)
        if op not in RAW_WRITES or not ctx.in_unsafe(call):
            continue
        target = call.args[0] if call.args else next(
            (k.value for k in call.keywords if k.arg in ("array", "x")), None)
        p = ctx.param_named(target, roles=("shared",))
        if p is None:
            continue
        yield ctx.diag(
            "TL019", f"this unsafe `{short(call.func)}` writes into `{p.name}`, which is "
                     "declared as a shared (read-only) input", call,
            labels=[ctx.declared(p)],
            help=f"declare `{p.name}` as an output (`{p.name}: Mut[Tensor[...]]`) if the kernel "
                 "writes it",
            notes=["the compiler is told that shared inputs are read-only and do not alias any "
                   "output, and other work may read them at the same time: writing one gives "
                   "undefined results"])


# --- outputs: stored exactly once, with the right tile ------------------------------------------

class _StoreFlow:
    """Counts, along every path through the body, the stores into each output."""

    MAX_STATES = 256

    def __init__(self, ctx: KernelContext):
        self.ctx = ctx
        self.outs = list(ctx.outputs)
        self.nodes: dict[int, ast.AST] = {}
        self.finished: list[tuple[tuple, ast.AST | None]] = []
        self.gave_up = False
        self.loops: list[ast.AST] = []
        empty = tuple(() for _ in self.outs)
        live = self.run(ctx.fn.body, [empty])
        self.finished.extend((s, None) for s in live)

    def _events(self, stmt: ast.stmt) -> list[tuple[int, int]]:
        found = []
        for n in ast.walk(stmt):
            if isinstance(n, ast.Call):
                kind, name, obj = self.ctx.callee(n)
                if kind == "method" and name == "store" and isinstance(obj, ast.Name) \
                        and obj.id in self.ctx.outputs:
                    found.append((n.lineno, n.col_offset, n, obj.id))
        found.sort(key=lambda t: (t[0], t[1]))
        loop = self.loops[-1] if self.loops else None
        if loop is not None:
            self.nodes[id(loop)] = loop
        out = []
        for _, _, n, name in found:
            self.nodes[id(n)] = n
            out.append((self.outs.index(name), id(n), id(loop) if loop is not None else 0))
        return out

    def _add(self, states: list[tuple], events) -> list[tuple]:
        if not events:
            return states
        new = []
        for s in states:
            lst = [list(x) for x in s]
            for i, call_id, loop_id in events:
                if len(lst[i]) < 3:
                    lst[i].append((call_id, loop_id))
            new.append(tuple(tuple(x) for x in lst))
        return self._dedupe(new)

    def _dedupe(self, states: list[tuple]) -> list[tuple]:
        out = list(dict.fromkeys(states))
        if len(out) > self.MAX_STATES:
            self.gave_up = True
            out = out[:self.MAX_STATES]
        return out

    def run(self, stmts, states: list[tuple]) -> list[tuple]:
        for s in stmts:
            if not states:
                break
            states = self.stmt(s, states)
        return states

    def stmt(self, s: ast.stmt, states: list[tuple]) -> list[tuple]:
        if isinstance(s, ast.If):
            return self._dedupe(self.run(s.body, states) + self.run(s.orelse, states))
        if isinstance(s, (ast.For, ast.AsyncFor, ast.While)):
            self.loops.append(s)
            try:
                body = self.run(s.body, states)
            finally:
                self.loops.pop()
            return self.run(s.orelse, body)
        if isinstance(s, (ast.With, ast.AsyncWith)):
            return self.run(s.body, states)
        if isinstance(s, ast.Try) or type(s).__name__ == "TryStar":
            states = self.run(s.body, states)
            return self.run(s.finalbody, states)
        if isinstance(s, ast.Return):
            self.finished.extend((st, s) for st in self._add(states, self._events(s)))
            return []
        if isinstance(s, ast.Raise):
            return []
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return states
        return self._add(states, self._events(s))


def _count(events) -> int:
    return sum(2 if loop else 1 for _, loop in events)


def _raw_written_outputs(ctx: KernelContext) -> set[str]:
    names = set()
    for call in ctx.calls():
        if ctx.raw_op(call) in RAW_WRITES:
            target = call.args[0] if call.args else next(
                (k.value for k in call.keywords if k.arg in ("array", "x")), None)
            if isinstance(target, ast.Name) and target.id in ctx.outputs:
                names.add(target.id)
    return names


def _store_suggestion(ctx: KernelContext, out: Param) -> str:
    """What to write for an output that is never stored."""
    env = ctx.types.env
    want = tuple(out.shape)
    best = None
    for name in ctx.locals:
        v = env.get(name)
        if isinstance(v, TileV) and v.shape == want and v.dtype == out.dtype and not v.loose:
            line = min((n.lineno for n in ctx.body_nodes if isinstance(n, ast.Name)
                        and n.id == name and isinstance(n.ctx, ast.Store)), default=0)
            if best is None or line > best[0]:
                best = (line, name)
    if best is not None:
        return f"`{out.name}.store({best[1]})`"
    for p in ctx.shared.values():
        if len(p.shape) == len(out.shape) and p.dtype == out.dtype:
            return f"`{out.name}.store(load_tile_like({p.name}, {out.name}))`"
    return f"`{out.name}.store({_fill_example(out)})`"


@rule
def outputs_stored_once(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL013 never stored, TL014 stored more than once on a path, TL015 not on every path."""
    if not ctx.outputs:
        return
    flow = _StoreFlow(ctx)
    skip = _raw_written_outputs(ctx)      # written by unchecked code: not counted
    # an output with a misspelt method call (`z.stor(t)`) gets TL025, and one assigned
    # element-wise (`z[:] = t`) gets TL031, not also TL013
    for n in ctx.body_nodes:
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) \
                and n.value.id in ctx.outputs and isinstance(n.ctx, ast.Store):
            skip.add(n.value.id)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) \
                and n.value.id in ctx.outputs and n.attr not in ("load", "shape", "dtype",
                                                                  "ndim", "store"):
            skip.add(n.value.id)
    for i, name in enumerate(flow.outs):
        if name in skip:
            continue
        p = ctx.outputs[name]
        finals = [(s[i], end) for s, end in flow.finished]
        counts = [_count(ev) for ev, _ in finals]
        if not counts or max(counts) == 0:
            yield ctx.diag(
                "TL013", f"the output `{name}` is never stored", p.span,
                help=f"store a tile of shape {tile_shape_text(p)} and dtype {_dtype_name(p)} "
                     f"into it, e.g. {_store_suggestion(ctx, p)}",
                notes=[f"without a store, every tile of `{name}` keeps whatever the memory held "
                       "before the launch"])
            continue
        if max(counts) >= 2 and not flow.gave_up:
            events = max(finals, key=lambda t: _count(t[0]))[0]
            yield _more_than_once(ctx, flow, p, events)
        if min(counts) == 0 and not flow.gave_up:
            stored = next(ev for ev, _ in finals if ev)
            end = next(end for ev, end in finals if not ev)
            yield _not_on_every_path(ctx, flow, p, flow.nodes[stored[0][0]], end)


def _more_than_once(ctx, flow: _StoreFlow, p: Param, events) -> Diagnostic:
    notes = ["each store writes the whole tile to memory, so the earlier writes are wasted "
             "bandwidth: the last write wins"]
    in_loop = next(((c, lp) for c, lp in events if lp), None)
    if in_loop is not None and (len(events) == 1 or events[-1][1]):
        call, loop = flow.nodes[in_loop[0]], flow.nodes[in_loop[1]]
        labels = [ctx.label(_header(loop), f"this loop stores `{p.name}` once per iteration")]
        for c, lp in events:
            if c != in_loop[0]:
                labels.append(ctx.label(flow.nodes[c], "also stored here"))
        return ctx.diag(
            "TL014", f"`{p.name}` is stored in a loop, so it is written more than once", call,
            labels=labels,
            help="accumulate into a variable inside the loop (e.g. `acc = acc + t`) and store "
                 f"it once, after the loop: `{p.name}.store(acc)`",
            notes=notes)
    first, second = flow.nodes[events[0][0]], flow.nodes[events[1][0]]
    return ctx.diag(
        "TL014", f"`{p.name}` is stored more than once on the same path", second,
        labels=[ctx.label(first, "first stored here")],
        help="remove the earlier store, or compute the final tile first and store it once",
        notes=notes)


def _header(node: ast.AST):
    """The header line of a compound statement, as a span-able node."""
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return _Range(node.lineno, node.col_offset, node.iter.end_lineno,
                      node.iter.end_col_offset)
    if isinstance(node, (ast.While, ast.If)):
        return _Range(node.lineno, node.col_offset, node.test.end_lineno,
                      node.test.end_col_offset)
    return node


class _Range(ast.AST):
    def __init__(self, lineno, col, end_lineno, end_col):
        super().__init__()
        self.lineno, self.col_offset = lineno, col
        self.end_lineno, self.end_col_offset = end_lineno, end_col


def _not_on_every_path(ctx, flow: _StoreFlow, p: Param, store: ast.AST, end) -> Diagnostic:
    labels = []
    if isinstance(end, ast.Return):
        labels.append(ctx.label(end, f"the kernel returns here without storing `{p.name}`"))
    else:
        cur, child = ctx.parents.get(id(store)), store
        while cur is not None and cur is not ctx.fn:
            if isinstance(cur, ast.If):
                in_body = any(child is s or any(child is n for n in ast.walk(s))
                              for s in cur.body)
                when = "true" if in_body else "false"
                labels.append(ctx.label(cur.test, f"`{p.name}` is only stored when this is "
                                                  f"{when}"))
                break
            child, cur = cur, ctx.parents.get(id(cur))
    return ctx.diag(
        "TL015", f"`{p.name}` is not stored on every path through the kernel", store,
        labels=labels,
        help=f"store `{p.name}` on every path: add an `else:` branch that stores a tile, or "
             "compute the tile in the branches and store it once after the `if`",
        notes=[f"where no store happens, that tile of `{p.name}` keeps whatever the memory held "
               "before the launch"])


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


@rule
def stored_tile_type(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL016 shape, TL017 dtype, TL018 implicit widening of a stored tile."""
    for call, p in _own_store_calls(ctx):
        if len(call.args) != 1 or call.keywords:
            continue
        arg = call.args[0]
        t = ctx.types.of(arg)
        if not isinstance(t, TileV):
            continue
        want = tuple(p.shape)
        decl = ctx.declared(p)
        if t.shape is not None:
            if t.shape == ():
                yield ctx.diag(
                    "TL016", f"this stores a single value into `{p.name}`, whose tile shape is "
                             f"{format_shape(want)}", arg,
                    labels=[decl],
                    help=f"to fill the tile with it, write `{p.name}.store(full("
                         f"{format_shape(want)}, {short(arg)}, dtype={_dtype_name(p)}))`",
                    notes=["a single value would be stored as a 1-element tile, at an index "
                           "that is not your own tile's position"])
                continue
            mismatch = len(t.shape) != len(want) or any(
                a is not None and b is not None and a != b for a, b in zip(t.shape, want))
            if mismatch:
                yield ctx.diag(
                    "TL016", f"this stores a tile of shape {format_shape(t.shape)} into "
                             f"`{p.name}`, whose tile shape is {format_shape(want)}", arg,
                    labels=[decl], help=_shape_help(t.shape, want, p, arg),
                    notes=["a store writes the tile at your own tile's position; a tile of "
                           "another shape would land on other tiles' elements"])
                continue
        if t.dtype is None or p.dtype is None or t.dtype == p.dtype:
            continue
        if t.loose:
            continue
        labels = [decl]
        why = _dtype_origin(ctx, arg, t)
        expr = short(arg)
        if not isinstance(arg, (ast.Name, ast.Call, ast.Attribute, ast.Subscript)):
            expr = f"({expr})"
        if implicit_cast_ok(t.dtype, p.dtype):
            yield ctx.diag(
                "TL018", f"the {t.dtype} tile stored into `{p.name}` is converted to "
                         f"{p.dtype} implicitly", arg, labels=labels,
                help=f"write the conversion explicitly: `{p.name}.store({expr}.astype("
                     f"{p.dtype}))`, or declare `{p.name}` with dtype {t.dtype}", notes=why)
        else:
            yield ctx.diag(
                "TL017", f"this stores {_a(t.dtype)} tile into `{p.name}`, whose dtype is "
                         f"{p.dtype}", arg, labels=labels,
                help=f"convert it: `{p.name}.store({expr}.astype({p.dtype}))`",
                notes=why + [f"{t.dtype} does not convert to {p.dtype} implicitly (it could "
                             "lose precision or range), so the conversion must be written out"])


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


# --- the safe memory forms -------------------------------------------------------------------

@rule
def load_tile_like_args(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL020/TL021/TL022: ``load_tile_like(x, z)``."""
    out = _first_output(ctx)
    for call in ctx.calls():
        kind, name, _ = ctx.callee(call)
        if kind != "fn" or name != "load_tile_like":
            continue
        if len(call.args) != 2 or any(k.arg != "padding" for k in call.keywords):
            z = out.name if out else "z"
            yield ctx.diag(
                "TL020", "`load_tile_like` takes two arguments: the tensor to read and your "
                         "own output tile", call,
                help=f"write `load_tile_like(x, {z})`: it reads the tile of `x` at the position "
                     f"of `{z}`'s tile")
            continue
        x, z = call.args
        if any(isinstance(a, ast.Name) and a.id in ctx.broken for a in (x, z)):
            continue
        pz = ctx.param_named(z, roles=("mut",))
        px = ctx.param_named(x)
        if pz is None:
            zp = ctx.param_named(z, roles=("shared",))
            what = f"`{short(z)}` is a shared input" if zp is not None else \
                f"`{short(z)}` is not one of this kernel's `Mut` outputs"
            if out is not None:
                help = (f"pass your output as the second argument: "
                        f"`load_tile_like({short(x)}, {out.name})`")
            else:
                help = ("`load_tile_like` needs a `Mut` output to take the tile position from; "
                        "without one, read with `load_tile(x, index, shape)`")
            labels = [ctx.declared(zp)] if zp is not None else []
            yield ctx.diag(
                "TL020", f"{what}: `load_tile_like(x, z)` takes the tile's shape and position "
                         "from `z`, which must be one of your outputs", z,
                labels=labels, help=help)
            continue
        if px is None:
            t = ctx.types.of(x)
            if isinstance(t, TileV) and t.shape not in (None, ()):
                help = f"`{short(x)}` is already a tile: use it directly"
            else:
                names = [p.name for p in ctx.shared.values()] or ["x"]
                help = f"pass a tensor parameter, e.g. `load_tile_like({names[0]}, {pz.name})`"
            yield ctx.diag(
                "TL021", f"`load_tile_like` reads from a tensor parameter, and `{short(x)}` is "
                         "not one", x, help=help)
            continue
        if len(px.shape) != len(pz.shape):
            yield ctx.diag(
                "TL022", f"`{px.name}` has {_n(len(px.shape), 'dimension')} but the tile of "
                         f"`{pz.name}` has {len(pz.shape)}", call,
                labels=[ctx.declared(px, f"`{px.name}`: {_n(len(px.shape), 'dimension')}"),
                        ctx.declared(pz, f"`{pz.name}`: a tile of "
                                         f"{_n(len(pz.shape), 'dimension')}")],
                help=f"declare `{px.name}` with {_n(len(pz.shape), 'dimension')} (e.g. "
                     f"`Tensor[{_dtype_name(px)}, \"{', '.join(['?'] * len(pz.shape))}\"]`), "
                     "or read it with `load_tile(x, index, shape)`")


@rule
def load_padding(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL028: ``padding=`` of a load names a padding mode."""
    from cutile_lab.compiling.lowering import PADDINGS
    for call in ctx.calls():
        kind, name, _ = ctx.callee(call)
        if kind != "fn" or name not in ("load_tile_like", "load_tile"):
            continue
        for kw in call.keywords:
            if kw.arg != "padding":
                continue
            value = kw.value
            if isinstance(value, ast.Constant) and value.value in PADDINGS:
                continue
            yield ctx.diag(
                "TL028", f"`padding={short(value)}` is not a padding mode", value,
                help="write one of " + ", ".join(f'`padding="{p}"`' for p in PADDINGS) +
                     ": what a load puts where the tile reaches past the tensor's edge")


def _arg_of(call: ast.Call, i: int, name: str) -> ast.AST | None:
    if len(call.args) > i:
        return call.args[i]
    return next((k.value for k in call.keywords if k.arg == name), None)


@rule
def load_tile_args(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL021/TL023/TL024: ``load_tile(x, index, shape)``."""
    for call in ctx.calls():
        kind, name, _ = ctx.callee(call)
        if kind != "fn" or name != "load_tile":
            continue
        x, index, shape = _arg_of(call, 0, "x"), _arg_of(call, 1, "index"), \
            _arg_of(call, 2, "shape")
        if x is None or index is None or shape is None:
            yield ctx.diag(
                "TL023", "`load_tile` needs the tensor, the tile's index and the tile's shape",
                call, help="write e.g. `load_tile(x, (tile_id(0), k), (BM, BK))`: the index "
                           "counts tiles, not elements")
            continue
        if isinstance(x, ast.Name) and x.id in ctx.broken:
            continue
        p = ctx.param_named(x)
        if p is None:
            names = [q.name for q in ctx.shared.values()] or ["x"]
            yield ctx.diag(
                "TL021", f"`load_tile` reads from a tensor parameter, and `{short(x)}` is not "
                         "one", x,
                help=f"pass a shared input, e.g. `load_tile({names[0]}, {short(index)}, "
                     f"{short(shape)})`")
            continue
        if p.role == "mut":
            yield ctx.diag(
                "TL024", f"`load_tile` reads tiles of the output `{p.name}`, which other tiles "
                         "of the launch are writing at the same time", call,
                labels=[ctx.declared(p)],
                help=f"read your own tile with `{p.name}.load()`; to read other tiles, pass the "
                     "data as a separate shared input",
                notes=["each tile of an output belongs to one kernel instance; reading another "
                       "instance's tile while it is being written is a data race"])
            continue
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
                         f"`{p.name}` has {rank} dimension{'s' if rank != 1 else ''}", node,
                labels=[ctx.declared(p, f"`{p.name}` has {rank} dimension"
                                        f"{'s' if rank != 1 else ''}")],
                help=f"give one entry per dimension of `{p.name}`"
                     + (f", e.g. `{example}`" if rank == 2 else ""))


@rule
def methods_and_attributes(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL025: methods that do not exist on an output tile, a shared input or a tile."""
    seen = set()
    for n in ctx.body_nodes:
        if not isinstance(n, ast.Attribute) or not isinstance(n.value, ast.Name):
            continue
        parent = ctx.parents.get(id(n))
        is_call = isinstance(parent, ast.Call) and parent.func is n
        if isinstance(n.ctx, ast.Store):
            continue
        obj = n.value.id
        p = ctx.params.get(obj)
        if p is not None and p.role == "mut" and obj not in ctx.locals:
            allowed = {"load", "store"} | TILE_ATTRS
            if n.attr in ("load", "store") and is_call:
                nargs = len(parent.args) + len(parent.keywords)
                if n.attr == "load" and nargs:
                    yield ctx.diag("TL025", f"`{obj}.load()` takes no arguments: it reads your "
                                            "own tile", parent,
                                   help=f"write `{obj}.load()`; to read another tensor's tile "
                                        f"use `load_tile_like(x, {obj})`")
                elif n.attr == "store" and (len(parent.args) != 1 or parent.keywords):
                    yield ctx.diag("TL025", f"`{obj}.store(tile)` takes exactly one tile",
                                   parent, help=f"write `{obj}.store(t)` with a tile `t` of "
                                                f"shape {tile_shape_text(p)}")
                continue
            if n.attr not in allowed:
                guess = did_you_mean(n.attr, allowed)
                yield ctx.diag(
                    "TL025", f"the output `{obj}` has no method or attribute `{n.attr}`", n,
                    help=(f"did you mean `{obj}.{guess}`? " if guess else "") +
                         f"an output tile has `{obj}.store(tile)`, `{obj}.load()`, "
                         f"`{obj}.shape` and `{obj}.dtype`")
            continue
        if p is not None and p.role == "shared" and obj not in ctx.locals:
            if n.attr == "store":
                continue           # TL010
            if n.attr == "load":
                out = _first_output(ctx)
                z = out.name if out else "z"
                yield ctx.diag(
                    "TL025", f"`{obj}` is a shared input: `.load()` only reads your own output "
                             "tile", parent if is_call else n,
                    help=f"read `{obj}` with `load_tile_like({obj}, {z})` (the tile at your own "
                         f"position) or `load_tile({obj}, index, shape)`")
            elif n.attr not in TILE_ATTRS:
                guess = did_you_mean(n.attr, TILE_ATTRS)
                yield ctx.diag(
                    "TL025", f"the shared input `{obj}` has no method or attribute `{n.attr}`", n,
                    help=(f"did you mean `{obj}.{guess}`? " if guess else "") +
                         f"read it with `load_tile_like({obj}, z)` or `load_tile(...)`; "
                         f"`{obj}.shape` and `{obj}.dtype` describe it")
            continue
        if obj in ctx.locals and is_call:
            t = ctx.types.of(n.value)
            if not isinstance(t, TileV) or t.loose or t.shape in (None, ()):
                continue
            if n.attr in TILE_METHODS or n.attr in TILE_ATTRS:
                continue
            key = (obj, n.attr)
            if key in seen:
                continue
            seen.add(key)
            if n.attr in surface.OPS:
                parts = [obj] + [short(a) for a in parent.args] + \
                    [f"{k.arg}={short(k.value)}" for k in parent.keywords if k.arg]
                help = f"it is a function, not a method: write `{n.attr}({', '.join(parts)})`"
            elif n.attr == "store":
                out = _first_output(ctx)
                help = f"store a tile with `{out.name if out else 'z'}.store({obj})`"
            else:
                help = "tiles have the methods " + ", ".join(
                    f"`.{m}()`" for m in sorted(TILE_METHODS - {"insert", "extract"}))
            yield ctx.diag("TL025", f"tiles have no method `{n.attr}`", n, help=help)


@rule
def parameters_not_reassigned(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL026: assigning to a parameter or const generic name."""
    protected = dict(ctx.params)
    reported = set()
    for n in ctx.body_nodes:
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            name = n.id
            if name in reported or (name not in protected and name not in ctx.const_generics):
                continue
            reported.add(name)
            p = protected.get(name)
            if p is not None and p.role in ("mut", "shared"):
                what = f"`{name}` is a tensor parameter"
                help = f"give the tile a new name, e.g. `{name}_tile = ...`"
            elif p is not None:
                what = f"`{name}` is a parameter"
                help = f"use a new name, e.g. `{name}2 = ...`"
            else:
                what = f"`{name}` is a const generic (a compile-time size)"
                help = f"use a new name, e.g. `{name.lower()}_ = ...`"
            labels = [ctx.declared(p)] if p is not None else []
            yield ctx.diag("TL026", f"{what} and cannot be reassigned", n, labels=labels,
                           help=help,
                           notes=["the checker follows parameters by name: rebinding one would "
                                  "hide what it refers to"])


@rule
def reduction_misuse(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL027: Python's ``max(a, b)``; in a kernel, ``max``/``min`` reduce one tile."""
    for call in ctx.calls():
        kind, name, _ = ctx.callee(call)
        if kind not in ("fn", "ct") or name not in ("max", "min") or len(call.args) < 2:
            continue
        first, second = call.args[0], call.args[1]
        t0, t1 = ctx.types.of(first), ctx.types.of(second)
        if len(call.args) == 2:
            if isinstance(t1, TileV) and t1.loose and isinstance(t1.const, int) \
                    and not isinstance(t1.const, bool):
                # `max(t, 1)`: a reduction along axis 1, unless `t` is a single value
                if not (isinstance(t0, TileV) and t0.shape == ()):
                    continue
            elif not isinstance(t1, TileV):
                continue       # the second argument is not understood: cannot tell
        elementwise = "maximum" if name == "max" else "minimum"
        yield ctx.diag(
            "TL027", f"`{name}` with two values: in a kernel, `{name}` reduces one tile along an "
                     "axis; it does not compare two values", call,
            help=f"for the element-wise {'larger' if name == 'max' else 'smaller'} of two values "
                 f"write `{elementwise}({short(first, 30)}, {short(second, 30)})`; to reduce a "
                 f"tile, write `{name}(t, axis=1)`")


# --- names and the Python subset -------------------------------------------------------------

@rule
def unknown_names(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL030 unknown names (with "did you mean"), TL034 ``cl.`` inside a body."""
    known = (set(ctx.params) | ctx.locals | ctx.const_generics | surface.all_known_names()
             | ctx.module_names)
    wildcard = ctx.module_wildcard
    reported: dict[str, Diagnostic] = {}
    for n in ctx.body_nodes:
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) \
                and isinstance(n.ctx, ast.Load):
            base = n.value.id
            if base == "cl" and ctx.language_name("cl"):
                bare = n.attr
                yield ctx.diag(
                    "TL034", f"inside a kernel body, write `{bare}`, not `cl.{bare}`", n,
                    help="the body is compiled for the GPU: the tile language's names "
                         "(`f32`, `load_tile_like`, `exp`, ...) are used bare, without the "
                         "`cl.` prefix")
            elif base in ctx.modules and base not in ctx.locals and base not in ctx.params \
                    and isinstance(ctx.parents.get(id(n)), ast.Call) \
                    and ctx.parents[id(n)].func is n \
                    and not ctx.modules[base].startswith(("cuda.tile", "cutile_lab", "cuda")):
                mod = ctx.modules[base]
                pretty = {"numpy": "NumPy", "math": "Python's math module", "torch": "PyTorch",
                          "cupy": "CuPy", "jax": "JAX"}.get(mod.split(".")[0], f"`{mod}`")
                if n.attr in surface.OPS:
                    help = f"use the tile language's own `{n.attr}(...)`: it runs on tiles, on " \
                           "the GPU"
                else:
                    help = ("a kernel can call cuTile's operations (`exp`, `sum`, `where`, `mma`, "
                            "...), not functions of host libraries")
                yield ctx.diag("TL030", f"`{base}.{n.attr}` is a function of {pretty}, which "
                                        "cannot run inside a kernel", n, help=help)
            elif base == "ct" and ctx.language_name("ct") and not ct_has(n.attr):
                guess = did_you_mean(n.attr, _ct_candidates())
                yield ctx.diag(
                    "TL030", f"cuTile has no `ct.{n.attr}`", n,
                    help=f"did you mean `ct.{guess}`?" if guess else
                    "see cuTile's list of operations; most are also available bare "
                    "(`exp`, `sum`, `mma`, ...)")
            continue
        if not isinstance(n, ast.Name) or not isinstance(n.ctx, ast.Load) or \
                id(n) in ctx.unsupported_inner:
            continue
        name = n.id
        if name in known or name in reported:
            continue
        if name in PY_BUILTIN_NAMES:
            reported[name] = ctx.diag(
                "TL030", f"Python's `{name}` cannot be used inside a kernel", n,
                help="a kernel body can use `range`, `min`, `max`, `len`, `int`, `float`, "
                     "`bool`, `abs` and cuTile's operations (`exp`, `sum`, `mma`, `where`, ...)")
            continue
        if wildcard:
            continue
        pool = set(ctx.params) | ctx.locals | ctx.const_generics | surface.all_known_names() \
            | {m for m in ctx.module_names if not m.startswith("_")}
        guess = did_you_mean(name, pool)
        if guess is not None:
            help = f"did you mean `{guess}`?"
        else:
            help = ("define it before this line, pass it as a parameter (a `Const[int]` for a "
                    "compile-time value), or define it at module level")
        reported[name] = ctx.diag("TL030", f"unknown name `{name}`", n, help=help)
    yield from reported.values()


def _ct_candidates() -> set[str]:
    from cutile_lab.checking.context import CT_NAMES
    return set(CT_NAMES)


_UNSUPPORTED: dict[type, tuple[str, str]] = {
    ast.While: ("`while` loops are not supported in a kernel: a loop's trip count must be known "
                "when the kernel starts",
                "loop over `range(n)` with a bound computed from sizes (e.g. "
                "`range(num_tiles(a, 1, (BM, BK)))`), and skip work with `if` inside the loop"),
    ast.Try: ("`try` is not supported in a kernel: GPU code has no exceptions",
              "remove the `try`; test conditions with `if` instead"),
    ast.FunctionDef: ("functions cannot be defined inside a kernel",
                      "write the helper's body inline, or define it at module level"),
    ast.AsyncFunctionDef: ("functions cannot be defined inside a kernel",
                           "write the helper's body inline"),
    ast.Lambda: ("`lambda` is not supported in a kernel", "write the expression inline"),
    ast.ClassDef: ("classes cannot be defined inside a kernel", "define it at module level"),
    ast.Global: ("`global` is not supported: a kernel cannot change module state",
                 "pass the value in as a parameter, and write results to a `Mut` output"),
    ast.Nonlocal: ("`nonlocal` is not supported in a kernel",
                   "pass the value in as a parameter"),
    ast.Yield: ("a kernel cannot `yield`", "store results with `z.store(tile)`"),
    ast.YieldFrom: ("a kernel cannot `yield from`", "store results with `z.store(tile)`"),
    ast.Await: ("`await` is not supported in a kernel",
                "kernels are asynchronous already: await the launch on the host"),
    ast.AsyncFor: ("`async for` is not supported in a kernel", "use `for i in range(n):`"),
    ast.AsyncWith: ("`async with` is not supported in a kernel",
                    "the only `with` in a kernel is `with unsafe():`"),
    ast.Import: ("`import` is not allowed inside a kernel",
                 "import at module level; inside the body use cuTile's operations by name "
                 "(`exp`, `sum`, ...)"),
    ast.ImportFrom: ("`import` is not allowed inside a kernel",
                     "import at module level; inside the body use cuTile's operations by name "
                     "(`exp`, `sum`, ...)"),
    ast.Delete: ("`del` is not supported in a kernel",
                 "just stop using the name: tiles live in registers and need no freeing"),
    ast.ListComp: ("list comprehensions are not supported in a kernel",
                   "write a `for` loop over `range(...)`, or build a tuple"),
    ast.SetComp: ("set comprehensions are not supported in a kernel",
                  "write a `for` loop over `range(...)`"),
    ast.DictComp: ("dict comprehensions are not supported in a kernel",
                   "write a `for` loop over `range(...)`"),
    ast.GeneratorExp: ("generator expressions are not supported in a kernel",
                       "write a `for` loop over `range(...)`"),
    ast.List: ("lists are not supported in a kernel", "use a tuple: `(a, b)`"),
    ast.Dict: ("dicts are not supported in a kernel",
               "use separate variables, or a tuple indexed by constants"),
    ast.Set: ("sets are not supported in a kernel", "use a tuple: `(a, b)`"),
    ast.NamedExpr: ("`:=` is not supported in a kernel", "assign on a line of its own"),
    ast.Assert: ("`assert` is not supported in a kernel",
                 "use `static_assert(cond)` for conditions on const generics, or "
                 "`assert_(cond)` for a check on the device"),
}
if hasattr(ast, "Match"):
    _UNSUPPORTED[ast.Match] = ("`match` is not supported in a kernel", "use `if`/`elif`/`else`")
if hasattr(ast, "TryStar"):
    _UNSUPPORTED[ast.TryStar] = _UNSUPPORTED[ast.Try]


def _head(node: ast.AST):
    """A compact span for a compound statement: its first line only."""
    if isinstance(node, (ast.While,)):
        return _header(node)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        kw = {"FunctionDef": 3, "AsyncFunctionDef": 9, "ClassDef": 5}[type(node).__name__]
        return _Range(node.lineno, node.col_offset, node.lineno,
                      node.col_offset + kw + 1 + len(node.name))
    if isinstance(node, (ast.Try, ast.AsyncFor, ast.AsyncWith)) or \
            type(node).__name__ in ("TryStar", "Match"):
        return _Range(node.lineno, node.col_offset, node.lineno, node.col_offset + 3)
    return node


@rule
def unsupported_constructs(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL031: Python constructs a kernel cannot contain."""
    skip: set[int] = set()
    for n in ctx.body_nodes:
        if id(n) in skip:
            continue
        entry = _UNSUPPORTED.get(type(n))
        if entry is not None:
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                skip.update(id(m) for m in ast.walk(n))   # one diagnostic for the whole def
            msg, help = entry
            yield ctx.diag("TL031", msg, _head(n), help=help)
            continue
        if isinstance(n, ast.Return) and n.value is not None:
            out = _first_output(ctx)
            if isinstance(n.value, ast.Name) and n.value.id in ctx.params:
                help = (f"`{n.value.id}` is a parameter: outputs are written with "
                        "`z.store(tile)` and handed back by the launch, so remove the `return`")
            else:
                help = (f"store the result into an output: `{out.name if out else 'z'}.store("
                        f"{short(n.value)})`, and end with a bare `return` (or nothing)")
            yield ctx.diag("TL031", "a kernel cannot return a value", n.value, help=help)
        elif isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name):
            name = n.value.id
            p = ctx.params.get(name)
            if p is not None and p.role in ("mut", "shared") and name not in ctx.locals:
                if isinstance(n.ctx, (ast.Store, ast.Del)):
                    help = (f"write the whole tile with `{name}.store(tile)`" if p.role == "mut"
                            else f"`{name}` is a shared input: it is read-only")
                    yield ctx.diag("TL031", f"tensors cannot be assigned element by element: "
                                            f"`{short(n)} = ...`", n, help=help)
                else:
                    out = _first_output(ctx)
                    yield ctx.diag(
                        "TL031", f"tensors cannot be indexed directly: `{short(n)}`", n,
                        help=f"load a tile: `load_tile_like({name}, "
                             f"{out.name if out else 'z'})` or `load_tile({name}, index, "
                             f"shape)`; `{name}.shape[0]` gives a size")
            elif isinstance(n.ctx, ast.Store) and name in ctx.locals:
                t = ctx.types.of(n.value)
                if isinstance(t, TileV) and not t.loose:
                    yield ctx.diag("TL031", "tiles cannot be assigned element by element", n,
                                   help="build the tile in one expression, e.g. with "
                                        "`where(mask, new, t)`")
        elif isinstance(n, ast.Starred):
            parent = ctx.parents.get(id(n))
            if isinstance(n.ctx, ast.Store) or isinstance(parent, (ast.Tuple, ast.List)) and \
                    isinstance(parent.ctx, ast.Store):
                yield ctx.diag("TL031", "starred assignment (`a, *rest = ...`) is not supported "
                                        "in a kernel", n,
                               help="unpack every element by name: `a, b, c = ...`")
            else:
                yield ctx.diag("TL031", "`*` unpacking in a call is not supported in a kernel",
                               n, help="pass each argument by name or position")
        elif isinstance(n, ast.keyword) and n.arg is None:
            yield ctx.diag("TL031", "`**` unpacking in a call is not supported in a kernel",
                           n.value, help="pass each keyword argument explicitly")
        elif isinstance(n, (ast.For,)):
            if not _is_range_call(ctx, n.iter):
                yield ctx.diag("TL031", "a `for` loop in a kernel must run over `range(...)`",
                               n.iter, help="write `for i in range(n):` and index with `i`")
            if n.orelse:
                yield ctx.diag("TL031", "`for ... else` is not supported in a kernel",
                               n.orelse[0], help="move the `else` body after the loop, "
                                                 "guarded by an `if`")
        elif isinstance(n, ast.With) and not is_unsafe_with(n):
            yield ctx.diag("TL031", "the only `with` allowed in a kernel is `with unsafe():`",
                           n.items[0].context_expr,
                           help="remove the `with` and dedent its body")
        elif isinstance(n, ast.With) and n.items[0].optional_vars is not None:
            yield ctx.diag("TL031", "`with unsafe():` takes no `as` name",
                           n.items[0].optional_vars, help="write `with unsafe():`")


def _is_range_call(ctx: KernelContext, node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    kind, name, _ = ctx.callee(node)
    return (kind == "fn" and name == "range") or (kind == "ct" and name == "static_iter")


@rule
def recursion(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL032: a kernel calling itself."""
    me = ctx.kdef.name
    if me in ctx.locals:
        return
    for call in ctx.calls():
        if isinstance(call.func, ast.Name) and call.func.id == me:
            yield ctx.diag("TL032", f"`{me}` calls itself: a kernel cannot be recursive", call,
                           labels=[ctx.label(_head(ctx.fn), f"`{me}` is defined here")],
                           help="rewrite the recursion as a loop over `range(...)`")


@rule
def device_print(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL033: ``print``/f-strings of values computed on the GPU (slow; debugging only)."""
    for call in ctx.calls():
        kind, name, _ = ctx.callee(call)
        if name != "print" or kind not in ("fn", "ct"):
            continue
        dynamic = [a for a in call.args if not _constant_text(a)]
        if not dynamic:
            continue
        yield ctx.diag(
            "TL033", "this `print` runs on the GPU, once for every tile of the launch", call,
            help="print a few values only while debugging, and remove the `print` afterwards "
                 "(it slows the kernel down a lot); `printf(\"%f\\n\", t)` gives C-style "
                 "formatting",
            notes=["the output is interleaved across tiles in no fixed order"])


def _constant_text(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.JoinedStr):
        return all(isinstance(v, ast.Constant) for v in node.values)
    return False


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
                                            f"{_n(len(first.shape), 'dimension')}")],
                help=f"give both outputs tiles of the same rank, e.g. `{low.name}: Mut[Tensor["
                     f"{_dtype_name(low)}, \"{', '.join(dims)}\"]]`",
                notes=["one kernel instance writes one tile of every output, so all outputs are "
                       "split along the same grid axes"])


@rule
def has_an_output(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL042: a kernel with no ``Mut`` output."""
    if ctx.outputs or any(d.code == "TL001" for d in ctx.kdef.diagnostics):
        return
    yield ctx.diag(
        "TL042", f"`{ctx.kdef.name}` has no `Mut` output, so it cannot write any result",
        _head(ctx.fn),
        help='add an output parameter, e.g. `out: Mut[Tensor[f32, "B"]]`, and store into it '
             "with `out.store(tile)`; the launch grid comes from its partition")
