"""The session's kept GPU pools: what ``sweep(..., gpus="all")`` (or a count, or a list of
indices) runs on.

Owns: one ``GPUPool`` per set of GPUs for the life of the Python session, the way a notebook
keeps a Dask cluster. The first sweep on a set of GPUs starts its workers (and warms them up
while the configurations compile); every later sweep on the same set reuses them, so the
workers' one-time costs (a process, a CUDA context on its GPU, PyTorch's CUDA start and cuBLAS,
the first use of the launch path) are paid once per session, not once per sweep. A kept pool
whose worker died is repaired before it is handed out (``GPUPool.repair``). Kept pools are closed
at interpreter exit (without waiting on their workers) and by ``close_gpu_pools()``, which frees
their GPUs' memory now. A pool the user made (``gpus=pool``) is never kept here: it stays the
user's.

The workers themselves, and the fault rules of a sweep's run, are ``notebook.fanout``'s.
"""
from __future__ import annotations

import atexit
import threading

from cutile_lab.notebook import fanout

_POOLS: dict[tuple, fanout.GPUPool] = {}
_LOCK = threading.Lock()
_AT_EXIT = False


def kept_pool(gpus) -> fanout.GPUPool:
    """The session's pool on ``gpus`` ("all", a count or a list of indices: what ``sweep``'s
    ``gpus=`` takes), made on first use and kept; repaired where a worker of it died."""
    pool = fanout.GPUPool(gpus)            # resolves and checks the indices; starts nothing
    key = tuple(sorted(pool.gpus))         # [1, 0] is the same GPUs as [0, 1]
    with _LOCK:
        kept = _POOLS.get(key)
        if kept is None:
            kept = _POOLS[key] = pool
            _close_at_exit()
    kept.repair()
    return kept


def runner_for(executor, gpus, keep: bool = True):
    """Where a sweep's configurations run, and whether the sweep must close it afterwards:
    ``(runner, own)``. ``gpus=`` a ``GPUPool``: that pool (the user's); ``gpus=`` "all", a count
    or a list: the session's kept pool on those GPUs, or with ``keep=False`` a pool of the
    sweep's own (``own``: closed when it ends); else the Dask client given as ``executor``, or
    None (this process)."""
    if gpus is not None:
        if isinstance(gpus, fanout.GPUPool):
            return gpus, False
        return (kept_pool(gpus), False) if keep else (fanout.GPUPool(gpus), True)
    if fanout.is_dask_client(executor):
        return executor, False
    return None, False


def kept_pools() -> dict[tuple, fanout.GPUPool]:
    """The pools this session keeps, by their GPU indices in ascending order (a copy)."""
    with _LOCK:
        return dict(_POOLS)


def close_gpu_pools(wait: bool = True) -> int:
    """Close every GPU pool kept by ``sweep(..., gpus=...)`` and return how many there were.

    Each kept pool's workers hold a CUDA context (and PyTorch's memory cache, where the sweep
    used PyTorch) on their GPU for as long as the session lives; call this to give that memory
    back now (the next ``gpus=`` sweep starts fresh workers). With ``wait`` (the default), returns
    once the workers have exited, so their memory is free. Pools the user made (``GPUPool()``,
    passed as ``gpus=pool``) are the user's to close."""
    with _LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for pool in pools:
        pool.shutdown(wait=wait)
    return len(pools)


def _close_at_exit() -> None:
    """Register, once per session, the closing of the kept pools at interpreter exit: without
    waiting for the workers (they exit on their own when their pipe closes)."""
    global _AT_EXIT
    if not _AT_EXIT:
        atexit.register(close_gpu_pools, wait=False)
        _AT_EXIT = True


__all__ = ["runner_for", "kept_pool", "kept_pools", "close_gpu_pools"]
