"""Helpers every benchmark shares: CUDA-event timing (ours and PyTorch's), host-time per call,
zero-copy views as torch tensors, and the versions recorded with each result."""
from __future__ import annotations

import importlib.metadata
import platform
import statistics
import time


def to_torch(t):
    """Our tensor as a torch tensor without a copy (DLPack, else the CUDA array interface)."""
    import torch
    try:
        out = torch.from_dlpack(t)
    except Exception:
        out = torch.as_tensor(t, device="cuda")
    assert out.data_ptr() == t.ptr
    return out


def use_gpu() -> str | None:
    """Select the GPU backend; where there is no GPU, the reason (for the script to print and
    exit with, rather than a traceback)."""
    import cutile_lab as cl
    try:
        cl.set_backend("gpu")
    except cl.NoDeviceError as e:
        return f"this benchmark needs a GPU: {e}"
    return None


def median(xs):
    return float(statistics.median(xs))


def event_times(run, stream, *, warmup=3, repeats=15) -> list[float]:
    """Seconds per run from CUDA events on ``stream`` (a cuda.core Stream)."""
    from cuda.core import EventOptions
    opts = EventOptions(timing_enabled=True)
    for _ in range(warmup):
        run()
    stream.sync()
    pairs = []
    for _ in range(repeats):
        e0 = stream.record(options=opts)
        run()
        e1 = stream.record(options=opts)
        pairs.append((e0, e1))
    stream.sync()
    return [(e1 - e0) / 1e3 for e0, e1 in pairs]


def torch_event_times(run, *, warmup=3, repeats=15) -> list[float]:
    import torch
    for _ in range(warmup):
        run()
    torch.cuda.synchronize()
    pairs = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        run()
        b.record()
        pairs.append((a, b))
    torch.cuda.synchronize()
    return [a.elapsed_time(b) / 1e3 for a, b in pairs]


def host_per_call(run, sync, *, n=2000, warmup=200, rounds=7) -> float:
    """Median over rounds of (host time of ``n`` calls) / n; ``sync`` drains the GPU between
    rounds and is not timed."""
    for _ in range(warmup):
        run()
    sync()
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            run()
        t1 = time.perf_counter()
        sync()
        out.append((t1 - t0) / n)
    return median(out)


def try_import(name):
    try:
        return __import__(name)
    except Exception:
        return None


def versions() -> dict:
    out = {"python": platform.python_version()}
    for dist in ("cuda-core", "cuda-bindings", "cuda-tile", "numpy", "torch", "cupy-cuda12x",
                 "cupy-cuda13x", "cupy"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    try:
        from cutile_lab.compiling.toolchain import toolchain_or_none
        tc = toolchain_or_none()
        out["tileiras"] = tc.version if tc else None
    except Exception:
        pass
    import cutile_lab
    out["cutile_lab"] = cutile_lab.__version__
    return out
