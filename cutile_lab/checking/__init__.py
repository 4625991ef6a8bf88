"""Ownership checking: the lab is the borrow checker.

A kernel is checked in passes, one per module, each saying in its docstring what it proves:

- ``typecheck``: the typing pass. Every expression gets a type (shared tensor, the own ``Mut``
  tile, tile of a symbolic shape, tuple, bound method, module, helper, raw memory...), and types
  flow through assignments, tuples, bound methods, branches, loops, returns and helper bodies, so
  the other passes reason about values, not names (``tiletypes`` holds the type algebra; the
  pass's values, name resolution and result types are ``typecheck_values``, ``typecheck_names``
  and ``typecheck_ops``);
- ``ownership``: who may write what, by value (stores counted per value and per path, shared
  inputs read-only under any name, moves);
- ``reads``: the safe loads read what they may, in the kernel and in its helpers (never tiles of
  an output that other instances are writing);
- ``shapes``: what is stored is provably the own tile's shape and converts without loss; the grid
  axes exist;
- ``unsafe``: raw memory stays in ``with unsafe():``, and every unsafe block is reported as
  unchecked;
- ``kernel_rules``: the signature, the decorator and the Python subset, and the registry of the
  passes for tile-language kernels;
- ``cutile_index``: race freedom of plain cuTile Python kernels, from the values of their store
  indices;
- ``launch_rules``: the launch level, on the host before every launch (aliasing of arguments,
  moves, in-flight borrows, arguments against the signature); for a CUDA C++ kernel, against the
  ownership its signature declares: ``cuda_launch``. The arguments they check are described in
  ``launch_args``, the host's borrow state is ``borrows``, and ``launch_report`` turns the
  problems into diagnostics.

The values these passes report, the registry of codes and their rendering as text, HTML and
JSON are ``cutile_lab.diagnostics``, below every stage. This package must not compile, launch or touch a
device.

Why the launch rules matter for speed as well as safety: the compile driver declares every array
parameter of a kernel non-aliasing (``alias_groups=()``; a plain cuTile kernel's too, whose
launches ``check_plain_launch`` checks for overlap with every array the kernel may write), which
lets the compiler keep loaded tiles in registers and reorder loads and stores freely. That promise
is only sound because ``check_launch`` refuses, before every launch, any pair of arguments whose
memory overlaps where one of them is written (a ``Mut`` output against a shared input, or two
outputs), views and slices included, and because the runtime's ownership registry refuses host
access to, or another launch of, memory that in-flight work is writing (worded by
``borrows.use_diagnostic``). Kernel-level passes make sure a tile kernel writes only its own tile
of each output; the launch rules make sure those tiles are disjoint from everything else the launch
touches.
"""
from __future__ import annotations

from typing import Mapping

from cutile_lab.diagnostics import Diagnostic, Span, sort_diagnostics
from cutile_lab.errors import LanguageError
from cutile_lab.language.frontend import KernelDef, KernelSource, parse_kernels

__all__ = ["check_kernel", "check_kernels", "check_source", "unchecked_spans", "UNCHECKED"]

UNCHECKED = "TL050"     # the note that marks code the checker did not check


def unchecked_spans(diags) -> list[Span]:
    """The spans of the unchecked code among ``diags`` (``with unsafe():`` blocks, helper calls
    that run one), in source order: what a report shows as "N unchecked blocks"."""
    return [d.span for d in sort_diagnostics(diags) if d.code == UNCHECKED and d.span]


def check_kernel(kdef: KernelDef, globals_: Mapping | None = None) -> list[Diagnostic]:
    """Every kernel-level diagnostic of ``kdef``, errors first, in source order.

    ``globals_`` (the namespace the kernel was defined in) makes module-level names known to the
    unknown-name rule; without it, names defined at the top of the kernel's file or cell are.
    """
    from cutile_lab.checking.context import KernelContext
    from cutile_lab.checking.cutile_index import CUTILE_RULES
    from cutile_lab.checking.kernel_rules import TILE_RULES

    diags = list(kdef.diagnostics)
    ctx = KernelContext(kdef, globals_)
    rules = CUTILE_RULES if kdef.kind == "cutile" else TILE_RULES
    for rule in rules:
        try:
            diags.extend(rule(ctx))
        except Exception as e:   # a checker bug must not stop the user's work
            diags.append(Diagnostic(   # an error: what was not checked is never "no problems"
                "TL099", "error", f"the checker rule `{rule.__name__}` failed on this kernel "
                f"({type(e).__name__}: {e}), so the kernel could not be checked", kdef.span,
                help="this is a bug in cutile_lab, not in your kernel; please report it with "
                     "the kernel's source"))
    return sort_diagnostics(_dedupe(_consequences_dropped(diags)))


# Errors that an earlier error can cause (a tile whose shape is unknown because a name in it is
# unknown, or a construct is unsupported): shown only when nothing else is wrong, so that the
# user fixes the cause first. The kernel is rejected either way.
CONSEQUENTIAL = frozenset({"TL035"})


def _consequences_dropped(diags: list[Diagnostic]) -> list[Diagnostic]:
    if any(d.is_error and d.code not in CONSEQUENTIAL for d in diags):
        return [d for d in diags if d.code not in CONSEQUENTIAL]
    return diags


def _dedupe(diags: list[Diagnostic]) -> list[Diagnostic]:
    seen = set()
    out = []
    for d in diags:
        key = (d.code, d.message, d.span)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def check_kernels(kdefs, globals_: Mapping | None = None) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for k in kdefs:
        out.extend(check_kernel(k, globals_))
    return sort_diagnostics(out)


def check_source(text: str, filename: str = "<source>", *, globals_: Mapping | None = None,
                 line_offset: int = 0, all_functions: bool = True) -> list[Diagnostic]:
    """Every diagnostic of every kernel in ``text``; text that is not valid Python, or holds no
    kernel, becomes a ``TL000`` diagnostic instead of an exception. The text is registered with
    ``linecache`` so that ``render_text(diags)`` can show its lines."""
    source = KernelSource(text, filename, line_offset)
    source.register()
    try:
        kdefs = parse_kernels(source, all_functions=all_functions)
    except LanguageError as e:
        return [Diagnostic("TL000", "error", e.message, e.span, help=e.help)]
    if not kdefs:
        return [Diagnostic(
            "TL000", "error", f"no kernel in {filename}", Span(filename, 1 + line_offset, 0),
            help='write a function whose parameters are typed, e.g. '
                 'def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]): ...')]
    return check_kernels(kdefs, globals_)


def __getattr__(name: str):
    # lazy re-exports: importing the package stays cheap for the compile driver
    if name == "check_launch":
        from cutile_lab.checking.launch_rules import check_launch
        return check_launch
    if name == "ArgDesc":
        from cutile_lab.checking.launch_args import ArgDesc
        return ArgDesc
    if name == "BorrowState":
        from cutile_lab.checking.borrows import BorrowState
        return BorrowState
    raise AttributeError(name)
