"""A tuning sweep on one GPU against the same sweep on every GPU of the host.

32 configurations of a safe GEMM (BM x BN x BK x problem size, f16), each checked against
``torch.matmul`` on fresh random data and timed with its cuBLAS baseline on the same GPU. The
compile cache is filled first (the same for every run below), and one pool is warmed and closed
before anything is timed (so that every run finds PyTorch's and CUDA's libraries in the page
cache). Then, each with the same start on the one-GPU and the N-GPU side:

- cold: the sweep a user starts with ``gpus=[...]``, its pool made, warmed and shut down inside
  the timed region (what ``gpus="all"`` does): fresh worker processes, each making its GPU
  context and PyTorch's CUDA start; on Linux they fork from the session's fork server, which
  imported the lab and PyTorch once (in the untimed warm-up above); twice per side, in the
  orders 1,N and N,1; with ``--first-in-session`` also once per side with the fork server
  stopped first, so that its start (the imports) is timed too;
  with ``--no-warm-up`` also the same with ``GPUPool.start`` a no-op (each worker pays its
  one-time costs in its first rows, as before the warm-up existed); with ``--uncompiled`` also
  the same with an empty compile cache (a kernel never compiled: the compiles are timed too,
  and the workers warm up while they run);
- warm: a pool kept open: its warm-up (``GPUPool.warm``) timed apart, then its first sweep and a
  second one (the steady state of a notebook that keeps its pool).

Records every run's wall time, best configuration per size with its ties (``ranking``: within
the run's own timing noise), whether the 1- and N-GPU runs chose the same, each worker's
warm-up steps and its own time per row (``worker_s``). Prints a table and writes ``sweep-gpus-<device>.{json,csv}``
with the devices and the date.

    python benchmarks/bench_sweep_gpus.py [--out DIR] [--repeats 50] [--first-in-session]
        [--no-warm-up] [--uncompiled]
    python benchmarks/bench_sweep_gpus.py --analyse results/sweep-gpus-nvidia-h200.csv
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

GEMM = '''
@kernel(tile_order="grouped", group_size=8)
def gemm(c: Mut[Tensor[f16, "BM, BN"]], a: Tensor[f16, "?, ?"], b: Tensor[f16, "?, ?"],
         BK: Const[int] = 64):
    acc = full((BM, BN), 0.0, dtype=f32)
    for k in range(num_tiles(a, 1, (BM, BK))):
        ta = load_tile(a, (tile_id(0), k), (BM, BK))
        tb = load_tile(b, (k, tile_id(1)), (BK, BN))
        acc = mma(ta, tb, acc)
    c.store(acc.astype(f16))
'''

CHOICES = dict(BM=[64, 128], BN=[64, 128], BK=[32, 64], size=[2048, 4096, 6144, 8192])


def make_args(BM, BN, BK, size):
    import torch
    import cutile_lab as cl
    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    c = torch.empty(size, size, device="cuda", dtype=torch.float16)
    return dict(c=cl.asarray(c).partition((BM, BN)), a=cl.asarray(a), b=cl.asarray(b), BK=BK)


def check(result, args):
    import torch
    c, a, b = (torch.as_tensor(t) for t in (result[0].unpartition(), args["a"], args["b"]))
    ref = torch.matmul(a, b)
    return bool(torch.allclose(c.float(), ref.float(), rtol=2e-2, atol=1e-1 * a.shape[1] ** 0.5))


def baseline(BM, BN, BK, size):
    import torch
    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    return lambda: torch.matmul(a, b)


def ranking(df) -> dict:
    """Per problem size: (the fastest configuration, every configuration as fast within the
    run's timing noise, that noise, each configuration's relative time). A configuration's time
    counts relative to cuBLAS on the same GPU at the same size -- the median of the baseline
    timings that GPU made at that size (two GPUs of one model differ a little in clocks, so raw
    times from different GPUs do not rank configurations; ratios do). The noise is the spread
    (max / min - 1) of those baseline timings: one cuBLAS call timed once per configuration; a
    configuration within it of the fastest is a tie, not a slower choice."""
    ok = df[df["ok"]]
    base = ok.groupby(["gpu", "size"])["baseline_us"]
    ok = ok.assign(rel=ok["median_us"] / base.transform("median"),
                   noise=base.transform(lambda b: b.max() / b.min() - 1))
    out = {}
    for size, g in ok.groupby("size"):
        g = g.sort_values("rel")
        rel = {(int(r.BM), int(r.BN), int(r.BK)): float(r.rel) for r in g.itertuples()}
        noise = float(g["noise"].max())
        first = next(iter(rel))
        ties = [c for c, v in rel.items() if v <= rel[first] * (1 + noise)]
        out[int(size)] = (first, ties, noise, rel)
    return out


def best(df) -> dict:
    """Per problem size, the fastest configuration (``ranking``)."""
    return {size: r[0] for size, r in ranking(df).items()}


def _tied(a, b) -> bool:
    """Whether two runs' choices at one size tie: each run times the other's choice within the
    larger of the two runs' noise of its own."""
    band = 1 + max(a[2], b[2])
    return a[3][b[0]] <= a[3][a[0]] * band and b[3][a[0]] <= b[3][b[0]] * band


def agreement(tables, n: int) -> dict:
    """Per kind of run, whether its one-GPU and N-GPU runs chose the same: ``same_best`` (the
    very same configuration at every size, in every pair of runs) and ``same_within_noise``
    (at every size, in every pair, the two choices tie: ``_tied``)."""
    out = {}
    for kind in dict.fromkeys(k for k, _, _ in tables):
        ones = [ranking(df) for k, g, df in tables if k == kind and g == 1]
        alls = [ranking(df) for k, g, df in tables if k == kind and g == n]
        pairs = [(a, b) for a in ones for b in alls]
        if not pairs:
            continue
        out[kind] = {"same_best": all(a[s][0] == b[s][0] for a, b in pairs for s in a),
                     "same_within_noise": all(_tied(a[s], b[s]) for a, b in pairs for s in a)}
    return out


def print_ranking(label: str, df) -> dict:
    r = ranking(df)
    print(f"{label}: " + "; ".join(
        f"{s}: {bm}x{bn}x{bk}" + (f" (ties {', '.join('x'.join(map(str, t)) for t in ties[1:])};"
                                  f" noise {noise:.0%})" if len(ties) > 1 else "")
        for s, ((bm, bn, bk), ties, noise, _) in r.items()))
    return r


def analyse(path: str) -> int:
    """The choices of a recorded run (its CSV), without a GPU."""
    import pandas as pd
    df = pd.read_csv(path)
    tables = []
    for run, g in df.groupby("run", sort=False):
        kind, _, rest = run.rpartition(" GPU(s)")[0].rpartition(" ")
        tables.append((kind, int(rest or _), g))
        print_ranking(run, g)
    n = max(g for _, g, _ in tables)
    for kind, a in agreement(tables, n).items():
        print(f"{kind}: same best {a['same_best']}, same within noise {a['same_within_noise']}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    ap.add_argument("--repeats", type=int, default=50)
    ap.add_argument("--first-in-session", action="store_true",
                    help="also one-shot sweeps that start the workers' fork server themselves")
    ap.add_argument("--no-warm-up", action="store_true",
                    help="also cold one-shot sweeps whose workers do not warm up first")
    ap.add_argument("--uncompiled", action="store_true",
                    help="also one-shot sweeps of a kernel never compiled (an empty cache)")
    ap.add_argument("--analyse", metavar="CSV",
                    help="only print the choices of a recorded run (no GPU needed)")
    opts = ap.parse_args(argv)
    if opts.analyse:
        return analyse(opts.analyse)
    from benchmarks.common import use_gpu, versions
    why = use_gpu()
    if why:
        print(why)
        return 0
    import statistics
    import cutile_lab as cl
    from cutile_lab.notebook import sweep
    from cutile_lab.notebook.fanout import GPUPool, KernelSpec, local_gpu_count, pack
    from cutile_lab.notebook.tuning import _simple_globals
    n = local_gpu_count()
    if n < 2:
        print(f"this benchmark compares one GPU with several; this host has {n}")
        return 0
    kernel = cl.kernels_from_source(GEMM, "bench_sweep_gpus.py")["gemm"]
    spec, payload = KernelSpec.of(kernel, _simple_globals(kernel)), pack(make_args, check, baseline)
    t0 = time.perf_counter()
    sweep(kernel, None, progress=False, **CHOICES)            # fills the compile cache
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    sweep(kernel, None, progress=False, **CHOICES)            # the host's cache lookups alone
    lookup_s = time.perf_counter() - t0
    with GPUPool(list(range(n))) as pool:                     # the page cache, not timed
        pool.warm(spec, payload)

    def timed(pool):
        t0 = time.perf_counter()
        df = sweep(kernel, make_args, progress=False, gpus=pool, check=check,
                   baseline=baseline, repeats=opts.repeats, record=False, **CHOICES)
        return time.perf_counter() - t0, df

    def one_shot(g):
        t0 = time.perf_counter()
        pool = GPUPool(list(range(g)))            # as sweep(gpus=[...]) makes and closes it
        try:
            _, df = timed(pool)
        finally:
            warm = pool.warmups
            pool.shutdown()
        return time.perf_counter() - t0, df, warm

    runs = []          # (kind, gpus, seconds, table, warm-ups)
    if opts.first_in_session:
        from multiprocessing import forkserver
        for g in (1, n):              # the fork server (if any) starts inside the timed region
            stop = getattr(forkserver._forkserver, "_stop", None)
            if stop is not None:
                stop()
            runs.append(("first in session", g, *one_shot(g)))
    for order in ((1, n), (n, 1)):
        for g in order:
            runs.append(("cold", g, *one_shot(g)))
    if opts.no_warm_up:
        start, GPUPool.start = GPUPool.start, lambda self, *a, **k: None
        try:
            for order in ((1, n), (n, 1)):
                for g in order:       # as before the warm-up: each worker pays on its own rows
                    runs.append(("no warm-up", g, *one_shot(g)))
        finally:
            GPUPool.start = start
    if opts.uncompiled:
        import tempfile
        cache_dir = os.environ.get("CUTILE_LAB_CACHE_DIR")
        try:
            for order in ((1, n), (n, 1)):
                for g in order:       # a kernel never compiled: an empty compile cache
                    os.environ["CUTILE_LAB_CACHE_DIR"] = tempfile.mkdtemp(prefix="sweep-cold-")
                    runs.append(("uncompiled", g, *one_shot(g)))
        finally:
            if cache_dir is None:
                os.environ.pop("CUTILE_LAB_CACHE_DIR", None)
            else:
                os.environ["CUTILE_LAB_CACHE_DIR"] = cache_dir
    for g in (1, n):
        with GPUPool(list(range(g))) as pool:
            t0 = time.perf_counter()
            pool.warm(spec, payload)
            runs.append(("warm-up", g, time.perf_counter() - t0, None, pool.warmups))
            for kind in ("warm first", "warm again"):
                t, df = timed(pool)
                runs.append((kind, g, t, df, {}))
    tables = [r for r in runs if r[3] is not None]
    devices = sorted({d for r in tables for d in r[3]["device"]})
    last = tables[-1][3]
    print(last[[c for c in ("BM", "BN", "BK", "size", "median_us", "tflops", "baseline_us",
                            "speedup", "gpu", "ok") if c in last]].to_string())
    print(f"\n{len(tables[0][3])} configurations; compiles {compile_s:.1f} s (cached for every "
          f"run; the host's cache lookups {lookup_s:.2f} s)")
    summary, records = {}, []
    for kind, g, t, df, warm in runs:
        rec = {"kind": kind, "gpus": g, "seconds": t}
        if warm:
            rec["warm_up"] = {str(k): {s: v for s, v in w.items() if s.endswith("_s")
                                       or s == "error"} for k, w in warm.items()}
        if df is not None:
            rec["best"] = {str(k): v for k, v in best(df).items()}
            rec["ties"] = {str(k): {"configurations": r[1], "noise": r[2]}
                           for k, r in ranking(df).items()}
            rec["all_ok"] = bool(df["ok"].all())
            rec["worker_s"] = {str(k): float(v) for k, v in df.groupby("gpu")["worker_s"].sum().items()}
        records.append(rec)
        summary.setdefault(kind, {}).setdefault(g, []).append(t)
        steps = "; ".join(f"GPU {k}: " + ", ".join(f"{s[:-2]} {v:.2f}" for s, v in w.items()
                                                    if s.endswith("_s"))
                          for k, w in (warm or {}).items())
        print(f"{kind:10s} {g} GPU(s): {t:6.2f} s" + (f"  best {rec['best']}" if df is not None
                                                        else "") + (f"\n    warm-up {steps}"
                                                                    if steps else ""))
    ratios = {}
    for kind, by_g in summary.items():
        t1, tn = statistics.median(by_g[1]), statistics.median(by_g[n])
        ratios[kind] = {"seconds_one_gpu": t1, "seconds_all_gpus": tn}
        if kind != "warm-up":             # a pool's warm-up alone: its cost, not a speedup
            ratios[kind]["speedup"] = t1 / tn
        print(f"{kind:10s} median 1 GPU {t1:.2f} s   {n} GPUs {tn:.2f} s"
              + (f"   speedup {t1 / tn:.2f}x" if kind != "warm-up" else ""))
    agreed = agreement([(k, g, df) for k, g, _, df, _ in tables], n)
    for kind, a in agreed.items():
        ratios[kind].update(a)
        print(f"{kind:10s} 1 GPU and {n} GPUs chose: the same best {a['same_best']}, the same "
              f"within the timing noise {a['same_within_noise']}")
    for kind, g, _, df, _ in tables:
        print_ranking(f"{kind} {g} GPU(s)", df)
    slug = devices[0].lower().replace(" ", "-")
    os.makedirs(opts.out, exist_ok=True)
    record = {"benchmark": "sweep-gpus", "date": _dt.datetime.now(_dt.timezone.utc).isoformat(),
              "devices": devices, "gpus": n, "configurations": len(tables[0][3]),
              "repeats": opts.repeats, "compile_s": compile_s, "cache_lookup_s": lookup_s,
              "summary": ratios, "runs": records,
              "all_ok": all(r.get("all_ok", True) for r in records), "versions": versions()}
    with open(os.path.join(opts.out, f"sweep-gpus-{slug}.json"), "w") as f:
        json.dump(record, f, indent=1)
    import pandas as pd
    both = pd.concat([df.assign(run=f"{kind} {g} GPU(s) #{j}")
                      for j, (kind, g, _, df, _) in enumerate(runs) if df is not None])
    both.to_csv(os.path.join(opts.out, f"sweep-gpus-{slug}.csv"), index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
