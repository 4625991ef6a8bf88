"""Where a fresh sweep worker's time goes: this process plays one ``GPUPool`` worker (GPU 0) of
``bench_sweep_gpus.py``'s GEMM sweep. It times ``fanout.warm_up`` step by step, then runs the 32
configurations twice in the order a pool hands them out (largest problem first), each as
``fanout.run_configuration`` runs it on a worker: the first pass pays every first-time cost left
after the warm-up (each binding's module load, each shape's first allocations and cuBLAS
choices), the second is the steady state. The first pass runs under ``cProfile``; the functions
that took most of it are printed. A diagnosis tool for the sweep's fixed cost per worker; run it
after the bench (the compile cache filled).

    python benchmarks/profile_sweep_worker.py [--out DIR]
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import time

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "0")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--repeats", type=int, default=50)
    opts = ap.parse_args(argv)
    t_start = time.perf_counter()
    from cutile_lab.notebook import fanout
    import_s = time.perf_counter() - t_start
    from benchmarks import bench_sweep_gpus as bench
    import cutile_lab as cl
    from cutile_lab.notebook.tuning import _largest_first, _simple_globals, configurations
    kernel = cl.kernels_from_source(bench.GEMM, "bench_sweep_gpus.py")["gemm"]
    spec = fanout.KernelSpec.of(kernel, _simple_globals(kernel))
    payload = fanout.pack(bench.make_args, bench.check, bench.baseline)
    warm = fanout.warm_up(spec, fanout.uses_torch(payload))
    if warm.get("gpu") is None:
        print("this profile needs a GPU:", warm)
        return 0
    configs = configurations(bench.CHOICES)
    order = _largest_first(list(range(len(configs))), configs, set(kernel.const_generics))
    passes = []
    prof = cProfile.Profile()
    for p in range(2):
        rows = []
        t0 = time.perf_counter()
        for i in order:
            if p == 0:
                prof.enable()
            row = fanout.run_configuration(spec, configs[i], payload, opts.repeats, 3)
            if p == 0:
                prof.disable()
            rows.append({**configs[i], "worker_s": row["worker_s"], "ok": "error" not in row,
                         "error": row.get("error")})
        passes.append({"seconds": time.perf_counter() - t0, "rows": rows})
    first, again = passes
    print(f"lab import {import_s:.2f} s; warm-up: " + ", ".join(
        f"{k} {v:.2f}" for k, v in warm.items() if k.endswith("_s")))
    print(f"first pass {first['seconds']:.2f} s, again {again['seconds']:.2f} s "
          f"(first-time costs left after the warm-up: {first['seconds'] - again['seconds']:.2f} s)")
    for a, b in zip(first["rows"], again["rows"]):
        print(f"  BM={a['BM']:3d} BN={a['BN']:3d} BK={a['BK']:2d} size={a['size']:4d}  "
              f"first {a['worker_s'] * 1e3:7.1f} ms  again {b['worker_s'] * 1e3:7.1f} ms"
              + ("" if a["ok"] else f"  {a['error']}"))
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(40)
    print(text.getvalue())
    if opts.out:
        os.makedirs(opts.out, exist_ok=True)
        with open(os.path.join(opts.out, "profile-sweep-worker.json"), "w") as f:
            json.dump({"import_s": import_s, "warm_up": warm, "passes": passes}, f, indent=1,
                      default=str)
        with open(os.path.join(opts.out, "profile-sweep-worker.txt"), "w") as f:
            f.write(text.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
