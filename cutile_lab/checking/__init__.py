"""Ownership checking: the lab is the borrow checker.

Owns the kernel-level rules (run over the syntax tree when a kernel is defined), the launch-level
rules (run on the host over argument descriptions before a launch), and the rendering of
diagnostics. It must not compile, launch or touch a device.
"""
from __future__ import annotations

from cutile_lab.errors import Diagnostic
from cutile_lab.language.frontend import KernelDef


def check_kernel(kdef: KernelDef) -> list[Diagnostic]:
    """Every kernel-level diagnostic of ``kdef``, errors first, in source order."""
    diags = list(kdef.diagnostics)
    return sorted(diags, key=lambda d: (not d.is_error, d.span.line if d.span else 0))
