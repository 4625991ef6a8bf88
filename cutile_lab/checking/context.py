"""What every kernel-level pass needs to know about one kernel, computed once: its parameters by
role, the names its body assigns, which nodes sit inside ``with unsafe():``, the module-level
names it may read, and (lazily) the typing pass (``typecheck``) whose values the other passes
read; plus the small helpers the passes share to word and place their diagnostics.
"""
from __future__ import annotations

import ast
import builtins
import linecache
from typing import Callable, Iterable, Iterator, Mapping

from cutile_lab.diagnostics import CODES, Diagnostic, Label, Span
from cutile_lab.language import surface
from cutile_lab.language.frontend import KernelDef, Param

# What ``cuda.tile`` exports (cuda-tile 1.x), so that ``ct.<name>`` can be checked without
# importing cuTile; a name missing here is looked up in the real module before it is reported.
CT_NAMES = frozenset("""
Array ArrayAnnotation ByTarget Constant ConstantAnnotation DType IndexedWithInt64 ListAnnotation
MemoryOrder MemoryScope PaddingMode RoundingMode Scalar ScalarInt64 Slice StaticException Tile
TiledView abs add arange argmax argmin assert_ assume_divisible_by astile astype atan2 atomic_add
atomic_and atomic_cas atomic_max atomic_min atomic_or atomic_xchg atomic_xor bfloat16 bid bitcast
bitwise_and bitwise_lshift bitwise_not bitwise_or bitwise_rshift bitwise_xor bool_ broadcast_to cat
cdiv ceil compilation cos cosh cumprod cumsum divmod ensure_constant equal exp exp2 expand_dims
extract float16 float32 float4_e2m1fn float64 float8_e4m3fn float8_e5m2 float8_e5m3fnu
float8_e8m0fnu floor floordiv full function gather greater greater_equal insert int16 int32 int64
int8 isnan kernel launch less less_equal load load_advanced_indexing log log2 matmul max maximum
min minimum mma mma_scaled mod mul negative not_equal num_blocks num_tiles ones pack_to_bytes
permute pow print printf prod reduce reshape rsqrt scan scatter sin sinh sqrt static_assert
static_eval static_exception static_iter store store_advanced_indexing sub sum tan tanh tfloat32
transpose truediv tune uint16 uint32 uint64 uint8 unpack_from_bytes where zeros
""".split())

# Raw memory operations: they read or write at indices the checker cannot verify.
RAW_WRITES = frozenset({"store", "scatter", "store_advanced_indexing", "store_offset"} |
                       {n for n in surface.RAW_MEMORY if n.startswith("atomic_")} |
                       {f"atomic_{op}_offset" for op in ("add", "and", "cas", "max", "min",
                                                          "or", "xchg", "xor")})
RAW_READS = frozenset({"load", "gather", "load_advanced_indexing", "load_offset"})
RAW_INDEX = frozenset({"bid", "num_blocks"})
TILE_METHODS = frozenset({"astype", "reshape", "permute", "transpose", "item", "extract",
                          "insert", "bitcast", "expand_dims", "broadcast_to"})
TILE_ATTRS = frozenset({"shape", "dtype", "ndim"})
PY_BUILTIN_NAMES = frozenset(dir(builtins))
# values of constructs the Python-subset rule (TL031) reports where they stand
_UNSUPPORTED_VALUES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
                       ast.NamedExpr, ast.Starred, ast.List, ast.Dict, ast.Set)


def ct_has(name: str) -> bool:
    if name in CT_NAMES:
        return True
    try:   # a newer cuda-tile may have more; only looked up for names that look wrong
        import cuda.tile as ct
    except Exception:
        return True            # cannot tell: do not report
    return hasattr(ct, name)


def short(node: ast.AST, limit: int = 40) -> str:
    try:
        text = ast.unparse(node)
    except Exception:
        return "..."
    return text if len(text) <= limit else text[:limit - 3] + "..."


def module_imports(tree: ast.Module) -> dict[str, str]:
    """Top-level ``import numpy as np`` / ``import math``: alias -> module name."""
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    out[a.asname] = a.name
                else:
                    out[a.name.split(".")[0]] = a.name.split(".")[0]
    return out


def module_level_names(tree: ast.Module) -> tuple[set[str], bool]:
    """Names a module defines at top level, and whether it has a ``from x import *``."""
    names: set[str] = set()
    wildcard = False
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                if a.name == "*":
                    mod = getattr(node, "module", "") or ""
                    if not mod.startswith("cutile_lab") and not mod.startswith("cuda.tile"):
                        wildcard = True
                    continue
                names.add(a.asname or a.name.split(".")[0])
        else:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    names.add(sub.id)
    return names, wildcard


def _module_names_of_file(filename: str) -> tuple[set[str], bool] | None:
    lines = linecache.getlines(filename)
    if not lines:
        return None
    try:
        tree = ast.parse("".join(lines))
    except (SyntaxError, ValueError):
        return None
    return module_level_names(tree)


class KernelContext:
    """One kernel, prepared for the rules."""

    def __init__(self, kdef: KernelDef, globals_: Mapping | None = None):
        self.kdef = kdef
        self.source = kdef.source
        self.fn: ast.FunctionDef = kdef.node
        self.params: dict[str, Param] = {p.name: p for p in kdef.params}
        self.outputs: dict[str, Param] = {p.name: p for p in kdef.params if p.role == "mut"}
        self.shared: dict[str, Param] = {p.name: p for p in kdef.params if p.role == "shared"}
        self.const_generics = set(kdef.const_generics)
        self.body_nodes: list[ast.AST] = [n for s in self.fn.body for n in ast.walk(s)]
        self.locals: set[str] = set()
        for n in self.body_nodes:
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                self.locals.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.locals.add(n.name)
            elif isinstance(n, ast.arg):
                self.locals.add(n.arg)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                for a in n.names:
                    self.locals.add(a.asname or a.name.split(".")[0])
            elif isinstance(n, ast.ExceptHandler) and n.name:
                self.locals.add(n.name)
        self.parents: dict[int, ast.AST] = {}
        for n in [self.fn] + self.body_nodes:
            for c in ast.iter_child_nodes(n):
                self.parents[id(c)] = n
        self.unsafe_blocks: list[ast.With] = [
            n for n in self.body_nodes if isinstance(n, ast.With) and is_unsafe_with(n)]
        self.unsafe_of: dict[int, ast.With] = {}
        for w in self.unsafe_blocks:
            for s in w.body:
                for n in ast.walk(s):
                    self.unsafe_of.setdefault(id(n), w)
        # parameters whose annotation the frontend rejected (TL001): rules leave them alone
        self.broken: set[str] = {p.name for p in kdef.params
                                 if p.role != "const" and p.dtype is None}
        # nodes inside constructs TL031 reports as a whole (nested defs, lambdas, `except`
        # clauses, imports): other rules do not look inside them
        self.unsupported_inner: set[int] = set()
        for n in self.body_nodes:
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
                              ast.Import, ast.ImportFrom)):
                self.unsupported_inner.update(id(m) for m in ast.walk(n) if m is not n)
            elif isinstance(n, ast.ExceptHandler) and n.type is not None:
                self.unsupported_inner.update(id(m) for m in ast.walk(n.type))
        self.globals = globals_
        self._module: tuple[set[str], bool] | None = None
        self._types = None

    # names

    @property
    def module_names(self) -> set[str]:
        return self._module_info()[0]

    @property
    def module_wildcard(self) -> bool:
        return self._module_info()[1]

    def _module_info(self) -> tuple[set[str], bool]:
        if self._module is None:
            names: set[str] = set()
            wildcard = False
            if self.globals is not None:
                names |= set(self.globals)
            try:
                tree = ast.parse(self.source.text)
                n, w = module_level_names(tree)
                names |= n
                wildcard |= w
            except (SyntaxError, ValueError):
                pass
            if self.source.line_offset or self.globals is None:
                info = _module_names_of_file(self.source.filename)
                if info is not None:
                    names |= info[0]
                    wildcard |= info[1]
            self._module = (names, wildcard)
        return self._module

    @property
    def modules(self) -> dict[str, str]:
        """Module-level names bound to Python modules: name -> module name."""
        if getattr(self, "_modules", None) is None:
            mods: dict[str, str] = {}
            try:
                mods.update(module_imports(ast.parse(self.source.text)))
            except (SyntaxError, ValueError):
                pass
            if self.source.line_offset:
                lines = linecache.getlines(self.source.filename)
                try:
                    mods.update(module_imports(ast.parse("".join(lines))))
                except (SyntaxError, ValueError):
                    pass
            import types
            for k, v in (self.globals or {}).items():
                if isinstance(v, types.ModuleType):
                    mods[k] = v.__name__
            self._modules = mods
        return self._modules

    def language_name(self, name: str) -> bool:
        """A name the language gives meaning to, not shadowed by a local or a parameter."""
        return name not in self.locals and name not in self.params

    @property
    def types(self):
        """The typing pass over this kernel (``typecheck.Typing``), run once, on first use."""
        if self._types is None:
            from cutile_lab.checking.typecheck import Typing
            self._types = Typing(self)
        return self._types

    def in_unsafe(self, node: ast.AST) -> bool:
        return id(node) in self.unsafe_of

    # calls

    def calls(self) -> Iterator[ast.Call]:
        for n in self.body_nodes:
            if isinstance(n, ast.Call):
                yield n

    def callee(self, call: ast.Call) -> tuple[str, str, ast.AST | None]:
        """What a call of the kernel body calls, by the value its function expression has:
        ('fn', name, None) for a language function, ('ct', name, None) for a cuTile function
        (``ct.name``, a renamed ``cuda.tile``, a name imported from it), ('method', name, obj)
        for a method of a value (``z.store``, a bound method kept in a local), ('other', name,
        None) for anything else (a helper, an unknown)."""
        info = self.types.call(call)
        if info is None:
            return "other", "", None
        if info.kind == "lang":
            return ("fn" if info.space == "lang" else "ct"), info.name, None
        if info.kind == "method":
            obj = call.func.value if isinstance(call.func, ast.Attribute) else call.func
            return "method", info.name, obj
        return "other", info.name, None

    def raw_op(self, call: ast.Call) -> str | None:
        """The raw memory (or raw index) operation a call performs, if any."""
        info = self.types.call(call)
        return info.raw_op if info is not None else None

    def param_named(self, node: ast.AST | None, roles=("mut", "shared"),
                    path: tuple = ()) -> Param | None:
        """The tensor parameter ``node``'s value is (through any alias, or the receiver of a
        bound method), if it has one of ``roles``."""
        from cutile_lab.checking.tiletypes import TensorV
        from cutile_lab.checking.typecheck_values import BoundV
        if node is None:
            return None
        v = self.types.of(node, path)
        if isinstance(v, BoundV):
            v = v.recv
        if isinstance(v, TensorV) and v.param.role in roles:
            return v.param
        return None

    def unknown_from_elsewhere(self, arg: ast.AST, path: tuple = ()) -> bool:
        """Whether another rule already reports what makes this value unknown (an unknown name, a
        call the checker cannot follow, an unsupported construct)."""
        for n in ast.walk(arg):
            if not path and isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and \
                    self.types.of(n, path) is None and self.name_reported_unknown(n.id):
                return True
            if not path and isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) \
                    and self.host_module_function(n):
                return True
            if isinstance(n, ast.Call):
                info = self.types.call(n, path)
                if info is not None and info.kind == "helper" and info.problem is not None:
                    return True
            if isinstance(n, _UNSUPPORTED_VALUES):
                return True        # TL031, in the kernel or in the helper (helper_constructs)
            if not path and isinstance(n, ast.Name) and n.id in self.locals and \
                    self.types.of(n, path) is None and n.id in self._unsupported_bindings():
                return True
        return False

    def _unsupported_bindings(self) -> set[str]:
        """Locals the body binds to a construct TL031 reports (``f = lambda t: ...``)."""
        if getattr(self, "_unsupported_names", None) is None:
            names = set()
            for n in self.body_nodes:
                if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None and \
                        any(isinstance(m, _UNSUPPORTED_VALUES) for m in ast.walk(n.value)):
                    targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                    names |= {m.id for t in targets for m in ast.walk(t)
                              if isinstance(m, ast.Name)}
                elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(n.name)
            self._unsupported_names = names
        return self._unsupported_names

    def name_reported_unknown(self, name: str) -> bool:
        """Whether the unknown-name rule (TL030) reports ``name`` where the kernel body reads
        it: neither a parameter, a local, a name of the language nor a module-level name (those
        are known, even where the checker cannot tell their value), or one of Python's
        builtins."""
        if name in self.params or name in self.locals or name in self.const_generics or \
                name in surface.all_known_names() or name in self.module_names:
            return False
        return name in PY_BUILTIN_NAMES or not self.module_wildcard

    def host_module_function(self, node: ast.Attribute) -> bool:
        """``np.exp(t)`` in the kernel body: a call of a host library's function, which TL030
        reports."""
        base = node.value.id if isinstance(node.value, ast.Name) else None
        parent = self.parents.get(id(node))
        return isinstance(parent, ast.Call) and parent.func is node and \
            base in self.modules and base not in self.locals and base not in self.params and \
            not self.modules[base].startswith(("cuda.tile", "cutile_lab", "cuda"))

    def at(self, info) -> ast.AST:
        """Where a diagnostic about a call goes: the call itself in the kernel, or the
        kernel's call of the helper that makes it."""
        return info.node if info.helper is None else info.anchor

    def helper_label(self, info, what: str) -> list[Label]:
        """For a call inside a helper: a label at that call, in the helper's own file."""
        if info.helper is None:
            return []
        span = Span.of_node(info.node, info.helper.filename, info.helper.line_offset)
        return [Label(span, f"{what} (in `{info.helper.name}`)")]

    # diagnostics

    def span(self, node: ast.AST) -> Span:
        return self.source.span(node)

    def diag(self, code: str, message: str, where, *, labels: Iterable[Label] = (),
             help: str | None = None, notes: Iterable[str] = (),
             severity: str | None = None) -> Diagnostic:
        span = where if isinstance(where, Span) or where is None else self.span(where)
        return Diagnostic(code, severity or CODES[code].severity, message, span,
                          tuple(labels), help, tuple(notes))

    def label(self, where, message: str) -> Label:
        span = where if isinstance(where, Span) else self.span(where)
        return Label(span, message)

    def declared(self, p: Param, what: str | None = None) -> Label:
        """A label on a parameter's declaration."""
        if what is None:
            if p.role == "mut":
                what = f"`{p.name}` is declared here: your own output tile, " \
                       f"shape {tile_shape_text(p)}"
            elif p.role == "shared":
                what = f"`{p.name}` is declared here as a shared input (read-only)"
            else:
                what = f"`{p.name}` is declared here"
        return Label(p.span, what)


def rule_registry() -> tuple[list, Callable]:
    """A pass's list of rules, and the decorator that adds a rule to it (in source order)."""
    rules: list = []

    def rule(fn: Callable) -> Callable:
        rules.append(fn)
        return fn
    return rules, rule


def outermost_calls(infos: list) -> list:
    """``infos`` (``CallInfo`` records) less those that are part of another's callee: in
    ``getattr(ct, "store")(z, ...)`` the outer call is the one to report."""
    inner = {id(n) for info in infos for n in ast.walk(info.node.func) if isinstance(n, ast.Call)}
    return [info for info in infos if id(info.node) not in inner]


def first_output(ctx: KernelContext) -> Param | None:
    return next(iter(ctx.outputs.values()), None)


def a_(dtype) -> str:
    """``an f32``, ``an i8``, ``a bf16``, ``a u8``."""
    name = str(dtype)
    return f"an {name}" if name[:1] in "fi" else f"a {name}"


def n_(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def dtype_name(p: Param | None, default: str = "f32") -> str:
    return p.dtype.name if p is not None and p.dtype is not None else default


def fill_example(p: Param) -> str:
    return f"full({tile_shape_text(p)}, 0, dtype={dtype_name(p)})"


def own_store_calls(ctx: KernelContext):
    """Every store into one of the kernel's own tiles, by value (through aliases, bound methods,
    tuples and helpers): ``(CallInfo, Param)``."""
    from cutile_lab.checking.tiletypes import TensorV
    for info in ctx.types.all_calls():
        if info.kind == "method" and info.name == "store" and isinstance(info.recv, TensorV) \
                and info.recv.param.role == "mut":
            yield info, info.recv.param


def header(node: ast.AST):
    """The header line of a compound statement, as a span-able node."""
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return Range(node.lineno, node.col_offset, node.iter.end_lineno,
                      node.iter.end_col_offset)
    if isinstance(node, (ast.While, ast.If)):
        return Range(node.lineno, node.col_offset, node.test.end_lineno,
                      node.test.end_col_offset)
    return node


class Range(ast.AST):
    def __init__(self, lineno, col, end_lineno, end_col):
        super().__init__()
        self.lineno, self.col_offset = lineno, col
        self.end_lineno, self.end_col_offset = end_lineno, end_col



def head(node: ast.AST):
    """A compact span for a compound statement: its first line only."""
    if isinstance(node, (ast.While,)):
        return header(node)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        kw = {"FunctionDef": 3, "AsyncFunctionDef": 9, "ClassDef": 5}[type(node).__name__]
        return Range(node.lineno, node.col_offset, node.lineno,
                      node.col_offset + kw + 1 + len(node.name))
    if isinstance(node, (ast.Try, ast.AsyncFor, ast.AsyncWith)) or \
            type(node).__name__ in ("TryStar", "Match"):
        return Range(node.lineno, node.col_offset, node.lineno, node.col_offset + 3)
    return node


def is_unsafe_with(node: ast.With) -> bool:
    if len(node.items) != 1:
        return False
    expr = node.items[0].context_expr
    target = expr.func if isinstance(expr, ast.Call) else expr
    return (isinstance(target, ast.Name) and target.id == "unsafe") or \
        (isinstance(target, ast.Attribute) and target.attr == "unsafe")


def tile_shape_text(p: Param) -> str:
    dims = p.shape
    inner = ", ".join("?" if d is None else str(d) for d in dims)
    return f"({inner},)" if len(dims) == 1 else f"({inner})"

