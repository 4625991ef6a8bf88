"""Kernel-level rules about the signature, the decorator and the Python subset a kernel body (and
the body of every helper it calls) may use (unknown names, unsupported constructs, recursion,
methods that do not exist, ``print``),
and the registry of every kernel-level pass in the order they run: ``TILE_RULES`` for
tile-language kernels (this module's rules, then ``ownership``, ``reads``, ``shapes`` and
``unsafe``), over the typing pass ``typecheck``; plain cuTile Python kernels have theirs in
``cutile_index``.

A rule reads one kernel (through a ``KernelContext``) and yields diagnostics; it must not assume
another ran, and must tolerate any syntax tree the parser accepts (including kernels with
signature errors: a parameter's dtype may be ``None``).
"""
from __future__ import annotations

import ast
from typing import Callable, Iterable, Iterator

from cutile_lab.checking.context import (PY_BUILTIN_NAMES, TILE_ATTRS, TILE_METHODS,
                                         KernelContext, ct_has, first_output, head,
                                         is_unsafe_with, short, tile_shape_text)
from cutile_lab.checking.tiletypes import TileV
from cutile_lab.diagnostics import Diagnostic, Label, Span
from cutile_lab.diagnostics.suggest import did_you_mean
from cutile_lab.language import surface
from cutile_lab.language.frontend import KERNEL_DECORATORS
from cutile_lab.language.options import option_problem

Rule = Callable[[KernelContext], Iterable[Diagnostic]]
RULES: list[Rule] = []


def rule(fn: Rule) -> Rule:
    RULES.append(fn)
    return fn


# --- the decorator ----------------------------------------------------------------------------

@rule
def kernel_options(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL004: ``@kernel(...)`` options the lowering would refuse, at the keyword that is wrong;
    a value that is not a literal (it would be dropped: a kernel compiles before any variable of
    the notebook exists)."""
    kdef = ctx.kdef
    for dec in kdef.node.decorator_list:
        if isinstance(dec, ast.Call):
            for kw in dec.keywords:
                if kw.arg is None:
                    yield ctx.diag("TL004", "`**` options cannot be read from the decorator",
                                   kw.value, help="write each option as `name=value`, e.g. "
                                                  "`@kernel(occupancy=2)`")
            if dec.args:
                yield ctx.diag("TL004", "`@kernel` takes options by name only", dec.args[0],
                               help="write each option as `name=value`, e.g. "
                                    "`@kernel(occupancy=2)`")
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


@rule
def other_decorators(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL031: a decorator beside ``@kernel``. A kernel is built from its source, so any other
    decorator (``@functools.cache``, a tracer, a name that does not even exist) would be
    dropped without a word: what the user wrote would not be what runs."""
    for dec in ctx.kdef.node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else \
            target.id if isinstance(target, ast.Name) else None
        if name in KERNEL_DECORATORS:
            continue
        yield ctx.diag("TL031", f"`@{short(dec)}` on a kernel would be ignored", dec,
                       help="remove it: a kernel is compiled from its source and takes no "
                            "decorator but `@kernel(...)`; wrap the launch in a host "
                            "function instead")


@rule
def load_padding(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL028: ``padding=`` of a load names a padding mode."""
    for call in ctx.calls():
        kind, name, _ = ctx.callee(call)
        if kind != "fn" or name not in ("load_tile_like", "load_tile"):
            continue
        for kw in call.keywords:
            if kw.arg != "padding":
                continue
            value = kw.value
            if isinstance(value, ast.Constant) and value.value in surface.PADDINGS:
                continue
            yield ctx.diag(
                "TL028", f"`padding={short(value)}` is not a padding mode", value,
                help="write one of " + ", ".join(f'`padding="{p}"`' for p in surface.PADDINGS) +
                     ": what a load puts where the tile reaches past the tensor's edge")


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
            allowed = {"load", "store", "get_raw_memory"} | TILE_ATTRS
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
                out = first_output(ctx)
                z = out.name if out else "z"
                yield ctx.diag(
                    "TL025", f"`{obj}` is a shared input: `.load()` only reads your own output "
                             "tile", parent if is_call else n,
                    help=f"read `{obj}` with `load_tile_like({obj}, {z})` (the tile at your own "
                         f"position) or `load_tile({obj}, index, shape)`")
            elif n.attr not in TILE_ATTRS and n.attr != "get_raw_memory":
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
                out = first_output(ctx)
                help = f"store a tile with `{out.name if out else 'z'}.store({obj})`"
            else:
                help = "tiles have the methods " + ", ".join(
                    f"`.{m}()`" for m in sorted(TILE_METHODS - {"insert", "extract"}))
            yield ctx.diag("TL025", f"tiles have no method `{n.attr}`", n, help=help)


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
            yield ctx.diag("TL031", msg, head(n), help=help)
            continue
        if isinstance(n, ast.Return) and n.value is not None:
            out = first_output(ctx)
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
                    out = first_output(ctx)
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
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, (ast.Store, ast.Del)):
            yield ctx.diag("TL031", f"attributes cannot be assigned in a kernel: "
                                    f"`{short(n)} = ...`", n,
                           help="give the value a name of its own: `name = ...`")
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


@rule
def helper_constructs(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL031 for the Python constructs a kernel cannot contain, in the body of a helper it
    calls (a helper is compiled into the kernel; the typing pass does not look inside a
    comprehension, a lambda or a nested ``def``, so what it would write is not known). Reported
    at the kernel's call of the helper, with a label at the construct."""
    seen: set[int] = set()
    for info in ctx.types.all_calls():
        h = info.callee
        if info.kind != "helper" or h is None or h.node is None or id(h.node) in seen:
            continue
        seen.add(id(h.node))
        skip: set[int] = set()
        for n in (m for stmt in h.node.body for m in ast.walk(stmt)):
            entry = _UNSUPPORTED.get(type(n)) if id(n) not in skip else None
            if entry is None and isinstance(n, ast.Starred) and id(n) not in skip:
                entry = ("`*` unpacking is not supported in a kernel",
                         "unpack every element by name, or pass each argument explicitly")
            if entry is None:
                continue
            skip.update(id(m) for m in ast.walk(n))
            msg, help = entry
            yield ctx.diag(
                "TL031", f"{msg} (in the helper `{h.name}`, which this kernel calls)",
                ctx.at(info), help=help,
                labels=[Label(Span.of_node(head(n), h.filename, h.line_offset),
                              f"here, in `{h.name}`")])


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
                           labels=[ctx.label(head(ctx.fn), f"`{me}` is defined here")],
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


@rule
def has_an_output(ctx: KernelContext) -> Iterator[Diagnostic]:
    """TL042: a kernel with no ``Mut`` output."""
    if ctx.outputs or any(d.code == "TL001" for d in ctx.kdef.diagnostics):
        return
    yield ctx.diag(
        "TL042", f"`{ctx.kdef.name}` has no `Mut` output, so it cannot write any result",
        head(ctx.fn),
        help='add an output parameter, e.g. `out: Mut[Tensor[f32, "B"]]`, and store into it '
             "with `out.store(tile)`; the launch grid comes from its partition")


def _registry() -> list[Rule]:
    from cutile_lab.checking import ownership, reads, shapes, unsafe
    return RULES + ownership.RULES + reads.RULES + shapes.RULES + unsafe.RULES


TILE_RULES: list[Rule] = _registry()
