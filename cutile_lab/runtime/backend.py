"""Which backend runs launches: the GPU (cuda.core) or the CPU simulator (NumPy).

Owns the choice and nothing else: ``set_backend("gpu"|"sim")``, the ``CUTILE_LAB_BACKEND``
environment variable, and the automatic choice (the GPU when one is found, else the simulator,
announced once with a one-line message). It never imports ``cuda.core`` at import time, so
importing and compiling work on a machine without a GPU or driver.
"""
from __future__ import annotations

import os
import sys
import threading

from cutile_lab.errors import LaunchError, NoDeviceError

BACKENDS = ("gpu", "sim")
ENV_VAR = "CUTILE_LAB_BACKEND"

_lock = threading.Lock()
_explicit: str | None = None      # set by set_backend()
_automatic: str | None = None     # decided once, lazily
_announced = False


def _normalize(name: str) -> str:
    text = str(name).strip().lower()
    aliases = {"cuda": "gpu", "device": "gpu", "cpu": "sim", "simulator": "sim", "numpy": "sim"}
    text = aliases.get(text, text)
    if text not in BACKENDS:
        raise LaunchError(f"unknown backend {name!r}",
                          help="use cl.set_backend('gpu') or cl.set_backend('sim')")
    return text


def set_backend(name: str | None) -> str:
    """Choose the backend for new tensors and launches: ``"gpu"`` or ``"sim"``.

    ``None`` goes back to the automatic choice. Choosing ``"gpu"`` with no GPU raises
    ``NoDeviceError``. Tensors keep the backend they were created on.
    """
    global _explicit
    if name is None:
        _explicit = None
        return backend()
    name = _normalize(name)
    if name == "gpu":
        from cutile_lab.runtime.device import require_gpu
        require_gpu("cl.set_backend('gpu')")
    _explicit = name
    return name


def backend() -> str:
    """The backend new work goes to (decides it on first use)."""
    global _automatic
    if _explicit is not None:
        return _explicit
    env = os.environ.get(ENV_VAR)
    if env:
        name = _normalize(env)
        if name == "gpu":
            from cutile_lab.runtime.device import require_gpu
            require_gpu(f"{ENV_VAR}=gpu")
        return name
    if _automatic is None:
        with _lock:
            if _automatic is None:
                from cutile_lab.runtime.device import gpu_available
                _automatic = "gpu" if gpu_available() else "sim"
                if _automatic == "sim":
                    _announce()
    return _automatic


def _announce() -> None:
    global _announced
    if _announced:
        return
    _announced = True
    print("cutile_lab: no GPU found; kernels run on the CPU simulator backend "
          "(same API; set CUTILE_LAB_BACKEND=sim to choose it explicitly)", file=sys.stderr)


def silence_announcement() -> None:
    """In a worker process (a sweep's compile or run worker: a process with a parent) say
    nothing about the backend: the user's own process has already said where kernels run. In
    the user's process itself (a thread pool, an in-process cache probe) this does nothing."""
    global _announced
    import multiprocessing
    if multiprocessing.parent_process() is not None:
        _announced = True


def is_sim() -> bool:
    return backend() == "sim"


def _reset_for_tests() -> None:
    global _explicit, _automatic, _announced
    _explicit = None
    _automatic = None
    _announced = False


__all__ = ["set_backend", "backend", "is_sim", "BACKENDS", "NoDeviceError"]
