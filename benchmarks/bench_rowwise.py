"""Row-wise kernels (softmax, layernorm, rmsnorm; f16 rows of 1024, 8192 and 32768 columns) against PyTorch: one family of ``bench_kernels.py``, which runs them all.

    python benchmarks/bench_rowwise.py [--out DIR] [--tune] [--quick]
    python benchmarks/bench_rowwise.py --long-rows [--out DIR] [--quick]

Prints the table and writes ``benchmarks/results/kernels-rowwise-<device>.json``/``.csv`` and plots.

``--long-rows`` (``long_rows`` below, separate from the sweep above): rows of 100,000 and
1,000,000 f16 columns, longer than one tile, which the library does in two launches (statistics,
then apply: ``cutile_lab/kernels/rowwise.py``). Per family and size, in the same run: PyTorch's
kernel (CUDA events), the two launches alone for each configuration of ``LONG_ROW_CONFIGS``
(CUDA events), and the user path of each side (``K.softmax(x).sync()`` against
``torch.softmax(x, -1)`` + synchronize, host clock per call). Every configuration is checked
against PyTorch first. Bandwidth counts the fewest bytes the operation must move (the input read
once and the output written once; the weights too), the same for both sides. Writes
``benchmarks/results/rowwise-long-<device>.json``/``.csv``.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_kernels import main  # noqa: E402

# (stats, apply) tile and hints of the long-row launches: the library's own first. (Blocks of
# rows sized for L2, ``block_bytes``, were measured and dropped: see rowwise.LONG_ROWS.)
LONG_ROW_CONFIGS = [
    {"block_bytes": 0, "stats": {"BN": 4096, "occupancy": 2},
     "apply": {"BN": 4096, "occupancy": 4}},
    {"block_bytes": 0, "stats": {"BN": 4096}, "apply": {"BN": 4096, "occupancy": 4}},
    {"block_bytes": 0, "stats": {"BN": 2048}, "apply": {"BN": 4096, "occupancy": 4}},
    {"block_bytes": 0, "stats": {"BN": 8192}, "apply": {"BN": 4096, "occupancy": 4}},
]
LONG_ROW_SIZES = [(1280, 100_000), (128, 1_000_000)]      # 256 MB of f16 each, far over L2


def long_rows(argv) -> int:
    import argparse
    import csv
    import datetime as _dt
    import json
    import re
    import time

    import cutile_lab as cl
    import cutile_lab.kernels as K
    from benchmarks.common import event_times, median, torch_event_times, use_gpu, versions
    from cutile_lab.kernels import rowwise

    ap = argparse.ArgumentParser(description="long rows against PyTorch")
    ap.add_argument("--long-rows", action="store_true")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    ap.add_argument("--quick", action="store_true", help="the library's configuration only")
    args = ap.parse_args(argv)
    why = use_gpu()
    if why:
        print(why)
        return 1
    import torch
    F = torch.nn.functional
    info = cl.device_info()
    s = cl.stream()
    configs = LONG_ROW_CONFIGS[:1] if args.quick else LONG_ROW_CONFIGS
    rows_out, errors = [], []

    def host_time(call, n=20):
        call()
        torch.cuda.synchronize()
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        return median(times)

    for rows, cols in LONG_ROW_SIZES:
        x = torch.randn(rows, cols, device="cuda", dtype=torch.float16) * 2 + 1
        w = torch.randn(cols, device="cuda", dtype=torch.float16)
        b = torch.randn(cols, device="cuda", dtype=torch.float16)
        cx, cw, cb = cl.asarray(x), cl.asarray(w), cl.asarray(b)
        families = {
            "softmax": (lambda: torch.softmax(x, -1), lambda: K.softmax(cx), ()),
            "layernorm": (lambda: F.layer_norm(x, (cols,), w, b, 1e-5),
                          lambda: K.layernorm(cx, cw, cb, 1e-5), (cw, cb, cols, 1e-5)),
            "rmsnorm": (lambda: F.rms_norm(x, (cols,), w, 1e-6), lambda: K.rmsnorm(cx, cw, 1e-6),
                        (cw, cols, 1e-6)),
        }
        for family, (theirs, user, extra) in families.items():
            n_weights = max(0, len(extra) - 2)            # w (and b): read once too
            nbytes = (2 * rows + n_weights) * cols * 2
            ref = theirs().double()
            t_torch = median(torch_event_times(theirs, warmup=3, repeats=20))
            got = torch.from_dlpack(user().sync()).double()
            err = ((got - ref).norm() / ref.norm()).item()
            assert err < 5e-3, f"{family} {cols}: user path relative error {err}"
            u_ours = host_time(lambda: user().sync())
            u_torch = host_time(lambda: (theirs(), torch.cuda.synchronize()))
            base = dict(family=family, rows=rows, cols=cols, dtype="f16", bytes=nbytes,
                        torch_ms=t_torch * 1e3, torch_GBps=nbytes / t_torch / 1e9)
            rows_out.append(dict(base, what="user path", ms=u_ours * 1e3,
                                 GBps=nbytes / u_ours / 1e9, torch_user_ms=u_torch * 1e3,
                                 ratio=u_torch / u_ours, rel_err=err))
            print(f"{family:9s} {rows}x{cols}: torch {t_torch * 1e3:.3f} ms "
                  f"({nbytes / t_torch / 1e9:.0f} GB/s); user path ours {u_ours * 1e3:.3f} ms "
                  f"vs torch {u_torch * 1e3:.3f} ms ({u_torch / u_ours:.2f}x)")
            for cfg in configs:
                try:
                    t, e2 = _two_launches(cl, torch, rowwise, family, cx, extra, cfg, s, ref,
                                          event_times, median)
                except Exception as e:                                  # noqa: BLE001
                    errors.append(f"{family} {cols} {cfg}: {type(e).__name__}: {e}")
                    print("  ", errors[-1])
                    continue
                tag = f"stats {cfg['stats']} apply {cfg['apply']}"
                rows_out.append(dict(base, what=f"kernels {tag}", ms=t * 1e3,
                                     GBps=nbytes / t / 1e9, ratio=t_torch / t, rel_err=e2,
                                     config=json.dumps(cfg, sort_keys=True)))
                print(f"   kernels {tag}: {t * 1e3:.3f} ms ({nbytes / t / 1e9:.0f} GB/s, "
                      f"{t_torch / t:.2f}x torch)")
        del x, w, b, cx, cw, cb
        torch.cuda.empty_cache()

    slug = re.sub(r"[^A-Za-z0-9]+", "-", info.name).strip("-").lower()
    result = {"device": info.name, "arch": info.arch,
              "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
              "versions": versions(), "rows": rows_out, "errors": errors}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"rowwise-long-{slug}.json").write_text(json.dumps(result, indent=2, default=str))
    keys = sorted({k for r in rows_out for k in r})
    with open(out / f"rowwise-long-{slug}.csv", "w", newline="") as f:
        wr = csv.DictWriter(f, keys)
        wr.writeheader()
        wr.writerows(rows_out)
    print(f"wrote {out}/rowwise-long-{slug}.json and .csv")
    return 1 if errors else 0


def _two_launches(cl, torch, rowwise, family, cx, extra, cfg, s, ref, event_times, median):
    """The library's launches alone (``host.long_rows_launches``), writing preallocated tensors
    in place, one chain per run on our stream: (median seconds, relative error)."""
    from cutile_lab.kernels.host import long_rows_launches
    rows, cols = cx.shape
    plan = rowwise.long_row_plan(family, "f16", rows, cols, cl.device_info().sm_count, cfg=cfg)
    stats = [cl.empty((rows, plan.G_tile), "f32")[:, :plan.G] for _ in range(plan.n_stats)]
    out = cl.empty((rows, cols), "f16")

    def run():
        return long_rows_launches(family, plan, out, cx, extra, stats).start(s)
    torch.from_dlpack(out).fill_(float("nan"))
    run().wait()
    got = torch.from_dlpack(out).double()
    err = ((got - ref).norm() / ref.norm()).item()
    assert err < 5e-3, f"{family} {cols} {cfg}: relative error {err}"
    return median(event_times(run, s, warmup=3, repeats=20)), err


if __name__ == "__main__":
    if "--long-rows" in sys.argv[1:]:
        sys.exit(long_rows(sys.argv[1:]))
    sys.exit(main(families="rowwise", description=__doc__.split("\n")[0]))
