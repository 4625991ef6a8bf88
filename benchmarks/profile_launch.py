"""Where the host time of an async start goes: each piece of ``op.start(s)`` timed alone, with the
GPU idle (one call after a sync) and under queue pressure (back-to-back calls), next to the raw
driver calls and a raw ``cuda.tile.launch``. A diagnosis tool for the launch-overhead target of
``bench_runtime.py``; prints a table and writes JSON to ``--out``.

    python benchmarks/profile_launch.py [--out DIR]
"""
from __future__ import annotations

import argparse
import ctypes
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cutile_lab as cl                                                   # noqa: E402
from benchmarks.common import host_per_call, median, to_torch, use_gpu   # noqa: E402
from cutile_lab.lang import *                                             # noqa: E402,F401,F403


@cl.kernel
def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


def idle_host(run, sync, n=300) -> float:
    """Median host seconds of one call made with the GPU idle."""
    out = []
    for _ in range(n):
        sync()
        t0 = time.perf_counter()
        run()
        out.append(time.perf_counter() - t0)
    sync()
    return median(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    problem = use_gpu()
    if problem:
        print(problem)
        return 2
    import importlib
    L = importlib.import_module("cutile_lab.runtime.launch")
    ops = importlib.import_module("cutile_lab.runtime.ops")
    ownership = importlib.import_module("cutile_lab.runtime.ownership")
    from cutile_lab.runtime.device import gpu
    g = gpu()
    s = g.new_stream()
    N = 1024
    x, y, z = cl.randn(N).sync(), cl.randn(N).sync(), cl.zeros(N).sync()
    p = z.partition_mut(N)
    op = add(p, x, y)
    op.sync()
    op.start(s).wait()
    raw = op._entry.raw
    lane, vp = g.stream_handles(s)
    lib = importlib.import_module("cutile_lab.runtime.driver").libcuda()
    ev = s.record()
    evh = ctypes.c_void_p(int(ev.handle))
    rows = {}

    def both(run, name, n=2000):
        rows[name] = {"idle_us": idle_host(run, s.sync) * 1e6,
                      "pressure_us": host_per_call(run, s.sync, n=n) * 1e6,
                      "short_burst_us": host_per_call(run, s.sync, n=50, rounds=21) * 1e6}
        r = rows[name]
        print(f"{name:58s} idle {r['idle_us']:7.2f}  burst50 {r['short_burst_us']:7.2f}  "
              f"pressure {r['pressure_us']:7.2f} us")

    both(lambda: raw.launch_kernel(vp, raw.ptrs, None), "ctypes cuLaunchKernel")

    class LaunchConfig(ctypes.Structure):
        _fields_ = [("gx", ctypes.c_uint), ("gy", ctypes.c_uint), ("gz", ctypes.c_uint),
                    ("bx", ctypes.c_uint), ("by", ctypes.c_uint), ("bz", ctypes.c_uint),
                    ("smem", ctypes.c_uint), ("stream", ctypes.c_void_p),
                    ("attrs", ctypes.c_void_p), ("nattrs", ctypes.c_uint)]
    func = raw.launch_kernel.args[0]
    block = raw.launch_kernel.args[4]
    cfg = LaunchConfig(1, 1, 1, block, 1, 1, 0, vp.value, None, 0)
    cfgp = ctypes.c_void_p(ctypes.addressof(cfg))
    ex = lib.cuLaunchKernelEx
    print("cuLaunchKernelEx rc", ex(cfgp, func, raw.ptrs, None))
    s.sync()
    both(lambda: ex(cfgp, func, raw.ptrs, None), "ctypes cuLaunchKernelEx (prebuilt config)")
    import threading
    lk = threading.RLock()

    def locked():
        with lk:
            pass
    both(locked, "RLock with-block")
    both(lambda: lib.cuEventRecord(evh, vp), "ctypes cuEventRecord")

    def launch_event():
        raw.launch_kernel(vp, raw.ptrs, None)
        lib.cuEventRecord(evh, vp)
    both(launch_event, "ctypes cuLaunchKernel + cuEventRecord")
    k = [0]

    def launch_event32():
        raw.launch_kernel(vp, raw.ptrs, None)
        k[0] += 1
        if k[0] % 32 == 0:
            lib.cuEventRecord(evh, vp)
    both(launch_event32, "ctypes cuLaunchKernel + cuEventRecord every 32")
    s.sync()
    ownership.reap()
    both(lambda: op.start(s), "cutile_lab op.start(s)")
    s.sync()
    ownership.reap()
    both(lambda: add(p, x, y).start(s), "cutile_lab add(p, x, y).start(s) (op built)")

    def flight_only():
        f = ownership.Flight("add", ("x", 1), "gpu", s, lane)
        ownership.register(f)
        ownership.release(f)
    s.sync()
    ownership.reap()
    both(flight_only, "Flight + register + release (no GPU work)")
    both(lambda: ops.Pending(ownership.Flight("add", ("x", 1), "gpu", s, lane)),
         "Flight + Pending objects only")
    both(lambda: ops.ExecContext("gpu", s, None, None, g, vp), "ExecContext object")
    try:
        import torch
        import cuda.tile as ct
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _ct_kernels import ct_add
        tx, ty, tz = to_torch(x), to_torch(y), to_torch(z)
        ts = torch.cuda.current_stream()
        ct.launch(ts, (1, 1, 1), ct_add, (tz, tx, ty, N))
        torch.cuda.synchronize()
        both(lambda: ct.launch(ts, (1, 1, 1), ct_add, (tz, tx, ty, N)), "raw cuda.tile.launch")
        both(lambda: torch.add(tx, ty, out=tz), "torch.add (tiny)")
    except Exception as e:
        print("no torch/cuda.tile rows:", e)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "profile_launch.json").write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
