"""How the launch-level problems become diagnostics: one method per problem kind (wrong
argument names, kinds, dtypes, ranks, tiles and dims, unbound const generics, grids that
disagree, overlapping arguments, borrow conflicts), each with labels on the arguments as the
user wrote them in the launch line (read back from its source) and where the tensors were made.

Used by ``launch_rules`` and, with the C++ signature as the declaration, ``cuda_launch``.
"""
from __future__ import annotations

import ast
import linecache

from cutile_lab.checking.launch_args import ArgDesc, dtype_name
from cutile_lab.diagnostics import CODES, Diagnostic, Label, Span, sort_diagnostics
from cutile_lab.language.frontend import KernelDef

def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _fmt_grid(g) -> str:
    return str(g[0]) if len(g) == 1 else " x ".join(str(n) for n in g)


def _fmt_tuple(t) -> str:
    t = tuple(t)
    return f"({t[0]},)" if len(t) == 1 else "(" + ", ".join(str(x) for x in t) + ")"


class LaunchReporter:
    """Turns ``(kind, payload...)`` problems of one launch into diagnostics."""

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
                self._spans = argument_spans(self.kdef, self.call_site, self.lookup)
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
        got = dtype_name(a.dtype)
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

    def _self_alias(self, a: ArgDesc):
        return self.diag(
            "TL123", f"the output `{a.name}` is a view whose elements overlap in memory (shape "
                     f"{_fmt_tuple(a.shape)}, strides {_fmt_tuple(a.strides)} elements)",
            self.arg_label(a, f"written as `{a.name}`", True),
            help=f"pass a tensor whose elements are distinct memory as `{a.name}` (a new "
                 "tensor, e.g. `cl.empty(shape)`), not a broadcast or `as_strided` view of one",
            notes=("two tiles of the output would write the same bytes at the same time, and "
                   "the kernel is compiled on the promise that an array's elements do not "
                   "overlap",))

    def _grid_axis(self, axis: int, blocks: int):
        name = self.kdef.name
        return self.diag(
            "TL121", f"the grid has {blocks} blocks along axis {axis}, but `{name}` never reads "
                     f"`ct.bid({axis})`: those blocks write the very same elements",
            help=f"launch with 1 block along axis {axis}, or make the writes depend on "
                 f"`ct.bid({axis})` (index the stores by it)",
            notes=("blocks that differ only along an axis the kernel does not read run the same "
                   "code on the same data: their stores race, and their atomic updates are "
                   "applied once per block",))

    def _borrow(self, a: ArgDesc, d: Diagnostic):
        text = self.arg_text(a.name)
        message = d.message.replace(f"`{a.name}`", f"`{text}`", 1) if text != a.name else \
            d.message
        theirs = tuple(Label(lab.span, lab.message.replace(f"`{a.name}`", f"`{text}`", 1))
                       for lab in d.labels) if text != a.name else d.labels
        labels = tuple(self.arg_label(a, f"passed as `{a.name}`")) + theirs
        return Diagnostic(d.code, d.severity, message, self.primary, labels, d.help, d.notes)


CALLEE = "\0callee"


def argument_spans(kdef: KernelDef, call_site: Span | None, lookup) -> dict[str, tuple[Span, str]]:
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
