"""Lowering of a tile-language kernel to cuTile Python source, line for line.

The lowered text keeps every statement on the user's own line, so cuTile's errors, the Tile IR's
debug locations and tileiras' remarks all carry the user's line numbers. A ``PositionMap`` takes a
(line, column) of the lowered text back to the span of the user's expression.

The memory forms of the language become explicit-index cuTile calls on the kernel's own tile:
``load_tile_like(x, z)`` -> ``ct.load(x, index=(ct.bid(0),), shape=(B,), padding_mode=ZERO)``,
``z.store(t)`` -> ``ct.store(z, index=(ct.bid(0),), tile=t)``; ``with unsafe():`` becomes
``if True:``. Plain cuTile Python kernels pass through unchanged.
"""
from __future__ import annotations

import ast
import copy
import hashlib
from dataclasses import dataclass, field

from cutile_lab.diagnostics import Span
from cutile_lab.errors import CompileError
from cutile_lab.language.dtypes import ALIASES, DTYPES
from cutile_lab.language.frontend import KernelDef
from cutile_lab.language.options import option_problem
from cutile_lab.language.surface import OPS, PADDINGS, RAW_MEMORY

CT = "ct"
_ZERO_PAD = f"{CT}.PaddingMode.ZERO"


@dataclass
class PositionMap:
    """Lowered (line, col) -> the user's span, from the parallel walk of the two syntax trees."""

    filename: str
    entries: list[tuple[int, int, int, int, Span]] = field(default_factory=list)

    def add(self, lowered: ast.AST, span: Span) -> None:
        self.entries.append((lowered.lineno, lowered.col_offset,
                             lowered.end_lineno or lowered.lineno,
                             lowered.end_col_offset or 0, span))

    def lookup(self, line: int, col: int | None = None) -> Span | None:
        """The user's span of the innermost lowered node containing (line, col)."""
        best = None
        best_size = None
        for l0, c0, l1, c1, span in self.entries:
            if col is None:
                inside = l0 <= line <= l1
            else:
                inside = (l0, c0) <= (line, col) <= (l1, max(c1, c0 + 1) - 1) or \
                    (l0 == l1 == line and c0 <= col < max(c1, c0 + 1))
            if not inside:
                continue
            size = (l1 - l0, (c1 - c0) if l0 == l1 else 10 ** 6)
            if best_size is None or size < best_size:
                best, best_size = span, size
        if best is None and col is not None:
            return self.lookup(line, None)
        return best


@dataclass
class LoweredKernel:
    name: str
    text: str
    filename: str
    param_names: list[str]       # the lowered function's parameters, in order
    const_params: list[str]      # those that are compile-time constants
    positions: PositionMap
    user_filename: str

    def user_span(self, line: int, col: int | None = None) -> Span:
        span = self.positions.lookup(line, col)
        return span or Span(self.user_filename, line, col or 0)


def lowered_filename(kdef: KernelDef, text: str) -> str:
    # Named by content, so the same kernel always gives the same binary (debug info names it).
    digest = hashlib.sha1(text.encode()).hexdigest()[:12]
    return f"<lowered {kdef.name} {digest}>"


def lower(kdef: KernelDef) -> LoweredKernel:
    source = kdef.source
    mark_elifs(kdef.node, source.text.splitlines())
    if kdef.kind == "cutile":
        node = copy.deepcopy(kdef.node)
        node.decorator_list = []
        params = [a.arg for a in node.args.args]
        # by what the annotation evaluates to (language.constants, resolved when the Kernel
        # was made in its namespace): ``ConstInt = ct.Constant[int]`` aliases included
        consts = [p.name for p in kdef.params if p.role == "const"]
    else:
        check_options(kdef)
        node, params, consts = _rewrite(kdef)
    n_lines = len(source.text.splitlines()) + 1
    text = "\n" * source.line_offset + _LineEmitter().emit(node, n_lines)
    fname = lowered_filename(kdef, text)
    positions = PositionMap(fname)
    _map_positions(node, text, positions, source)
    return LoweredKernel(kdef.name, text, fname, params, consts, positions, source.filename)


# --- rewriting ------------------------------------------------------------------------------

def _ct(attr: str) -> ast.expr:
    return ast.Attribute(ast.Name(CT, ast.Load()), attr, ast.Load())


def _expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def _own_tile_uses(kdef: KernelDef, copied: ast.FunctionDef) -> dict[int, tuple]:
    """The uses of the kernel's own tiles, found by value (the checker's typing pass), keyed by
    the copied node: ``("call", out, method)`` for ``.store``/``.load`` calls, ``("value", out)`` for
    expressions that are the tile (an alias ``out = z``, an element of a tuple), ``("bound",
    out)`` for a bound ``z.store`` kept in a name; so that they lower like ``z`` itself."""
    from cutile_lab.checking.context import KernelContext
    from cutile_lab.checking.tiletypes import TensorV
    from cutile_lab.checking.typecheck_values import BoundV
    types = KernelContext(kdef).types
    uses: dict[int, tuple[str, str]] = {}
    for new, orig in zip(ast.walk(copied), ast.walk(kdef.node)):
        info = types.call(orig) if isinstance(orig, ast.Call) else None
        if info is not None:
            if info.kind == "method" and info.name in ("store", "load") and \
                    isinstance(info.recv, TensorV) and info.recv.param.role == "mut":
                uses[id(new)] = ("call", info.recv.param.name, info.name)
            continue
        v = types.of(orig) if isinstance(orig, ast.expr) else None
        if isinstance(v, TensorV) and v.param.role == "mut":
            uses[id(new)] = ("value", v.param.name)
        elif isinstance(v, BoundV) and isinstance(v.recv, TensorV) and \
                v.recv.param.role == "mut" and isinstance(orig, ast.Attribute) and \
                v.name in ("store", "load"):
            uses[id(new)] = ("bound", v.recv.param.name)
    return uses


def _rewrite(kdef: KernelDef) -> tuple[ast.FunctionDef, list[str], list[str]]:
    node = copy.deepcopy(kdef.node)
    own_uses = _own_tile_uses(kdef, node)
    node.decorator_list = []
    const_names = [p.name for p in kdef.params if p.role == "const"]
    implicit = [g for g in kdef.const_generics if g not in const_names]
    new_args = []
    for arg in node.args.args:
        p = kdef.param(arg.arg)
        ann = None
        if p is not None and p.role == "const":
            ann = _expr(f"{CT}.Constant[int]")
        new_args.append(ast.arg(arg.arg, ann))
    for g in implicit:
        new_args.append(ast.arg(g, _expr(f"{CT}.Constant[int]")))
    node.args = ast.arguments(posonlyargs=[], args=new_args, vararg=None, kwonlyargs=[],
                              kw_defaults=[], kwarg=None, defaults=[])
    node.returns = None
    _copy_loc_deep(node.args, node)
    outputs = {p.name: p for p in kdef.outputs}
    order = tile_order(kdef)
    persistent = is_persistent(kdef)
    remapped = order is not None or persistent
    rewriter = _BodyRewriter(outputs, kdef, grouped=remapped, reverse=is_reversed(kdef))
    rewriter.own_uses = own_uses
    node.body = [rewriter.visit(s) for s in node.body]
    if remapped:
        node.body = _tile_prologue(kdef, order, persistent, node.body[0]) + node.body
    if persistent:
        node = _persistent_loop(kdef, node)
    ast.fix_missing_locations(node)
    params = [a.arg for a in node.args.args]
    return node, params, const_names + implicit


def tile_coord(axis: int) -> str:
    """The name of the current tile's coordinate along output axis ``axis`` in a remapped
    kernel (grouped order or persistent schedule): computed by the prologue from one index."""
    return f"_t{axis}"


def tile_count(axis: int) -> str:
    """The name of the output's tile count along ``axis`` in a remapped kernel."""
    return f"_n{axis}"


def tile_order(kdef: KernelDef) -> int | None:
    """The group size when the kernel asks for grouped tile order (``@cl.kernel(
    tile_order="grouped", group_size=8)``), else None. Grouped order walks the output's tiles
    in column bands of ``group_size`` tile rows, so that neighbouring tiles run together and
    share operands in L2; it is a bijection of the launch index, so each tile still has one
    owner. The launch grid is then 1-D."""
    if kdef.kind != "tile" or kdef.options.get("tile_order", "row") != "grouped":
        return None
    return int(kdef.options.get("group_size", 8))


def check_options(kdef: KernelDef) -> None:
    """Refuse to lower a kernel whose ``@kernel(...)`` options are wrong (the checker reports
    the same problem as TL004 when the kernel is defined)."""
    problem = option_problem(kdef.options)
    if problem is not None:
        raise CompileError(problem.message, span=kdef.span, help=problem.help)


def is_reversed(kdef: KernelDef) -> bool:
    """``@cl.kernel(tile_order="reverse")``: the launch index counts the tiles from the last one
    (every axis reversed, a bijection, so each tile still has one owner). The GPU starts
    instances in launch order, so where later tiles hold more work (causal attention: the last
    query blocks see the most keys) the longest start first and the last wave is short."""
    return kdef.kind == "tile" and kdef.options.get("tile_order", "row") == "reverse"


def is_persistent(kdef: KernelDef) -> bool:
    """``@cl.kernel(schedule="persistent")``: the launch has about one instance per SM, and each
    instance loops over the output tiles ``bid, bid + instances, ...`` -- a disjoint striding,
    so every tile still has exactly one owner. The launch grid is then 1-D."""
    return kdef.kind == "tile" and kdef.options.get("schedule", "tiles") == "persistent"


def _tile_prologue(kdef: KernelDef, group: int | None, persistent: bool,
                   first: ast.stmt) -> list[ast.stmt]:
    """Statements that compute the current tile's coordinates ``_t0, _t1, ...`` (one per axis
    of the output, of any rank) from the launch index (or, when persistent, from the loop's
    ``_tile``), and the tile counts ``_n0, _n1, ...``; placed on the first body line. Row-major
    order over every axis; grouped order walks the first two axes in column bands of
    ``group`` tile rows (a bijection either way, so every tile has exactly one owner)."""
    out = kdef.outputs[0]
    rank = len(out.shape)
    shape = "(" + ", ".join(str(d) for d in out.shape) + ",)"
    pid = "_tile" if persistent else f"{CT}.bid(0)"
    lines = [f"{tile_count(a)} = {CT}.num_tiles({out.name}, {a}, {shape})" for a in range(rank)]
    rest = pid
    if rank > 2:            # the axes past the first two vary fastest, in row-major order
        lines.append(f"_rest = {pid}")
        rest = "_rest"
        for a in range(rank - 1, 1, -1):
            lines.append(f"{tile_coord(a)} = _rest % {tile_count(a)}; "
                         f"_rest = _rest // {tile_count(a)}")
    t0, t1, n0, n1 = tile_coord(0), tile_coord(1), tile_count(0), tile_count(1)
    if rank == 1:
        lines.append(f"{t0} = {rest}")
    elif group is None:
        lines.append(f"{t0} = {rest} // {n1}; {t1} = {rest} % {n1}")
    else:
        lines.append(f"_pid = {rest}; _gsz = {group} * {n1}; _first = (_pid // _gsz) * {group}; "
                     f"_gm = min({n0} - _first, {group}); "
                     f"{t0} = _first + (_pid % _gsz) % _gm; {t1} = (_pid % _gsz) // _gm")
    return _at_line(ast.parse("\n".join(lines)).body, first)


def _persistent_loop(kdef: KernelDef, node: ast.FunctionDef) -> ast.FunctionDef:
    """Wrap the body in ``for _tile in range(bid, tiles, instances):``. The loop header takes
    the ``def`` line and the ``def`` moves up to the decorator's line (persistent kernels always
    have one), so every statement keeps its own line."""
    out = kdef.outputs[0]
    shape = "(" + ", ".join(str(d) for d in out.shape) + ",)"
    tiles = " * ".join(f"{CT}.num_tiles({out.name}, {axis}, {shape})"
                       for axis in range(len(out.shape)))
    loop = ast.parse(f"for _tile in range({CT}.bid(0), {tiles}, {CT}.num_blocks(0)):\n"
                     f"    pass").body[0]
    _at_line([loop], kdef.node)
    loop.body = node.body
    decorators = [d.lineno for d in kdef.node.decorator_list]
    if not decorators:
        raise CompileError("a persistent schedule is asked for without a decorator",
                           span=kdef.span, help='write @kernel(schedule="persistent") above the '
                           "kernel's def line")
    node.body = [loop]
    node.lineno = min(decorators)
    return node


def _at_line(stmts: list[ast.stmt], where: ast.AST) -> list[ast.stmt]:
    for st in stmts:
        for n in ast.walk(st):
            if hasattr(n, "lineno"):
                ast.copy_location(n, where)
                n.end_lineno, n.end_col_offset = where.lineno, where.col_offset
    return stmts


def _copy_loc_deep(tree: ast.AST, src: ast.AST) -> None:
    for n in ast.walk(tree):
        if isinstance(n, (ast.expr, ast.stmt, ast.arg)):
            ast.copy_location(n, src)


def _dim_expr(d) -> str:
    return str(d)


class _BodyRewriter(ast.NodeTransformer):
    def __init__(self, outputs, kdef: KernelDef, grouped: bool = False, reverse: bool = False):
        self.outputs = outputs
        self.grouped = grouped
        self.reverse = reverse
        self.rank = len(kdef.outputs[0].shape) if kdef.outputs else 0
        self.source = kdef.source
        self.locals = _assigned_names(kdef.node) | {p.name for p in kdef.params}
        self.in_unsafe = 0
        self.own_uses: dict[int, tuple] = {}

    def _own_index(self, out) -> str:
        if self.grouped:
            return "(" + "".join(f"{tile_coord(a)}, " for a in range(len(out.shape))) + ")"
        return "(" + "".join(f"{self._bid(i)}, " for i in range(len(out.shape))) + ")"

    def _bid(self, axis) -> str:
        """The tile coordinate of launch axis ``axis`` (source text)."""
        if self.reverse:
            return f"({CT}.num_blocks({axis}) - 1 - {CT}.bid({axis}))"
        return f"{CT}.bid({axis})"

    def _tile_shape(self, out) -> str:
        return "(" + "".join(f"{_dim_expr(d)}, " for d in out.shape) + ")"

    def _replace(self, old: ast.AST, text: str, **subs: ast.expr) -> ast.expr:
        new = _expr(text)
        for n in ast.walk(new):
            if isinstance(n, ast.Name) and n.id in subs:
                pass
        new = _Substitute(subs).visit(new)
        for n in ast.walk(new):
            if not getattr(n, "_keep_loc", False) and isinstance(n, (ast.expr,)):
                ast.copy_location(n, old)
        return new

    def visit_With(self, node: ast.With):
        if len(node.items) == 1 and _is_unsafe(node.items[0].context_expr):
            self.in_unsafe += 1
            body = [self.visit(s) for s in node.body]
            self.in_unsafe -= 1
            new = ast.If(test=ast.Constant(True), body=body, orelse=[])
            ast.copy_location(new, node)
            ast.copy_location(new.test, node.items[0].context_expr)
            return new
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name):
        if isinstance(node.ctx, ast.Load) and node.id not in self.locals:
            dt = DTYPES.get(node.id) or ALIASES.get(node.id)
            if dt is not None:
                return ast.copy_location(_ct(dt.cutile), node)
        return node

    def visit_Attribute(self, node: ast.Attribute):
        use = self.own_uses.get(id(node))
        if use is not None and use[0] == "bound":      # `put = z.store`: its calls are lowered
            return ast.copy_location(ast.Constant(None), node)
        if node.attr == "shape" and self.own_uses.get(id(node.value), ("",))[0] == "value":
            return self._replace(node, self._tile_shape(self.outputs[
                self.own_uses[id(node.value)][1]]))
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call):
        use = self.own_uses.get(id(node))
        method = use[2] if use is not None and use[0] == "call" else None
        node = self.generic_visit(node)
        f = node.func
        args, kws = node.args, node.keywords
        # z.store(t) / z.load() on the kernel's own tile, under any name
        if use is not None and use[0] == "call":
            out = self.outputs[use[1]]
            z = ast.Name(out.name, ast.Load())
            if method == "store" and len(args) == 1 and not kws:
                return self._replace(node, f"{CT}.store(Z, index={self._own_index(out)}, tile=T)",
                                     Z=z, T=args[0])
            if method == "load" and not args:
                return self._replace(node, f"{CT}.load(Z, index={self._own_index(out)}, "
                                     f"shape={self._tile_shape(out)}, padding_mode={_ZERO_PAD})",
                                     Z=z)
            return node
        if not isinstance(f, ast.Name) or f.id in self.locals:
            return node
        name = f.id
        if name == "load_tile_like" and len(args) == 2 and \
                self.own_uses.get(id(args[1]), ("",))[0] == "value":
            out = self.outputs[self.own_uses[id(args[1])][1]]
            new = self._replace(node, f"{CT}.load(X, index={self._own_index(out)}, "
                                f"shape={self._tile_shape(out)})", X=args[0])
            new.keywords.extend(_padding_keywords(kws))
            return new
        if name == "load_tile":
            call = ast.Call(_ct("load"), args[:1], [])
            names = ["index", "shape"]
            for a, kwname in zip(args[1:], names):
                call.keywords.append(ast.keyword(kwname, a))
            call.keywords.extend(_padding_keywords(kws))
            return _located(call, node)
        if name in ("tile_id", "num_tiles") and self.grouped and len(args) == 1 and not kws \
                and isinstance(args[0], ast.Constant) and isinstance(args[0].value, int) \
                and 0 <= args[0].value < self.rank:
            pick = tile_coord if name == "tile_id" else tile_count
            return _located(ast.Name(pick(args[0].value), ast.Load()), node)
        if name in ("tile_id", "num_tiles") and self.grouped and len(args) + len(kws) == 1:
            # the launch is 1-D here: a launch axis the prologue did not compute has no meaning
            raise CompileError(f"`{name}` of a kernel with a grouped tile order or a persistent "
                               "schedule takes a constant axis of its output "
                               f"(0 to {self.rank - 1})",
                               span=self.source.span(node),
                               help=f"write {name}(0) ... {name}({self.rank - 1}) with a "
                                    "literal axis")
        if name == "tile_id":
            if self.reverse and len(args) == 1 and not kws:
                return self._replace(node, self._bid("AXIS"), AXIS=args[0])
            return _located(ast.Call(_ct("bid"), args, kws), node)
        if name == "num_tiles":
            target = "num_blocks" if len(args) + len(kws) == 1 else "num_tiles"
            return _located(ast.Call(_ct(target), args, kws), node)
        if name in OPS or (self.in_unsafe and name in RAW_MEMORY):
            return _located(ast.Call(_ct(name), args, kws), node)
        return node


def _padding_keywords(kws: list[ast.keyword]) -> list[ast.keyword]:
    """``padding="neg_inf"`` (the language's spelling) -> ``padding_mode=ct.PaddingMode.NEG_INF``;
    loads pad with zeros unless told otherwise."""
    out = [k for k in kws if k.arg not in ("padding", "padding_mode")]
    chosen = next((k for k in kws if k.arg in ("padding", "padding_mode")), None)
    mode = _expr(_ZERO_PAD)
    if chosen is not None:
        value = chosen.value
        if isinstance(value, ast.Constant) and isinstance(value.value, str) \
                and value.value in PADDINGS:
            mode = _expr(f"{CT}.PaddingMode.{PADDINGS[value.value]}")
        else:
            mode = value
        ast.copy_location(mode, chosen.value)
        for n in ast.walk(mode):
            if not hasattr(n, "lineno"):
                ast.copy_location(n, chosen.value)
    out.append(ast.keyword("padding_mode", mode))
    return out


def _located(new: ast.AST, old: ast.AST) -> ast.AST:
    for n in ast.walk(new):
        if isinstance(n, ast.expr) and not hasattr(n, "lineno"):
            ast.copy_location(n, old)
    return ast.copy_location(new, old)


class _Substitute(ast.NodeTransformer):
    def __init__(self, subs):
        self.subs = subs
        self.used: set[str] = set()

    def visit_Name(self, node):
        if node.id in self.subs:
            repl = self.subs[node.id]
            if node.id in self.used:            # a second use gets a tree of its own
                repl = copy.deepcopy(repl)
            self.used.add(node.id)
            for n in ast.walk(repl):
                n._keep_loc = True
            return repl
        return node


def _is_unsafe(expr: ast.expr) -> bool:
    target = expr.func if isinstance(expr, ast.Call) else expr
    return (isinstance(target, ast.Name) and target.id == "unsafe") or \
        (isinstance(target, ast.Attribute) and target.attr == "unsafe")


def _assigned_names(fn: ast.FunctionDef) -> set[str]:
    names = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
        elif isinstance(n, ast.arg) and n is not fn:
            names.add(n.arg)
    return names


# --- line-preserving emission -----------------------------------------------------------------

class _LineEmitter:
    """Writes each statement on its original line; compound statements get their header on
    their own line and their bodies recursively."""

    def emit(self, fn: ast.FunctionDef, n_lines: int) -> str:
        self.lines: dict[int, str] = {}
        stub = ast.FunctionDef(fn.name, fn.args, [ast.Pass()], [], None, None)
        header = ast.unparse(ast.fix_missing_locations(ast.copy_location(stub, fn)))
        header = header.split("\n")[0]
        self._put(fn.lineno, 0, header)
        self._body(fn.body, 1)
        last = max(self.lines) if self.lines else 1
        out = []
        for i in range(1, max(n_lines, last) + 1):
            out.append(self.lines.get(i, ""))
        return "\n".join(out) + "\n"

    def _put(self, line: int, depth: int, text: str) -> None:
        if line in self.lines:
            self.lines[line] += "; " + text if not self.lines[line].endswith(":") else " " + text
        else:
            self.lines[line] = "    " * depth + text

    def _body(self, stmts, depth) -> None:
        for s in stmts:
            self._stmt(s, depth)

    def _stmt(self, s: ast.stmt, depth: int) -> None:
        line = s.lineno
        if isinstance(s, (ast.For, ast.While, ast.If, ast.With)):
            if isinstance(s, ast.For):
                head = f"for {ast.unparse(s.target)} in {ast.unparse(s.iter)}:"
            elif isinstance(s, ast.While):
                head = f"while {ast.unparse(s.test)}:"
            elif isinstance(s, ast.If):
                head = f"if {ast.unparse(s.test)}:"
            else:
                head = f"with {', '.join(ast.unparse(i) for i in s.items)}:"
            self._put(line, depth, head)
            self._body(s.body, depth + 1)
            if getattr(s, "orelse", None):
                self._else(s, depth)
            return
        text = ast.unparse(s)
        if "\n" in text:   # a construct the language rejects anyway; keep it valid Python
            for i, part in enumerate(text.split("\n")):
                self._put(line + i, depth, part)
            return
        self._put(line, depth, text)

    def _else(self, s, depth: int) -> None:
        first = s.orelse[0]
        if isinstance(s, ast.If) and len(s.orelse) == 1 and isinstance(first, ast.If) \
                and getattr(first, "_is_elif", False):
            self._put(first.lineno, depth, f"elif {ast.unparse(first.test)}:")
            self._body(first.body, depth + 1)
            if first.orelse:
                self._else(first, depth)
            return
        else_line = getattr(s, "_else_line", None) or max(
            (ln for ln in range(s.lineno + 1, first.lineno) if ln not in self.lines),
            default=first.lineno)
        self._put(else_line, depth, "else:")
        self._body(s.orelse, depth + 1)


def mark_elifs(fn: ast.FunctionDef, text_lines: list[str]) -> None:
    """``elif`` and ``else:`` are not in the syntax tree: read them off the source lines."""
    for n in ast.walk(fn):
        if isinstance(n, (ast.If, ast.For, ast.While)) and n.orelse:
            first = n.orelse[0]
            src = text_lines[first.lineno - 1] if first.lineno <= len(text_lines) else ""
            if isinstance(n, ast.If) and isinstance(first, ast.If) and len(n.orelse) == 1 \
                    and src.lstrip().startswith("elif"):
                first._is_elif = True
            else:
                for ln in range(first.lineno, n.lineno, -1):
                    t = text_lines[ln - 1] if ln <= len(text_lines) else ""
                    if t.lstrip().startswith("else"):
                        n._else_line = ln
                        break


def _map_positions(node: ast.FunctionDef, text: str, positions: PositionMap, source) -> None:
    lowered_tree = ast.parse(text)
    lowered_fn = next(n for n in lowered_tree.body if isinstance(n, ast.FunctionDef))
    for orig, low in zip(ast.walk(node), ast.walk(lowered_fn)):
        if type(orig) is not type(low):
            break
        if isinstance(orig, (ast.expr, ast.stmt)) and hasattr(low, "lineno") \
                and hasattr(orig, "lineno"):
            positions.add(low, source.span(orig))
