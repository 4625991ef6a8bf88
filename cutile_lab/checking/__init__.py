"""Ownership checking: the lab is the borrow checker.

Owns the kernel-level rules (run over the syntax tree when a kernel is defined: ``kernel_rules``
for tile-language kernels, ``cutile_rules`` for plain cuTile Python kernels), the launch-level
rules (run on the host over argument descriptions before a launch: ``launch_rules``; for a CUDA
C++ kernel, against the ownership its signature declares: ``cuda_launch``), the
registry of codes (``codes``) and the rendering of diagnostics as text, HTML and JSON
(``render``). It must not compile, launch or touch a device.

Why the launch rules matter for speed as well as safety: the compile driver declares every array
parameter of a tile kernel non-aliasing (``alias_groups=()``), which lets the compiler keep
loaded tiles in registers and reorder loads and stores freely. That promise is only sound
because ``check_launch`` refuses, before every launch, any pair of arguments whose memory
overlaps where one of them is written (a ``Mut`` output against a shared input, or two outputs),
views and slices included, and because the ``BorrowState`` refuses host access to, or another
launch of, memory that in-flight work is writing. Kernel-level rules make sure a tile kernel
writes only its own tile of each output; the launch rules make sure those tiles are disjoint
from everything else the launch touches.
"""
from __future__ import annotations

from typing import Mapping

from cutile_lab.errors import Diagnostic, LanguageError, Span
from cutile_lab.language.frontend import KernelDef, KernelSource, parse_kernels

__all__ = ["check_kernel", "check_kernels", "check_source", "check_launch", "ArgDesc",
           "BorrowState", "render_text", "render_html", "to_json", "CODES", "sort_diagnostics"]


def sort_diagnostics(diags) -> list[Diagnostic]:
    """Errors first, then warnings, then notes; each in source order."""
    rank = {"error": 0, "warning": 1, "note": 2}
    return sorted(diags, key=lambda d: (rank.get(d.severity, 3),
                                        d.span.filename if d.span else "",
                                        d.span.line if d.span else 0,
                                        d.span.col if d.span else 0))


def check_kernel(kdef: KernelDef, globals_: Mapping | None = None) -> list[Diagnostic]:
    """Every kernel-level diagnostic of ``kdef``, errors first, in source order.

    ``globals_`` (the namespace the kernel was defined in) makes module-level names known to the
    unknown-name rule; without it, names defined at the top of the kernel's file or cell are.
    """
    from cutile_lab.checking.context import KernelContext
    from cutile_lab.checking.cutile_rules import CUTILE_RULES
    from cutile_lab.checking.kernel_rules import TILE_RULES

    diags = list(kdef.diagnostics)
    ctx = KernelContext(kdef, globals_)
    rules = CUTILE_RULES if kdef.kind == "cutile" else TILE_RULES
    for rule in rules:
        try:
            diags.extend(rule(ctx))
        except Exception as e:   # a checker bug must not stop the user's work
            diags.append(Diagnostic(
                "TL099", "note", f"the checker rule `{rule.__name__}` failed on this kernel "
                f"({type(e).__name__}: {e}); its checks were skipped", kdef.span,
                help="this is a bug in cutile_lab, not in your kernel; please report it"))
    return sort_diagnostics(_dedupe(diags))


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
    if name in ("render_text", "render_html", "to_json"):
        from cutile_lab.checking import render
        return getattr(render, name)
    if name in ("check_launch", "ArgDesc", "BorrowState"):
        from cutile_lab.checking import launch_rules
        return getattr(launch_rules, name)
    if name == "CODES":
        from cutile_lab.checking.codes import CODES
        return CODES
    raise AttributeError(name)
