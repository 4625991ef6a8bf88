"""How the simulator makes a kernel of a plain function (``simulate(f, ...)`` on a ``@ct.kernel``
function): through the hook ``FUNCTION_KERNEL``, which ``cutile_lab.kernel`` fills when it is
imported. ``cutile_lab.kernel`` (the user-facing decorator) sits above the simulator in the
pipeline, so the simulator never imports it: the dependency is inverted through this one hook.
Owns nothing else.
"""
from __future__ import annotations

FUNCTION_KERNEL: list = [None]     # fn -> a kernel (an object with .definition and .globals)


def function_kernel(fn):
    """The kernel of ``fn`` (``cutile_lab.kernel.kernel(fn)``)."""
    # set before any submodule runs: importing one imports the package, which imports kernel.py
    return FUNCTION_KERNEL[0](fn)


__all__ = ["FUNCTION_KERNEL", "function_kernel"]
