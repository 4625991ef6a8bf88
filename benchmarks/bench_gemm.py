"""GEMM f16/bf16 (4096 and 8192) against torch.matmul (cuBLAS), and the safe kernel against its unsafe twin: one family of ``bench_kernels.py``, which runs them all.

    python benchmarks/bench_gemm.py [--out DIR] [--tune] [--quick]
    python benchmarks/bench_gemm.py --variants [NAME,...] [--sizes 4096,8192] [--out DIR]
                                    [--profile]

Prints the table and writes ``benchmarks/results/kernels-gemm-<device>.json``/``.csv`` and plots.

``--variants`` is the tuning lab behind ``benchmarks/NOTES.md``: every schedule in ``VARIANTS``
(tile shape, clusters, occupancy, persistent grid size, group size, optimisation level) is
checked against PyTorch on fresh random data and timed against cuBLAS in alternating rounds of
CUDA-event pairs in the same run (the ratio is the median of the rounds' ratios); then, per size
and dtype, the user path of the tuned configuration: ``K.gemm(a, b).sync()``, the same kernel
pre-built and waited for, and ``torch.matmul`` + synchronize (host wall time per call), to
show how much of the user path is host time rather than kernel time. Writes
``gemm-variants-<device>.json``/``.csv``.
"""
from __future__ import annotations

import argparse
import csv
import datetime as _dt
import json
import re
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_kernels import main  # noqa: E402

P = "persistent"
C2 = {"num_ctas": 2, "num_worker_warps": 8, "schedule": P}
C4 = {"num_ctas": 4, "num_worker_warps": 8, "schedule": P}
# name -> (BM, BN, BK, hints, extra decorator text, group size, persistent grid). The grid: None
# is the runtime's (SMs / num_ctas x occupancy instances); "sm" launches SMs x occupancy
# instances whatever the cluster size (the runtime's grid before 2026-11-26: with num_ctas=2,
# two clusters per SM pair, in two rounds).
VARIANTS = {
    "tuned-256x256x64-c2-p": (256, 256, 64, C2, "", 8, None),
    "256x256x64-c2-p-grid-sm": (256, 256, 64, C2, "", 8, "sm"),
    "256x256x64-c2-p-g4": (256, 256, 64, C2, "", 4, None),
    "256x256x64-c2-p-g16": (256, 256, 64, C2, "", 16, None),
    "256x256x64-c2-p-O2": (256, 256, 64, C2, ", opt_level=2", 8, None),
    "256x256x128-c2-p": (256, 256, 128, C2, "", 8, None),
    "256x256x32-c2-p": (256, 256, 32, C2, "", 8, None),
    "512x256x64-c4-p": (512, 256, 64, C4, "", 8, None),
    "256x512x64-c4-p": (256, 512, 64, C4, "", 8, None),
    "256x256x64-c4-p": (256, 256, 64, C4, "", 8, None),
    "128x256x64-p": (128, 256, 64, {"num_worker_warps": 8, "schedule": P}, "", 8, None),
    "256x128x64-p": (256, 128, 64, {"num_worker_warps": 8, "schedule": P}, "", 8, None),
    "128x256x64-c2-p": (128, 256, 64, C2, "", 8, None),
    "256x128x64-c2-p": (256, 128, 64, C2, "", 8, None),
    "128x128x64-occ2-p": (128, 128, 64, {"occupancy": 2, "schedule": P}, "", 8, None),
    "128x256x64-tiles": (128, 256, 64, {"num_worker_warps": 8}, "", 8, None),
}


def variants(args) -> int:
    import torch

    import cutile_lab as cl
    import cutile_lab.kernels as K
    from benchmarks.common import (event_times, median, to_torch, torch_event_times, use_gpu,
                                   versions)
    from cutile_lab.kernels import matmul
    from cutile_lab.kernels.host import _arch
    from cutile_lab.kernels.tuning import config, hints_text
    from cutile_lab.runtime.device import device_info, gpu

    problem = use_gpu()
    if problem:
        print(problem)
        return 2
    info = device_info()
    s = gpu().new_stream()
    names = args.variants.split(",") if args.variants != "all" else list(VARIANTS)
    sizes = [int(n) for n in args.sizes.split(",")]
    rows, errors = [], []
    print(f"device: {info}")

    def paired(ours, theirs, rounds=5, repeats=10):
        mine, base, ratios = [], [], []
        for _ in range(rounds):
            a = median(event_times(ours, s, warmup=2, repeats=repeats))
            b = median(torch_event_times(theirs, warmup=2, repeats=repeats))
            mine.append(a)
            base.append(b)
            ratios.append(b / a)
        return median(mine), median(base), median(ratios)

    def wall(fn, n):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t0) / n

    for dt, tdt in (("f16", torch.float16), ("bf16", torch.bfloat16)):
        for n in sizes:
            a = cl.empty((n, n), dt)
            b = cl.empty((n, n), dt)
            ta, tb = to_torch(a), to_torch(b)
            ta.normal_()
            tb.normal_()
            ref = torch.matmul(ta.float(), tb.float())
            c = cl.empty((n, n), dt)
            tc = to_torch(c)
            out = torch.empty_like(ta)
            print(f"\n[gemm] {dt} {n}^3")
            for name in names:
                BM, BN, BK, hints, extra, group, grid = VARIANTS[name]
                try:
                    kernel = matmul.GEMM.kernel(dt=dt, hints=hints_text(hints) + extra,
                                                group=str(group))
                    kw = {"BK": BK}
                    if hints.get("schedule") == P and grid == "sm":
                        kw["grid"] = (info.sm_count * hints.get("occupancy", 1),)

                    def run(kernel=kernel, BM=BM, BN=BN, kw=kw):
                        kernel(c.partition_mut((BM, BN)), a, b, **kw).start(s)
                    tc.fill_(float("nan"))
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    run()
                    s.sync()
                    first = time.perf_counter() - t0
                    rel = ((tc.float() - ref).norm() / ref.norm()).item()
                    if not rel < 1e-2:
                        raise AssertionError(f"relative error {rel}")
                    t, tbase, ratio = paired(run, lambda: torch.matmul(ta, tb, out=out))
                except Exception as e:
                    msg = f"{name} {dt} {n}: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
                    errors.append(msg)
                    print("  !!", msg)
                    traceback.print_exc()
                    continue
                tflops = 2 * n ** 3 / t / 1e12
                rows.append({"kind": "kernel", "variant": name, "dtype": dt, "n": n, "BM": BM,
                             "BN": BN, "BK": BK, "group": group, "grid": grid, **hints,
                             "extra": extra, "us": t * 1e6, "cublas_us": tbase * 1e6,
                             "ratio": ratio, "tflop_s": tflops, "rel_err": rel,
                             "first_call_s": first})
                print(f"  {name:26s} {t * 1e6:8.1f} us {tflops:6.0f} TFLOP/s  "
                      f"cuBLAS {tbase * 1e6:8.1f} us  x{ratio:.3f}", flush=True)
            # the user path of the stored configuration against the kernel alone
            try:
                cfg = config("gemm", _arch(), variant=dt)
                kernel = matmul.GEMM.kernel(dt=dt, hints=hints_text(cfg))
                reps = 20 if n <= 4096 else 8

                def user():
                    K.gemm(a, b).sync()

                def prebuilt():
                    kernel(c.partition_mut((cfg["BM"], cfg["BN"])), a, b, BK=cfg["BK"]).sync()

                def theirs():
                    torch.matmul(ta, tb)
                    torch.cuda.synchronize()
                for f in (user, prebuilt, theirs):
                    for _ in range(5):
                        f()
                res = {"user": [], "prebuilt": [], "torch": []}
                for _ in range(5):
                    for key, f in (("user", user), ("prebuilt", prebuilt), ("torch", theirs)):
                        res[key].append(wall(f, reps))
                # host time to build and enqueue one call (the GPU idle before it): what the
                # user path adds to the kernel, beside the wait
                enq = {"user": [], "prebuilt": [], "torch": []}
                for _ in range(reps):
                    t0 = time.perf_counter()
                    pending = K.gemm(a, b).start()
                    enq["user"].append(time.perf_counter() - t0)
                    pending.wait()
                    t0 = time.perf_counter()
                    pending = kernel(c.partition_mut((cfg["BM"], cfg["BN"])), a, b,
                                     BK=cfg["BK"]).start()
                    enq["prebuilt"].append(time.perf_counter() - t0)
                    pending.wait()
                    t0 = time.perf_counter()
                    torch.matmul(ta, tb)
                    enq["torch"].append(time.perf_counter() - t0)
                    torch.cuda.synchronize()
                eu, ep, et = (median(enq[k]) for k in ("user", "prebuilt", "torch"))
                u, p, th = (median(res[k]) for k in ("user", "prebuilt", "torch"))
                ur = median([x / y for x, y in zip(res["torch"], res["user"])])
                pr = median([x / y for x, y in zip(res["torch"], res["prebuilt"])])
                rows.append({"kind": "user", "dtype": dt, "n": n, **cfg, "user_us": u * 1e6,
                             "prebuilt_us": p * 1e6, "torch_user_us": th * 1e6,
                             "user_ratio": ur, "prebuilt_ratio": pr,
                             "enqueue_us": eu * 1e6, "prebuilt_enqueue_us": ep * 1e6,
                             "torch_enqueue_us": et * 1e6})
                print(f"  user path {cfg}: K.gemm {u * 1e6:.1f} us, pre-built op + sync "
                      f"{p * 1e6:.1f} us, torch + sync {th * 1e6:.1f} us: x{ur:.3f} (pre-built "
                      f"x{pr:.3f}); host time to enqueue: K.gemm {eu * 1e6:.1f} us, pre-built "
                      f"{ep * 1e6:.1f} us, torch {et * 1e6:.1f} us", flush=True)
                if args.profile and dt == "f16" and n == sizes[0]:
                    import cProfile
                    import io
                    import pstats
                    prof = cProfile.Profile()
                    prof.enable()
                    for _ in range(200):
                        user()
                    prof.disable()
                    text = io.StringIO()
                    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(18)
                    print(text.getvalue()[-6000:])
            except Exception as e:
                errors.append(f"user path {dt} {n}: {type(e).__name__}: {e}")
                traceback.print_exc()
            del a, b, c, ta, tb, tc, ref, out
            torch.cuda.empty_cache()

    slug = re.sub(r"[^a-z0-9]+", "-", info.name.lower()).strip("-")
    out_dir = Path(args.out) if args.out else Path(__file__).with_name("results")
    out_dir.mkdir(parents=True, exist_ok=True)
    doc = {"device": info.name, "date": _dt.datetime.now(_dt.timezone.utc).isoformat(),
           "versions": versions(), "rows": rows, "errors": errors}
    (out_dir / f"gemm-variants-{slug}.json").write_text(json.dumps(doc, indent=2) + "\n")
    keys = sorted({k for r in rows for k in r})
    with open(out_dir / f"gemm-variants-{slug}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    print("\nsummary (ratio = cuBLAS time / ours, same run)")
    for r in rows:
        if r["kind"] == "kernel":
            print(f"  {r['dtype']:4s} {r['n']:5d} {r['variant']:26s} x{r['ratio']:.3f}")
        else:
            print(f"  {r['dtype']:4s} {r['n']:5d} user x{r['user_ratio']:.3f} pre-built+sync "
                  f"x{r['prebuilt_ratio']:.3f} enqueue {r['enqueue_us']:.0f} / "
                  f"{r['prebuilt_enqueue_us']:.0f} / torch {r['torch_enqueue_us']:.0f} us")
    if errors:
        print("errors:", *errors, sep="\n  ")
    return 1 if errors else 0


if __name__ == "__main__":
    if "--variants" in sys.argv:
        ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
        ap.add_argument("--variants", nargs="?", const="all", default="all")
        ap.add_argument("--sizes", default="4096,8192")
        ap.add_argument("--out")
        ap.add_argument("--profile", action="store_true",
                        help="cProfile 200 calls of K.gemm(a, b).sync() (f16, first size)")
        sys.exit(variants(ap.parse_args()))
    sys.exit(main(families="gemm", description=__doc__.split("\n")[0]))
