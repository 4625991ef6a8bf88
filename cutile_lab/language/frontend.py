"""Kernel source text -> ``KernelDef`` values, read from the syntax tree without evaluating it.

A kernel comes from a ``.py`` file (``@cl.kernel``) or from a notebook cell's text. Positions stay
those of the user's own text, so every later stage can point at the user's line.
"""
from __future__ import annotations

import ast
import linecache
from dataclasses import dataclass, field
from typing import Literal

from cutile_lab.diagnostics import Diagnostic, Span
from cutile_lab.errors import LanguageError
from cutile_lab.language.dtypes import DType, dtype_by_name
from cutile_lab.language.types import Dim, parse_shape

Role = Literal["mut", "shared", "scalar", "const"]
KERNEL_DECORATORS = {"kernel"}


@dataclass(frozen=True)
class KernelSource:
    """The user's text and where it lives. ``line_offset`` shifts parsed line numbers (a kernel
    cut out of a larger file); it is 0 when ``text`` is the whole file or cell."""

    text: str
    filename: str
    line_offset: int = 0

    def register(self) -> None:
        """Make the text visible to ``linecache``/``inspect`` (notebook cells have no file)."""
        lines = self.text.splitlines(keepends=True)
        if self.line_offset:
            lines = ["\n"] * self.line_offset + lines
        linecache.cache[self.filename] = (len(self.text), None, lines, self.filename)

    def line(self, lineno: int) -> str:
        lines = self.text.splitlines()
        i = lineno - 1 - self.line_offset
        return lines[i] if 0 <= i < len(lines) else ""

    def span(self, node: ast.AST) -> Span:
        return Span.of_node(node, self.filename, self.line_offset)


@dataclass
class Param:
    name: str
    role: Role
    dtype: DType | None
    shape: tuple[Dim, ...] = ()
    span: Span | None = None
    default: object = None
    annotation: ast.AST | None = None

    @property
    def is_array(self) -> bool:
        return self.role in ("mut", "shared")


@dataclass
class KernelDef:
    name: str
    kind: Literal["tile", "cutile"]
    params: list[Param]
    node: ast.FunctionDef
    source: KernelSource
    const_generics: list[str] = field(default_factory=list)
    options: dict = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def outputs(self) -> list[Param]:
        return [p for p in self.params if p.role == "mut"]

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    @property
    def span(self) -> Span:
        return self.source.span(self.node)

    @property
    def text(self) -> str:
        """The kernel's own lines (decorators included)."""
        first = min([self.node.lineno] + [d.lineno for d in self.node.decorator_list])
        lines = self.source.text.splitlines()
        return "\n".join(lines[first - 1:self.node.end_lineno]) + "\n"


def parse_kernels(source: KernelSource, *, only: str | None = None,
                  all_functions: bool = False) -> list[KernelDef]:
    """Every kernel in ``source``: functions decorated with ``kernel`` (``@cl.kernel``,
    ``@ct.kernel``) and, with ``all_functions`` (a notebook cell), every top-level function whose
    parameters are annotated with ``Tensor``/``Mut``."""
    try:
        tree = ast.parse(source.text, filename=source.filename)
    except SyntaxError as e:
        line = (e.lineno or 1) + source.line_offset
        raise LanguageError(f"invalid Python syntax: {e.msg}",
                            span=Span(source.filename, line, max((e.offset or 1) - 1, 0)),
                            help="fix the syntax error; kernels are ordinary Python functions"
                            ) from None
    kernels = []
    aliases = _cutile_aliases(tree)
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        if only is not None and node.name != only:
            continue
        decorator = _kernel_decorator(node)
        if decorator is None and only is None and \
                not (all_functions and _looks_like_tile_kernel(node)):
            continue
        kernels.append(_kernel_def(node, decorator, source, aliases))
    if only is not None and not kernels:
        names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
        raise LanguageError(f"no kernel named {only!r} in {source.filename}",
                            help=f"kernels found: {', '.join(names) or 'none'}")
    return kernels


def _decorator_name(dec: ast.AST) -> tuple[str | None, ast.AST]:
    target = dec.func if isinstance(dec, ast.Call) else dec
    if isinstance(target, ast.Attribute):
        return target.attr, target
    if isinstance(target, ast.Name):
        return target.id, target
    return None, target


def _kernel_decorator(node: ast.FunctionDef) -> ast.AST | None:
    for dec in node.decorator_list:
        name, _ = _decorator_name(dec)
        if name in KERNEL_DECORATORS:
            return dec
    return None


def _cutile_aliases(tree: ast.Module) -> frozenset[str]:
    """The names ``cuda.tile`` goes by in this source: ``ct`` and ``cuda_tile`` as the samples
    write it, and whatever ``import cuda.tile as X`` / ``from cuda import tile as X`` bind."""
    names = {"ct", "cuda_tile"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.asname for a in node.names if a.name == "cuda.tile" and a.asname}
        elif isinstance(node, ast.ImportFrom) and node.module == "cuda":
            names |= {a.asname or a.name for a in node.names if a.name == "tile"}
    return frozenset(names)


def _is_cutile_decorator(dec: ast.AST | None, aliases: frozenset[str]) -> bool:
    if dec is None:
        return False
    target = dec.func if isinstance(dec, ast.Call) else dec
    return (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
            and target.value.id in aliases)


def _looks_like_tile_kernel(node: ast.FunctionDef) -> bool:
    for a in node.args.args:
        if a.annotation is not None and _head_name(a.annotation) in ("Tensor", "Mut"):
            return True
    return False


def _head_name(ann: ast.AST) -> str | None:
    if isinstance(ann, ast.Subscript):
        ann = ann.value
    if isinstance(ann, ast.Attribute):
        return ann.attr
    if isinstance(ann, ast.Name):
        return ann.id
    return None


def _decorator_options(dec: ast.AST | None) -> dict:
    opts: dict = {}
    if isinstance(dec, ast.Call):
        for kw in dec.keywords:
            if kw.arg is None:          # `**options`: reported by the checker (TL004)
                continue
            try:
                opts[kw.arg] = ast.literal_eval(kw.value)
            except ValueError:
                pass
    return opts


def _kernel_def(node: ast.FunctionDef, decorator, source: KernelSource,
                aliases: frozenset[str] = frozenset({"ct", "cuda_tile"})) -> KernelDef:
    # a function named explicitly without a decorator (``ct.kernel(fn)``) is plain cuTile
    # unless its parameters are the tile language's
    plain = decorator is None and not _looks_like_tile_kernel(node)
    kind = "cutile" if _is_cutile_decorator(decorator, aliases) or plain else "tile"
    kdef = KernelDef(node.name, kind, [], node, source, options=_decorator_options(decorator))
    if kind == "cutile":
        kdef.params = [Param(a.arg, "shared", None, span=source.span(a), annotation=a.annotation)
                       for a in node.args.args]
        return kdef
    defaults = [None] * (len(node.args.args) - len(node.args.defaults)) + list(node.args.defaults)
    for arg, default in zip(node.args.args, defaults):
        kdef.params.append(_param(arg, default, source, kdef.diagnostics))
    for extra, what in ((node.args.vararg, "*args"), (node.args.kwarg, "**kwargs")):
        if extra is not None:
            kdef.diagnostics.append(Diagnostic(
                "TL002", "error", f"a kernel cannot take {what}", source.span(extra),
                help="list every parameter by name with its type"))
    if node.args.kwonlyargs:
        kdef.diagnostics.append(Diagnostic(
            "TL002", "error", "a kernel cannot take keyword-only parameters",
            source.span(node.args.kwonlyargs[0]), help="remove the `*` from the parameter list"))
    seen: list[str] = []
    for p in kdef.params:
        if p.role == "const":
            seen.append(p.name)
        for d in p.shape:
            if isinstance(d, str) and d not in seen:
                seen.append(d)
    names = {p.name for p in kdef.params if p.role != "const"}
    for g in seen:
        if g in names:
            kdef.diagnostics.append(Diagnostic(
                "TL003", "error", f"`{g}` is both a parameter and a shape name",
                kdef.param(g).span, help=f"rename the shape name, e.g. \"{g}_TILE\""))
    kdef.const_generics = seen
    return kdef


ANNOTATION_HELP = ('annotate each parameter: `z: Mut[Tensor[f32, "B"]]` (own output tile), '
                   '`x: Tensor[f32, "?"]` (shared input), `alpha: f32` (scalar) or '
                   '`BK: Const[int]` (compile-time constant)')


def _param(arg: ast.arg, default, source: KernelSource, diags: list[Diagnostic]) -> Param:
    span = source.span(arg)
    ann = arg.annotation
    param = Param(arg.arg, "scalar", None, span=span, annotation=ann)
    if default is not None:
        try:
            param.default = ast.literal_eval(default)
        except ValueError:
            diags.append(Diagnostic("TL001", "error",
                                    f"the default of `{arg.arg}` must be a literal",
                                    source.span(default), help="write a number, e.g. `= 64`"))
    if ann is None:
        diags.append(Diagnostic("TL001", "error", f"parameter `{arg.arg}` has no type", span,
                                help=ANNOTATION_HELP))
        return param
    head = _head_name(ann)
    try:
        if head == "Mut":
            inner = ann.slice if isinstance(ann, ast.Subscript) else None
            if inner is None or _head_name(inner) != "Tensor":
                raise _AnnotationProblem("`Mut[...]` must wrap a `Tensor[dtype, \"tile shape\"]`",
                                         ann)
            param.role = "mut"
            param.dtype, param.shape = _tensor_parts(inner, source)
            if any(d is None for d in param.shape):
                raise _AnnotationProblem(
                    "the tile shape of a `Mut` output must be known: name it or give a size "
                    "instead of `?`", inner)
        elif head == "Tensor":
            param.role = "shared"
            param.dtype, param.shape = _tensor_parts(ann, source)
        elif head == "Const":
            param.role = "const"
            if not isinstance(ann, ast.Subscript):
                raise _AnnotationProblem("write `Const[int]`", ann)
        else:
            dtype = dtype_by_name(head) if head and not isinstance(ann, ast.Subscript) else None
            if dtype is None:
                raise _AnnotationProblem(f"`{ast.unparse(ann)}` is not a tile-language type",
                                         ann)
            param.dtype = dtype
    except _AnnotationProblem as p:
        diags.append(Diagnostic("TL001", "error", f"parameter `{arg.arg}`: {p.message}",
                                source.span(p.node), help=ANNOTATION_HELP))
    return param


class _AnnotationProblem(Exception):
    def __init__(self, message: str, node: ast.AST):
        super().__init__(message)
        self.message = message
        self.node = node


def _tensor_parts(ann: ast.AST, source: KernelSource) -> tuple[DType, tuple[Dim, ...]]:
    if not isinstance(ann, ast.Subscript) or not isinstance(ann.slice, ast.Tuple) \
            or len(ann.slice.elts) != 2:
        raise _AnnotationProblem('write `Tensor[dtype, "shape"]`, e.g. `Tensor[f32, "B"]`', ann)
    dt_node, shape_node = ann.slice.elts
    name = _head_name(dt_node)
    dtype = dtype_by_name(name) if name else None
    if dtype is None:
        raise _AnnotationProblem(f"unknown dtype `{ast.unparse(dt_node)}` (known: f16, bf16, "
                                 "f32, f64, i8..i64, u8..u64, bool, f8e4m3, f8e5m2)", dt_node)
    try:
        shape_value = ast.literal_eval(shape_node)
        shape = parse_shape(shape_value)
    except ValueError as e:
        raise _AnnotationProblem(f"bad shape `{ast.unparse(shape_node)}`: {e}", shape_node)
    if not shape:
        raise _AnnotationProblem("a tensor needs at least one dimension", shape_node)
    return dtype, shape
