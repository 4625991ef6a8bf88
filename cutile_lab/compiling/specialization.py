"""What a compile is specialised for: const-generic values and the layout facts of each argument.

A ``Specialization`` is everything, besides the kernel's text, that changes the binary; it is part
of the cache key. The runtime derives one from real arguments; ``compile(B=128)`` derives the
default one (contiguous rows, 16-byte aligned base addresses, 32-bit indexing).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from cutile_lab.errors import CompileError
from cutile_lab.language.dtypes import DType, dtype_by_name
from cutile_lab.language.frontend import KernelDef


@dataclass(frozen=True)
class ArrayLayout:
    dtype: str
    ndim: int
    contiguous: bool = True       # innermost stride is 1
    base_align: int = 16          # bytes the base address is known to be divisible by
    index_bits: int = 32          # 64 when any extent or offset exceeds 2**31 - 1
    stride_align: int = 16        # bytes every outer stride is known to be divisible by (TMA)

    def key(self) -> tuple:
        return ("A", self.dtype, self.ndim, self.contiguous, self.base_align, self.index_bits,
                self.stride_align)


@dataclass(frozen=True)
class ScalarLayout:
    dtype: str

    def key(self) -> tuple:
        return ("S", self.dtype)


@dataclass(frozen=True)
class Specialization:
    consts: tuple[tuple[str, int], ...]
    layouts: tuple[tuple[str, ArrayLayout | ScalarLayout], ...]
    options: tuple[tuple[str, object], ...] = field(default=())

    @property
    def const_values(self) -> dict[str, int]:
        return dict(self.consts)

    @property
    def layout_of(self) -> dict[str, ArrayLayout | ScalarLayout]:
        return dict(self.layouts)

    def key(self) -> list:
        return [list(self.consts), [(n, lay.key()) for n, lay in self.layouts],
                [(k, repr(v)) for k, v in self.options]]

    def describe(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.consts) or "no const generics"


def parse_spec(text: str | None) -> dict[str, int]:
    """``"B=128,BK=64"`` -> ``{"B": 128, "BK": 64}``: const generics as the CLI's and the magic's
    ``--spec`` write them (``CompileError`` with the fix when malformed)."""
    consts: dict[str, int] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise CompileError(f"--spec: bad item {item!r}",
                               help="write NAME=VALUE pairs separated by commas, e.g. "
                                    "--spec B=128,BK=64")
        try:
            consts[name] = int(value.strip(), 0)
        except ValueError:
            raise CompileError(f"--spec {name} must be an integer, got {value.strip()!r}",
                               help=f"e.g. --spec {name}=128") from None
    return consts


def default_layouts(kdef: KernelDef) -> dict[str, ArrayLayout | ScalarLayout]:
    layouts: dict[str, ArrayLayout | ScalarLayout] = {}
    for p in kdef.params:
        if p.role in ("mut", "shared") and p.dtype is not None:
            layouts[p.name] = ArrayLayout(p.dtype.name, len(p.shape))
        elif p.role == "scalar" and p.dtype is not None:
            layouts[p.name] = ScalarLayout(p.dtype.name)
    return layouts


def make_specialization(kdef: KernelDef, consts: dict[str, int] | None = None,
                        layouts: dict | None = None, options: dict | None = None
                        ) -> Specialization:
    """Bind every const generic (given, else the parameter's default) and every layout."""
    consts = dict(consts or {})
    bound: dict[str, int] = {}
    missing = []
    for g in kdef.const_generics:
        p = kdef.param(g)
        if g in consts:
            value = consts.pop(g)
        elif p is not None and p.default is not None:
            value = p.default
        else:
            missing.append(g)
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise CompileError(f"const generic `{g}` must be an integer, got {value!r}",
                               help=f"e.g. {g}=128")
        bound[g] = value
    if kdef.kind == "cutile":
        a = kdef.node.args
        defaults = dict(zip([x.arg for x in a.args[len(a.args) - len(a.defaults):]],
                            a.defaults))
        for p in kdef.params:
            if p.name in consts:
                bound[p.name] = consts.pop(p.name)
            elif p.role == "const" and p.name in defaults:     # `B: ConstInt = 128`
                try:
                    bound[p.name] = ast.literal_eval(defaults[p.name])
                except ValueError:
                    pass
    if missing:
        raise CompileError(
            f"kernel `{kdef.name}` needs a value for {', '.join(f'`{m}`' for m in missing)}",
            span=kdef.span,
            help="give it when compiling, e.g. kernel.compile(" +
                 ", ".join(f"{m}=128" for m in missing) + ") or --spec " +
                 ",".join(f"{m}=128" for m in missing) + "; a launch binds it from the "
                 "partition's tile shape")
    if consts:
        raise CompileError(
            f"kernel `{kdef.name}` has no const generic named "
            f"{', '.join(f'`{c}`' for c in consts)}",
            help=f"its const generics are: {', '.join(kdef.const_generics) or 'none'}")
    all_layouts = default_layouts(kdef)
    all_layouts.update(layouts or {})
    for name, lay in all_layouts.items():
        if dtype_by_name(lay.dtype) is None:
            raise CompileError(f"unknown dtype `{lay.dtype}` for `{name}`")
    order = [p.name for p in kdef.params]
    ordered = tuple(sorted(all_layouts.items(), key=lambda kv: order.index(kv[0])
                           if kv[0] in order else len(order)))
    return Specialization(tuple(sorted(bound.items())), ordered,
                          tuple(sorted((options or {}).items())))


def dtype_of(name: str) -> DType:
    d = dtype_by_name(name)
    assert d is not None, name
    return d
