"""Which backend runs launches, and the backend objects: the GPU (cuda.core) and the CPU simulator
(NumPy), side by side behind one interface.

Owns the choice: ``set_backend("gpu"|"sim")``, the ``CUTILE_LAB_BACKEND`` environment variable,
and the automatic choice (the GPU when one is found, else the simulator, announced once with a
one-line message). It never imports ``cuda.core`` at import time, so importing and compiling work
on a machine without a GPU or driver.

Owns the objects too: ``GPU`` and ``SIM`` are ``Backend``s — what ``backend()`` returns, what a
tensor's storage, a flight and an ``ExecContext`` carry — and the runtime runs work *through*
them (``start`` a chain, allocate a ``new_tensor`` while enqueueing, ``prepare_launch`` and
``launch`` a kernel, ``wait`` for a flight) instead of comparing backend names. A ``Backend`` is
a ``str`` subclass equal to its name, so ``backend() == "gpu"`` and JSON keep working.

The operations are implemented beside the work they do, in ``runtime.gpu`` and ``runtime.sim``,
which sit above the ops, creation and launch modules they use; they fill their backend in with
``implement`` when the runtime package is imported. This module sits below all of them, so the
objects are created here and their work is plugged in (dependency inversion), never imported.
"""
from __future__ import annotations

import os
import sys
import threading

from cutile_lab.errors import LaunchError, NoDeviceError

BACKENDS = ("gpu", "sim")

# what a backend must do, filled in by the module that implements it (``implement``)
OPERATIONS = ("start", "new_tensor", "prepare_launch", "launch", "wait", "grid_instances")


class Backend(str):
    """A backend: equal to its name (``"gpu"`` / ``"sim"``), with the runtime's operations that
    differ between backends as attributes (plain functions, called without indirection):

    - ``start(op, stream, for_sync) -> Pending``: register a flight and enqueue the op's chain;
    - ``new_tensor(ctx, shape, dtype, where) -> Tensor``: memory for a chain being enqueued;
    - ``prepare_launch(op, entry, values, ctx)``: complete a new launch entry (compile, load and
      pack on the GPU; nothing on the simulator);
    - ``launch(op, values, start, ctx)``: run a checked launch (``start``: the op's
      ``ReusableStart``, its entry and what the backend packs for these arguments, kept there
      for the next start of the same objects): the one launch call of every start;
    - ``wait(flight)``: block until the flight's work is done, then release its borrows;
    - ``grid_instances(tiles, kdef) -> int``: instances of a persistent schedule over ``tiles``.
    """

    def __reduce__(self):
        return backend_object, (str(self),)       # unpickled: the one object of that name

    def implement(self, **ops) -> None:
        """Fill in this backend's operations (``OPERATIONS``): done once, by the module that
        implements them."""
        missing = set(OPERATIONS) - set(ops)
        if missing:
            raise TypeError(f"backend {self}: missing operations {sorted(missing)}")
        self.__dict__.update(ops)


GPU = Backend("gpu")
SIM = Backend("sim")
_OBJECTS = {"gpu": GPU, "sim": SIM}


def backend_object(name) -> Backend:
    """The ``Backend`` named ``name`` (a ``Backend`` already, or its name)."""
    return _OBJECTS[name]
ENV_VAR = "CUTILE_LAB_BACKEND"

# ``CUTILE_LAB_BACKEND`` is read on every ``backend()`` call (set or cleared in the process, it
# takes effect at the next call), but from ``os.environ``'s own dict: ``os.environ.get`` encodes
# the key and decodes the value in three Python frames, twice per library call. The dict is the
# one every change through ``os.environ`` updates (``putenv`` with it), so what is read is what
# ``os.environ.get`` would say; where an interpreter has no such dict, ``os.environ.get``.
_ENV_DATA = getattr(os.environ, "_data", None)
try:
    _ENV_KEY = os.environ.encodekey(ENV_VAR)
except AttributeError:
    _ENV_DATA = None
_env_choice: tuple = (None, None)   # (the variable's raw value, the Backend it chose)

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
    _explicit = _OBJECTS[name]
    return _explicit


def backend() -> Backend:
    """The backend new work goes to (decides it on first use)."""
    global _automatic
    if _explicit is not None:
        return _explicit
    raw = _ENV_DATA.get(_ENV_KEY) if _ENV_DATA is not None else os.environ.get(ENV_VAR)
    if raw:
        choice = _env_choice
        if choice[0] == raw:
            return choice[1]
        return _choose_by_env(raw)
    if _automatic is None:
        with _lock:
            if _automatic is None:
                from cutile_lab.runtime.device import gpu_available
                _automatic = GPU if gpu_available() else SIM
                if _automatic == "sim":
                    _announce()
    return _automatic


def _choose_by_env(raw) -> Backend:
    """The backend ``CUTILE_LAB_BACKEND``'s value ``raw`` (as ``os.environ`` stores it) names,
    remembered for the next call while the value stays the same."""
    global _env_choice
    env = os.environ.decodevalue(raw) if _ENV_DATA is not None else raw
    name = _normalize(env)
    if name == "gpu":
        from cutile_lab.runtime.device import require_gpu
        require_gpu(f"{ENV_VAR}=gpu")
    _env_choice = (raw, _OBJECTS[name])
    return _OBJECTS[name]


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
    global _explicit, _automatic, _announced, _env_choice
    _explicit = None
    _automatic = None
    _announced = False
    _env_choice = (None, None)


__all__ = ["set_backend", "backend", "is_sim", "BACKENDS", "NoDeviceError", "Backend", "GPU", "SIM",
           "backend_object"]
