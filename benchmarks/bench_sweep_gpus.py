"""A tuning sweep on one GPU against the same sweep on every GPU of the host.

32 configurations of a safe GEMM (BM x BN x BK x problem size, f16), each checked against
``torch.matmul`` on fresh random data and timed with its cuBLAS baseline on the same GPU. The
compile cache is filled first (the same for every run below), and one pool is warmed and closed
before anything is timed (so that every run finds PyTorch's and CUDA's libraries in the page
cache). Then every sweep is called as a user calls it, the one-GPU and N-GPU sides alternating
(orders 1,N and N,1):

- in-process: ``sweep(...)`` without ``gpus=``, what a one-GPU user runs (its first call, which
  pays this process's CUDA and PyTorch start, apart);
- kept first / kept again: ``sweep(..., gpus=[0..g-1])``, the first ``gpus=`` sweep of the
  session on those GPUs (its pool started and warmed inside it) and the next one (the session's
  kept pool, reused); the kept pools are closed (``cl.close_gpu_pools()``) before each first;
- one-shot: ``sweep(..., gpus=[...], keep_pool=False)``: a pool made, warmed and shut down
  inside the call (fresh worker processes forked from the session's fork server, which imported
  the lab and PyTorch once, in the untimed warm-up above);
- with ``--first-in-session`` also one one-shot per side with the fork server stopped first (its
  start, the imports, timed too); with ``--no-warm-up`` one-shots with ``GPUPool.start`` a no-op
  (each worker pays its one-time costs in its first rows); with ``--uncompiled`` one-shots of a
  kernel never compiled (an empty compile cache: the compiles are timed too);
- warm-up / warm first / warm again (unless ``--no-user-pool``): a ``GPUPool`` the user keeps
  open (``gpus=pool``): its warm-up (``GPUPool.warm``) timed apart, then two sweeps.

Ratios per kind: its one GPU over its N GPUs (``speedup``, = ``speedup_vs_one_worker`` where
the one GPU ran in a pool) and the in-process sweep over its N GPUs (``speedup_vs_in_process``).
Records every run's wall time, best configuration per size with its ties (``ranking``: within
the run's own timing noise), whether the 1- and N-GPU runs (and the in-process and N-GPU runs)
chose the same, each worker's warm-up steps and its own time per row (``worker_s``). Prints a
table and writes ``sweep-gpus-<device>.{json,csv}`` with the devices and the date. The default
run makes 19 timed sweeps (about 90 s expected on two H200s with the compile cache filled).

    python benchmarks/bench_sweep_gpus.py [--out DIR] [--repeats 50] [--first-in-session]
        [--no-warm-up] [--uncompiled] [--no-user-pool]
    python benchmarks/bench_sweep_gpus.py --analyse results/sweep-gpus-nvidia-h200.csv
"""
from __future__ import annotations

import argparse
import contextlib
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
# what a compile-only sweep (no make_args) takes: the const generics; the size is make_args'
COMPILE_CHOICES = {k: v for k, v in CHOICES.items() if k != "size"}


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


def _agree(ones: list, alls: list) -> dict | None:
    """Whether every pair of rankings (one of ``ones`` against one of ``alls``) chose the same:
    ``same_best`` (the very same configuration at every size) and ``same_within_noise`` (at
    every size the two choices tie: ``_tied``); None where there is no pair."""
    pairs = [(a, b) for a in ones for b in alls]
    if not pairs:
        return None
    return {"same_best": all(a[s][0] == b[s][0] for a, b in pairs for s in a),
            "same_within_noise": all(_tied(a[s], b[s]) for a, b in pairs for s in a)}


def agreement(tables, n: int) -> dict:
    """Per kind of run, whether its one-GPU and N-GPU runs chose the same (``_agree``), and for
    each kind's N-GPU runs, whether they chose as the in-process sweep did (``<kind> vs
    in-process``)."""
    out = {}
    local = [ranking(df) for k, g, df in tables if k == IN_PROCESS]
    for kind in dict.fromkeys(k for k, _, _ in tables):
        ones = [ranking(df) for k, g, df in tables if k == kind and g == 1]
        alls = [ranking(df) for k, g, df in tables if k == kind and g == n]
        for label, a in ((kind, _agree(ones, alls)),
                         (f"{kind} vs {IN_PROCESS}", _agree(local, alls))):
            if a is not None and kind != IN_PROCESS:
                out[label] = a
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


IN_PROCESS = "in-process"


def measure(run, close_pools, n: int, opts, restart_server=None, no_warm_up=None,
            empty_cache=None) -> list[tuple]:
    """Every timed run, in order: ``(kind, gpus, seconds, table, warm-ups)``, the one-GPU and the
    N-GPU sides of each kind alternating (orders 1,N and N,1). ``run(gpus, keep_pool)`` times one
    sweep as a user calls it -- ``gpus`` None: in this process, without ``gpus=``; a count: on
    GPUs ``0..count-1`` (the session's kept pool, or with ``keep_pool`` False a pool of the
    sweep's own) -- and returns ``(seconds, table, warm-ups)``; ``close_pools()`` closes the
    session's kept pools (so that the next ``gpus=`` sweep is its set's first of the session).
    The optional kinds' context managers (``restart_server``, ``no_warm_up``, ``empty_cache``)
    prepare their runs."""
    runs = [(f"{IN_PROCESS} first", 1, *run(None, True))]   # pays this process's CUDA start
    for order in ((1, n), (n, 1)):
        runs.append((IN_PROCESS, 1, *run(None, True)))
        for g in order:                  # the first gpus= sweep of a session, then the next
            close_pools()
            runs.append(("kept first", g, *run(g, True)))
            runs.append(("kept again", g, *run(g, True)))
    close_pools()
    for order in ((1, n), (n, 1)):
        for g in order:
            runs.append(("one-shot", g, *run(g, False)))
    extras = [("first in session", opts.first_in_session, restart_server, ((1, n),)),
              ("no warm-up", opts.no_warm_up, no_warm_up, ((1, n), (n, 1))),
              ("uncompiled", opts.uncompiled, empty_cache, ((1, n), (n, 1)))]
    for kind, wanted, prepare, orders in extras:
        for order in orders if wanted else ():
            for g in order:
                with prepare():
                    runs.append((kind, g, *run(g, False)))
    return runs


def summarise(runs: list[tuple], n: int) -> tuple[dict, list[dict]]:
    """The medians of each kind on each side and their ratios (``speedup``: its own one GPU over
    its N GPUs; ``speedup_vs_in_process``: the in-process sweep over its N GPUs; ``speedup_vs_one_worker``
    where its one GPU ran in a pool), the agreement of their choices, and one record per run."""
    import statistics
    by_kind: dict[str, dict[int, list]] = {}
    records = []
    for kind, g, t, df, warm in runs:
        by_kind.setdefault(kind, {}).setdefault(g, []).append(t)
        rec = {"kind": kind, "gpus": g, "seconds": t}
        if warm:
            rec["warm_up"] = {str(k): {s: v for s, v in w.items() if s.endswith("_s")
                                       or s == "error"} for k, w in warm.items()}
        if df is not None:
            rec["best"] = {str(k): v for k, v in best(df).items()}
            rec["ties"] = {str(k): {"configurations": r[1], "noise": r[2]}
                           for k, r in ranking(df).items()}
            rec["all_ok"] = bool(df["ok"].all())
            if "worker_s" in df:
                rec["worker_s"] = {str(k): float(v)
                                   for k, v in df.groupby("gpu")["worker_s"].sum().items()}
        records.append(rec)
    local = statistics.median(by_kind[IN_PROCESS][1]) if IN_PROCESS in by_kind else None
    ratios = {}
    for kind, by_g in by_kind.items():
        r = ratios[kind] = {}
        if 1 in by_g:
            r["seconds_one_gpu"] = statistics.median(by_g[1])
        if n in by_g and n != 1:
            tn = r["seconds_all_gpus"] = statistics.median(by_g[n])
            if kind != "warm-up":          # a pool's warm-up alone: its cost, not a speedup
                if 1 in by_g:
                    r["speedup"] = r["speedup_vs_one_worker"] = r["seconds_one_gpu"] / tn
                if local is not None:
                    r["speedup_vs_in_process"] = local / tn
    tables = [(k, g, df) for k, g, _, df, _ in runs if df is not None]
    for label, a in agreement(tables, n).items():
        ratios.setdefault(label, {}).update(a)
    return ratios, records


def print_summary(runs: list[tuple], ratios: dict, n: int) -> None:
    for kind, g, t, df, warm in runs:
        steps = "; ".join(f"GPU {k}: " + ", ".join(f"{s[:-2]} {v:.2f}" for s, v in w.items()
                                                    if s.endswith("_s"))
                          for k, w in (warm or {}).items())
        print(f"{kind:16s} {g} GPU(s): {t:6.2f} s" + (f"  best {best(df)}" if df is not None
                                                      else "")
              + (f"\n    warm-up {steps}" if steps else ""))
    for kind, r in ratios.items():
        if "seconds_one_gpu" in r or "seconds_all_gpus" in r:
            print(f"{kind:16s} median" + (f" 1 GPU {r['seconds_one_gpu']:.2f} s"
                                          if "seconds_one_gpu" in r else "")
                  + (f"   {n} GPUs {r['seconds_all_gpus']:.2f} s" if "seconds_all_gpus" in r
                     else "")
                  + (f"   speedup {r['speedup']:.2f}x" if "speedup" in r else "")
                  + (f"   vs in-process {r['speedup_vs_in_process']:.2f}x"
                     if "speedup_vs_in_process" in r else ""))
        if "same_best" in r:
            print(f"{kind:16s} chose as {'in-process' if ' vs ' in kind else '1 GPU'}: the same "
                  f"best {r['same_best']}, the same within the timing noise "
                  f"{r['same_within_noise']}")
    for kind, g, _, df, _ in runs:
        if df is not None:
            print_ranking(f"{kind} {g} GPU(s)", df)


def write_results(out: str, runs: list[tuple], ratios: dict, records: list[dict], n: int,
                  extra: dict) -> tuple[str, str]:
    """``sweep-gpus-<device>.json`` (the summary, every run, the devices and the date) and
    ``.csv`` (every run's table, its ``run`` label ``<kind> <g> GPU(s) #<j>``, which
    ``--analyse`` reads); returns their paths."""
    import pandas as pd
    tables = [r[3] for r in runs if r[3] is not None]
    devices = sorted({d for df in tables for d in df["device"]})
    slug = devices[0].lower().replace(" ", "-")
    os.makedirs(out, exist_ok=True)
    record = {"benchmark": "sweep-gpus", "date": _dt.datetime.now(_dt.timezone.utc).isoformat(),
              "devices": devices, "gpus": n, "configurations": len(tables[0]), **extra,
              "summary": ratios, "runs": records,
              "all_ok": all(r.get("all_ok", True) for r in records)}
    paths = (os.path.join(out, f"sweep-gpus-{slug}.json"),
             os.path.join(out, f"sweep-gpus-{slug}.csv"))
    with open(paths[0], "w") as f:
        json.dump(record, f, indent=1, default=str)
    pd.concat([df.assign(run=f"{kind} {g} GPU(s) #{j}")
               for j, (kind, g, _, df, _) in enumerate(runs) if df is not None]
              ).to_csv(paths[1], index=False)
    return paths


def _options(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    ap.add_argument("--repeats", type=int, default=50)
    ap.add_argument("--first-in-session", action="store_true",
                    help="also one-shot sweeps that start the workers' fork server themselves")
    ap.add_argument("--no-warm-up", action="store_true",
                    help="also one-shot sweeps whose workers do not warm up first")
    ap.add_argument("--uncompiled", action="store_true",
                    help="also one-shot sweeps of a kernel never compiled (an empty cache)")
    ap.add_argument("--no-user-pool", action="store_true",
                    help="leave out the sweeps on a GPUPool the benchmark keeps open itself")
    ap.add_argument("--analyse", metavar="CSV",
                    help="only print the choices of a recorded run (no GPU needed)")
    return ap.parse_args(argv)


@contextlib.contextmanager
def _restart_server():
    """The fork server (if any) stopped: the next pool starts it, inside the timed region."""
    from multiprocessing import forkserver
    stop = getattr(forkserver._forkserver, "_stop", None)
    if stop is not None:
        stop()
    yield


@contextlib.contextmanager
def _no_warm_up():
    """``GPUPool.start`` a no-op: each worker pays its one-time costs in its first rows."""
    from cutile_lab.notebook.fanout import GPUPool
    start, GPUPool.start = GPUPool.start, lambda self, *a, **k: None
    try:
        yield
    finally:
        GPUPool.start = start


@contextlib.contextmanager
def _empty_cache():
    """A kernel never compiled: an empty compile cache (the compiles are timed too)."""
    import tempfile
    cache_dir = os.environ.get("CUTILE_LAB_CACHE_DIR")
    os.environ["CUTILE_LAB_CACHE_DIR"] = tempfile.mkdtemp(prefix="sweep-cold-")
    try:
        yield
    finally:
        if cache_dir is None:
            os.environ.pop("CUTILE_LAB_CACHE_DIR", None)
        else:
            os.environ["CUTILE_LAB_CACHE_DIR"] = cache_dir


def sweep_runner(kernel, repeats: int):
    """``run(gpus, keep_pool)`` for ``measure``: the sweep as a user calls it, timed, with the
    warm-up records of the pool it ran on (a one-shot pool's read just before it closes)."""
    from cutile_lab.notebook import sweep
    from cutile_lab.notebook.fanout import GPUPool
    from cutile_lab.notebook.gpu_pools import kept_pools

    def run(g, keep_pool):
        seen, shutdown = [], GPUPool.shutdown

        def watched(self, wait=True):
            seen.append(self.warmups)
            shutdown(self, wait)
        GPUPool.shutdown = watched
        try:
            t0 = time.perf_counter()
            df = sweep(kernel, make_args, progress=False, check=check, baseline=baseline,
                       repeats=repeats, record=False, keep_pool=keep_pool,
                       gpus=None if g is None else list(range(g)), **CHOICES)
            t = time.perf_counter() - t0
        finally:
            GPUPool.shutdown = shutdown
        kept = kept_pools().get(tuple(range(g))) if g is not None and keep_pool else None
        return t, df, kept.warmups if kept is not None else (seen[0] if seen else {})
    return run


def main(argv=None) -> int:
    opts = _options(argv)
    if opts.analyse:
        return analyse(opts.analyse)
    from benchmarks.common import use_gpu, versions
    why = use_gpu()
    if why:
        print(why)
        return 0
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
    sweep(kernel, None, progress=False, **COMPILE_CHOICES)    # fills the compile cache
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    sweep(kernel, None, progress=False, **COMPILE_CHOICES)    # the host's cache lookups alone
    lookup_s = time.perf_counter() - t0
    with GPUPool(list(range(n))) as pool:                     # the page cache, not timed
        pool.warm(spec, payload)
    runs = measure(sweep_runner(kernel, opts.repeats), cl.close_gpu_pools, n, opts,
                   _restart_server, _no_warm_up, _empty_cache)
    for g in () if opts.no_user_pool else (1, n):
        with GPUPool(list(range(g))) as pool:     # a pool the user keeps open: gpus=pool
            t0 = time.perf_counter()
            pool.warm(spec, payload)
            runs.append(("warm-up", g, time.perf_counter() - t0, None, pool.warmups))
            for kind in ("warm first", "warm again"):
                t0 = time.perf_counter()
                df = sweep(kernel, make_args, progress=False, gpus=pool, check=check,
                           baseline=baseline, repeats=opts.repeats, record=False, **CHOICES)
                runs.append((kind, g, time.perf_counter() - t0, df, {}))
    cl.close_gpu_pools()
    last = [r[3] for r in runs if r[3] is not None][-1]
    print(last[[c for c in ("BM", "BN", "BK", "size", "median_us", "tflops", "baseline_us",
                            "speedup", "gpu", "ok") if c in last]].to_string())
    print(f"\n{len(last)} configurations; compiles {compile_s:.1f} s (cached for every "
          f"run; the host's cache lookups {lookup_s:.2f} s)")
    ratios, records = summarise(runs, n)
    print_summary(runs, ratios, n)
    write_results(opts.out, runs, ratios, records, n,
                  {"repeats": opts.repeats, "compile_s": compile_s, "cache_lookup_s": lookup_s,
                   "versions": versions()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
