"""Kernels of a ``%%tilekernel --sim`` cell: every launch runs on the CPU simulator.

Owns ``SimKernel``, a ``Kernel`` whose launches are pinned to the simulator backend whatever the
session's backend is. NumPy arguments are wrapped as simulator tensors (zero-copy: the kernel
writes into the caller's array); a GPU tensor is refused with a clear message, since the
simulator cannot read device memory.
"""
from __future__ import annotations

from contextlib import contextmanager

from cutile_lab.errors import LaunchError
from cutile_lab.kernel import Kernel


@contextmanager
def _sim_backend():
    """Make 'sim' the backend while arguments are wrapped, then restore the previous choice."""
    import importlib
    b = importlib.import_module("cutile_lab.runtime.backend")   # the module, not the function
    prev = b._explicit
    b._explicit = "sim"
    try:
        yield
    finally:
        b._explicit = prev


def _is_host_array(a) -> bool:
    import numpy as np
    return isinstance(a, np.ndarray)


class SimKernel(Kernel):
    """A kernel whose launches run on the CPU simulator (``%%tilekernel --sim``)."""

    backend = "sim"

    def __call__(self, *args, **kwargs):
        if any(_is_host_array(a) for a in args) or \
                any(_is_host_array(v) for v in kwargs.values()):
            from cutile_lab.runtime.creation import asarray
            with _sim_backend():
                args = tuple(asarray(a) if _is_host_array(a) else a for a in args)
                kwargs = {k: asarray(v) if _is_host_array(v) else v for k, v in kwargs.items()}
        op = super().__call__(*args, **kwargs)
        if op.backend not in (None, "sim"):
            raise LaunchError(
                f"`{self.name}` was defined with `%%tilekernel --sim`, so it runs on the CPU "
                f"simulator, but its arguments live on the {op.backend}",
                help="pass NumPy arrays or simulator tensors (created after "
                     "cl.set_backend('sim')), or define the kernel without --sim")
        op.backend = "sim"
        return op

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + " (simulator)>"
