"""The ownership pass: who may write what, by value.

What it proves, on the types the typing pass (``typecheck``) gives every value:

* a shared input is read-only under any name: a store through it, an alias of it, a bound
  ``.store`` of it, or a helper's parameter bound to it is an error (TL010);
* a store goes into one known tensor: a store through a value the checker cannot tie to one
  tensor (``w = z if c else y``) is an error (TL036);
* each ``Mut`` output (the kernel's own tile, a move-only value) is stored exactly once on every
  path, counted per value and per path through branches, loops, early returns and helper bodies:
  never (TL013), more than once (TL014), not on every path (TL015); so ``out = z;
  out.store(t)`` is one store, and ``w = z; w.store(a); z.store(b)`` is two;
* a ``Mut`` moved into another name (``w = z``, ``pair = (z, x)``) is used through that name
  only: a later use of the old name is an error (TL029, like rustc's E0382);
* parameters are not rebound (TL026) (what the safe loads may read is the ``reads`` pass);
* a call the checker cannot follow into (a helper whose source cannot be read, a recursive one,
  one given ``*args``) is an error in a tile kernel (TL037), and so is a call whose callee it
  cannot tell at all (TL038: ``ct.__dict__["store"](...)``, ``Tensor.store(x, t)``, a method of
  a class or of a notebook object): what either would do is not known.
"""
from __future__ import annotations

import ast
from typing import Callable, Iterable, Iterator

from cutile_lab.checking.context import (RAW_WRITES, KernelContext, dtype_name, fill_example,
                                         first_output, header, outermost_calls, short,
                                         tile_shape_text)
from cutile_lab.checking.tiletypes import TensorV, TileV
from cutile_lab.checking.typecheck_values import CallInfo, RawMemV
from cutile_lab.diagnostics import Diagnostic
from cutile_lab.language.frontend import Param

Rule = Callable[[KernelContext], Iterable[Diagnostic]]
RULES: list[Rule] = []


def rule(fn: Rule) -> Rule:
    RULES.append(fn)
    return fn


def _through(info: CallInfo, p: Param) -> str:
    """`` (through `view`)`` when the store does not name the parameter itself."""
    f = info.node.func
    obj = f.value if isinstance(f, ast.Attribute) else f
    if info.helper is not None:
        return f" (through the helper `{info.helper.name}`)"
    if isinstance(obj, ast.Name) and obj.id != p.name:
        return f" (through `{obj.id}`, which is `{p.name}`)"
    return ""


def _unresolved_receiver(ctx: KernelContext, info: CallInfo) -> Diagnostic:
    f = info.node.func
    obj = short(f.value) if isinstance(f, ast.Attribute) else short(f)
    return ctx.diag(
        "TL036", f"the checker cannot tell which tensor `{obj}` is, so it cannot check this "
                 "store", ctx.at(info), labels=ctx.helper_label(info, "the store"),
        help="store through one output on each path (e.g. `z.store(t)` in both branches of "
             "the `if`), not through a name that is one tensor on one path and another on the "
             "other; or wrap the store in `with unsafe():`",
        notes=["a store must go into one `Mut` output the checker can name, so that it can "
               "prove every tile of the launch writes only its own piece"])


# --- memory access ----------------------------------------------------------------------------

@rule
def store_into_shared(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL010: ``x.store(t)`` where ``x`` is a shared input."""
    for info in ctx.types.all_calls():
        if info.kind != "method" or info.name != "store":
            continue
        call = info.node
        if not isinstance(info.recv, TensorV):
            f = info.node.func
            if info.recv is None and not (isinstance(f, ast.Attribute) and
                                          ctx.unknown_from_elsewhere(f.value, info.path)):
                yield _unresolved_receiver(ctx, info)
            continue
        p = info.recv.param
        if p.role != "shared":
            continue
        out = first_output(ctx)
        tile = short(call.args[0]) if call.args else "tile"
        if out is not None:
            help = f"store into your own output tile instead: `{out.name}.store({tile})`"
        else:
            help = ('add an output parameter, e.g. `out: Mut[Tensor[f32, "B"]]`, and store '
                    f"into it: `out.store({tile})`")
        yield ctx.diag(
            "TL010", f"`{p.name}` is a shared input: a kernel cannot store into it"
                     + _through(info, p), ctx.at(info),
            labels=[ctx.declared(p, f"`{p.name}` is declared here as `Tensor[...]`: shared, "
                                    "read-only")] + ctx.helper_label(info, "the store"),
            help=help,
            notes=["every tile of the launch may read a shared input at the same time; a store "
                   "into it would race with those reads. Only `Mut` outputs can be written, "
                   "and each tile only writes its own piece"])


# --- outputs: stored exactly once, with the right tile ------------------------------------------

class _StoreFlow:
    """Counts, along every path through the body (and through the bodies of the helpers it
    calls), the stores into each output, by value: a store through an alias, a bound method or
    a helper's parameter counts for the output it is."""

    MAX_STATES = 256

    def __init__(self, ctx: KernelContext):
        self.ctx = ctx
        self.types = ctx.types
        self.outs = list(ctx.outputs)
        self.nodes: dict[int, ast.AST] = {}
        self.finished: list[tuple[tuple, ast.AST | None]] = []
        self.gave_up = False
        self.loops: list[ast.AST] = []
        self.returns: list[list] = []
        empty = tuple(() for _ in self.outs)
        live = self.run(ctx.fn.body, [empty], ())
        self.finished.extend((s, None) for s in live)

    def _calls(self, stmt: ast.AST, path: tuple) -> list:
        """The calls a statement makes (not inside nested statements), in source order."""
        found = []
        stack = [stmt]
        while stack:
            n = stack.pop()
            for c in ast.iter_child_nodes(n):
                if isinstance(c, (ast.stmt, ast.Lambda)):
                    continue
                stack.append(c)
            if isinstance(n, ast.Call):
                info = self.types.call(n, path)
                if info is not None:
                    found.append(info)
        found.sort(key=lambda i: (i.node.lineno, i.node.col_offset))
        return found

    def _simple(self, stmt: ast.AST, states: list[tuple], path: tuple) -> list[tuple]:
        for info in self._calls(stmt, path):
            if not states:
                break
            if info.kind == "method" and info.name == "store" and \
                    isinstance(info.recv, TensorV) and info.recv.param.name in self.outs:
                node = self.ctx.at(info)
                loop = self.loops[-1] if self.loops else None
                if loop is not None:
                    self.nodes[id(loop)] = loop
                self.nodes[id(info.node)] = node
                states = self._add(states, [(self.outs.index(info.recv.param.name),
                                             id(info.node),
                                             id(loop) if loop is not None else 0)])
            elif info.kind == "helper" and info.problem is None and info.callee is not None \
                    and info.callee.node is not None:
                self.returns.append([])
                live = self.run(info.callee.node.body, states, path + (id(info.node),))
                states = self._dedupe(live + self.returns.pop())
        return states

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

    def run(self, stmts, states: list[tuple], path: tuple) -> list[tuple]:
        for s in stmts:
            if not states:
                break
            states = self.stmt(s, states, path)
        return states

    def stmt(self, s: ast.stmt, states: list[tuple], path: tuple) -> list[tuple]:
        if isinstance(s, ast.If):
            states = self._simple(s.test, states, path)
            return self._dedupe(self.run(s.body, states, path) +
                                self.run(s.orelse, states, path))
        if isinstance(s, (ast.For, ast.AsyncFor, ast.While)):
            head = s.test if isinstance(s, ast.While) else s.iter
            states = self._simple(head, states, path)
            self.loops.append(s)
            try:
                body = self.run(s.body, states, path)
            finally:
                self.loops.pop()
            return self.run(s.orelse, self._dedupe(states + body)
                            if isinstance(s, ast.While) else body, path)
        if isinstance(s, (ast.With, ast.AsyncWith)):
            return self.run(s.body, states, path)
        if isinstance(s, ast.Try) or type(s).__name__ == "TryStar":
            states = self.run(s.body, states, path)
            return self.run(s.finalbody, states, path)
        if isinstance(s, ast.Return):
            done = self._simple(s, states, path)
            if self.returns:                      # the end of a helper, not of the kernel
                self.returns[-1].extend(done)
            else:
                self.finished.extend((st, s) for st in done)
            return []
        if isinstance(s, ast.Raise):
            return []
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return states
        return self._simple(s, states, path)


def _count(events) -> int:
    return sum(2 if loop else 1 for _, loop in events)


def _raw_written_outputs(ctx: KernelContext) -> set[str]:
    """Outputs written by raw (unchecked) operations, under any name."""
    from cutile_lab.checking.unsafe import raw_target
    names = set()
    for info in ctx.types.all_calls():
        if info.raw_op in RAW_WRITES or info.raw_op == "get_raw_memory":
            target = raw_target(info) if info.raw_op != "get_raw_memory" else info.recv
            if isinstance(target, TensorV) and target.param.role == "mut":
                names.add(target.param.name)
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
    return f"`{out.name}.store({fill_example(out)})`"


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
        if isinstance(n, (ast.Subscript, ast.Attribute)):
            p = ctx.param_named(n.value, roles=("mut",))
            if p is None:
                continue
            if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
                skip.add(p.name)
            if isinstance(n, ast.Attribute) and n.attr not in ("load", "shape", "dtype", "ndim",
                                                               "store"):
                skip.add(p.name)
    for i, name in enumerate(flow.outs):
        if name in skip:
            continue
        p = ctx.outputs[name]
        finals = [(s[i], end) for s, end in flow.finished]
        counts = [_count(ev) for ev, _ in finals]
        if not counts or max(counts) == 0:
            yield ctx.diag(
                "TL013", f"the output `{name}` is never stored", p.span,
                help=f"store a tile of shape {tile_shape_text(p)} and dtype {dtype_name(p)} "
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
        labels = [ctx.label(header(loop), f"this loop stores `{p.name}` once per iteration")]
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
def use_after_move(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL029: a name used after the own tile it held was moved into another name (a use of its
    memory: storing, loading, passing it on; taking its shape or position is not)."""
    seen = set()
    uses = sorted(ctx.types.moved_uses.values(),
                  key=lambda u: (u.anchor.lineno, u.anchor.col_offset, u.node.lineno,
                                 u.node.col_offset))
    for use in uses:
        key = (id(use.moved_at), use.node.id)     # the first use after each move
        if key in seen:
            continue
        seen.add(key)
        name = use.node.id
        where = use.node if use.helper is None else use.anchor
        yield ctx.diag(
            "TL029", f"use of `{name}` after its tile was moved into `{use.into}`", where,
            labels=[ctx.label(use.moved_at, f"`{name}` is moved into `{use.into}` here")],
            help=f"use `{use.into}` from here on (it is the same tile), or do not rebind "
                 f"`{name}`: write `{name}.store(t)` directly",
            notes=["a `Mut` output is the kernel's one exclusive tile: binding it to another "
                   "name moves it there, so that one name (one value) is the only way to it, "
                   "as in Rust (E0382)"])


@rule
def calls_the_checker_follows(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL037: a helper call the checker cannot follow into."""
    for info in ctx.types.all_calls():
        if info.kind != "helper" or info.problem is None:
            continue
        yield ctx.diag(
            "TL037", f"the checker cannot follow the call of `{info.name}`: {info.problem}",
            ctx.at(info), labels=ctx.helper_label(info, "the call"),
            help="define the helper at module level (or in an earlier cell) as a plain `def` "
                 "with positional parameters, write its body inline, or call it inside "
                 "`with unsafe():`",
            notes=["a helper is checked through its body with its parameters bound to the "
                   "arguments; a call the checker cannot follow could write anywhere"])


def unidentified(info: CallInfo) -> bool:
    """A call whose callee the typing pass could not tell: not a language or cuTile function, a
    helper, or a method of a tile, a tensor or raw memory (``ct.__dict__["store"](...)``,
    ``Tensor.store(x, t)``, a method of a class or of a notebook object)."""
    if info.kind == "unknown":
        return True
    return info.kind == "method" and not isinstance(info.recv, (TensorV, TileV, RawMemV))


@rule
def calls_the_checker_can_tell(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL038: a call, outside ``with unsafe():``, whose callee the checker cannot tell."""
    me = ctx.kdef.name
    for info in outermost_calls([i for i in ctx.types.all_calls() if unidentified(i)]):
        f = info.node.func
        if info.in_unsafe or (info.kind == "method" and info.name == "store") or \
                (info.helper is None and isinstance(f, ast.Name) and f.id == me) or \
                ctx.unknown_from_elsewhere(f, info.path):
            continue                  # TL036 / TL032 / TL030, TL031, TL037 say why
        if info.kind == "method" and isinstance(f, ast.Attribute):
            what = f"`{short(f.value)}` is, so it cannot check the call of `{short(f)}`"
        else:
            what = f"`{short(f)}` calls, so it cannot check this call"
        yield ctx.diag(
            "TL038", f"the checker cannot tell what {what}", ctx.at(info),
            labels=ctx.helper_label(info, "the call"),
            help="call a tile-language or cuTile operation by its name (`exp(t)`, "
                 "`ct.exp(t)`), a method of a tile or of a tensor parameter (`t.astype(f16)`, "
                 "`z.store(t)`), or a helper written as a module-level `def`; or wrap the call "
                 "in `with unsafe():`",
            notes=["a call the checker cannot identify could write any memory; in safe code, "
                   "what the checker cannot prove is an error"])
