"""cutile_lab: write, check, compile, run and tune safe GPU tile kernels from Python.

    import cutile_lab as cl
    from cutile_lab.lang import *

    @cl.kernel
    def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
        z.store(load_tile_like(x, z) + load_tile_like(y, z))

    report = add.compile("sm_90", B=128)
"""
import sys as _sys

from cutile_lab.diagnostics import Diagnostic, Span
from cutile_lab.errors import (CompileError, CutileLabError, KernelDiagnosticsError, LanguageError,
                               LaunchError, NoDeviceError, ToolchainError)
from cutile_lab.kernel import Kernel, kernel, kernels_from_source, load_kernels
from cutile_lab.lang import *  # noqa: F401,F403  (cl.Mut, cl.f32, ...)
from cutile_lab.lang import __all__ as _lang_all

__version__ = "0.1.0"

__all__ = ["Kernel", "kernel", "kernels_from_source", "load_kernels", "CutileLabError",
           "CompileError", "KernelDiagnosticsError", "LanguageError", "LaunchError",
           "NoDeviceError", "ToolchainError", "Diagnostic", "Span", *_lang_all]


def load_ipython_extension(ipython):
    """``%load_ext cutile_lab``: the magics, and the language's names and ``cl`` in the user's
    namespace."""
    from cutile_lab.notebook.explain import register as register_explain
    from cutile_lab.notebook.magics import load_ipython_extension as load
    load(ipython)
    register_explain(ipython)
    _inject_names(ipython)


def _inject_names(shell) -> None:
    """Put the language's names (``Mut``, ``Tensor``, ``f32``...) and ``cl`` (this package) in
    ``shell``'s user namespace."""
    names = {n: globals()[n] for n in _lang_all}
    names["cl"] = _sys.modules[__name__]
    shell.push(names, interactive=False)

# The host runtime, loaded on first use (cl.zeros, cl.launch, cl.set_backend, ...). Its tensor
# class is cutile_lab.runtime.Tensor: cl.Tensor is the signature annotation.
_RUNTIME_NAMES = frozenset({
    "set_backend", "backend", "zeros", "ones", "full", "arange", "rand", "randn", "from_numpy",
    "asarray", "empty", "launch", "graph", "stream", "synchronize", "zip", "value", "DeviceOp",
    "Pending", "Partition", "Graph", "device_info", "describe_device", "gpu_available",
    "OwnershipError", "cuda_kernel", "CudaKernel", "torch_op"})


def __getattr__(name):
    if name in _RUNTIME_NAMES:
        import cutile_lab.runtime as _runtime
        return getattr(_runtime, name)
    if name == "close_gpu_pools":       # the GPU workers kept by sweep(..., gpus=...)
        from cutile_lab.notebook.gpu_pools import close_gpu_pools
        return close_gpu_pools
    raise AttributeError(f"module 'cutile_lab' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _RUNTIME_NAMES | {"close_gpu_pools"})
