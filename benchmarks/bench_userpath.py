"""The library measured the way users call it, beside the kernel alone, against PyTorch.

    python benchmarks/bench_userpath.py [--out DIR] [--only add,rowwise,gemm,attention,tiny]
                                        [--quick] [--profile]

For every family two ratios (PyTorch's time over ours: higher is better), each measured in one
run against its baseline:

- **user path**: the call built per call and waited for — ``K.add(x, y).sync()`` — against the
  PyTorch call of the same work followed by ``torch.cuda.synchronize()``; host wall time per
  call, ``n`` calls per round, ours and theirs in alternating rounds, the ratio the median of the
  rounds' ratios (the clock drifts within a run). Output allocation, configuration lookup,
  argument checks, launch and the host wait are all in it, as they are for the user.
- **kernel only**: the same kernel with the same tuned configuration, pre-built, writing a
  pre-allocated output (``partition_mut``), timed with CUDA events, against the PyTorch call
  timed with events; alternating rounds likewise.

Inputs are the lab's own tensors (``cl.empty``, filled on the GPU) and PyTorch views of the same memory
(zero-copy), so both sides read the same data; every family is checked against PyTorch first.
The tiny cases (1024 elements) measure what a call costs on the host: a user's own kernel
(``add(z.partition_mut(128), x, y).sync()``) and a library call (``K.add``, ``K.softmax``).
``--profile`` adds a cProfile of the tiny library call (the top functions by own time).

Writes ``results/userpath-<device>.json`` / ``.csv`` (device, date, versions, every row) and
prints a table.
"""
from __future__ import annotations

import argparse
import cProfile
import csv
import datetime as _dt
import io
import json
import math
import pstats
import re
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cutile_lab as cl                                                   # noqa: E402
from benchmarks.common import (event_times, median, to_torch, torch_event_times,  # noqa: E402
                               try_import, use_gpu, versions)
from cutile_lab.lang import *                                             # noqa: E402,F401,F403

FAMILIES = ("tiny", "add", "rowwise", "gemm", "attention", "attention_variants")

# attention schedules and tiles not tried before (benchmarks/NOTES.md lists what was), each
# timed by events against SDPA in the same run as the tuned configuration
ATTENTION_VARIANTS = [
    (256, 64, {"num_worker_warps": 8, "schedule": "persistent"}),
    (256, 128, {"num_worker_warps": 8}),
    (256, 32, {"num_worker_warps": 8}),
]


@cl.kernel
def user_add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


def randn(shape, dtype="f32"):
    """A tensor of the lab's own memory (``cl.empty``) filled with normal random numbers by
    PyTorch on the GPU (generating 2^28 numbers on the host would take seconds)."""
    t = cl.empty(shape, dtype)
    to_torch(t).normal_()
    return t


def wall_per_call(fn, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


class UserPath:
    def __init__(self, args):
        import torch
        from cutile_lab.runtime.device import device_info, gpu
        self.args = args
        self.torch = torch
        self.info = device_info()
        self.g = gpu()
        self.s = self.g.new_stream()
        self.rows: list[dict] = []
        self.errors: list[str] = []
        self.profile = None

    # --- measuring ----------------------------------------------------------------------------
    def user_ratio(self, ours, theirs, n: int, rounds: int):
        """(our seconds per call, theirs, ratio theirs/ours): alternating rounds of ``n`` calls,
        each call waited for (ours by ``.sync()`` inside ``ours``, theirs followed by
        ``torch.cuda.synchronize()``)."""
        sync = self.torch.cuda.synchronize

        def theirs_synced():
            theirs()
            sync()
        for _ in range(max(2, n // 4)):          # warm-up: compile, load, pools
            ours()
            theirs_synced()
        a, b, r = [], [], []
        for _ in range(rounds):
            ta = wall_per_call(ours, n)
            tb = wall_per_call(theirs_synced, n)
            a.append(ta)
            b.append(tb)
            r.append(tb / ta)
        return median(a), median(b), median(r)

    def kernel_ratio(self, run, theirs, rounds: int = 5, repeats: int = 10):
        """(ours, theirs, ratio) by CUDA events, alternating rounds."""
        a, b, r = [], [], []
        for _ in range(rounds):
            ta = median(event_times(run, self.s, warmup=2, repeats=repeats))
            tb = median(torch_event_times(theirs, warmup=2, repeats=repeats))
            a.append(ta)
            b.append(tb)
            r.append(tb / ta)
        return median(a), median(b), median(r)

    def record(self, family, case, user=None, kernel=None, **extra):
        row = {"family": family, "case": case, **extra}
        if user is not None:
            row.update(user_us=user[0] * 1e6, torch_user_us=user[1] * 1e6, user_ratio=user[2])
        if kernel is not None:
            row.update(kernel_us=kernel[0] * 1e6, torch_kernel_us=kernel[1] * 1e6,
                       kernel_ratio=kernel[2])
        self.rows.append(row)
        u = f"user {row['user_ratio']:.3f}x ({row['user_us']:.1f} vs {row['torch_user_us']:.1f} us)" \
            if user else ""
        k = f"kernel {row['kernel_ratio']:.3f}x" if kernel else ""
        print(f"  {family:10s} {case:34s} {u:40s} {k}", flush=True)

    def guard(self, what, fn, *a):
        try:
            return fn(*a)
        except Exception as e:
            msg = f"{what}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            self.errors.append(msg)
            print("  !!", msg, flush=True)
            traceback.print_exc()

    def prebuilt(self, family, template_kernel, out, tile, *args, **consts):
        """A pre-built, re-startable launch of the library's kernel writing ``out`` in place."""
        s = self.s

        def run():
            template_kernel(out.partition_mut(tile), *args, **consts).start(s)
        return run

    # --- families -----------------------------------------------------------------------------
    def tiny(self):
        import cutile_lab.kernels as K
        torch = self.torch
        n = 1024
        x, y = randn(n), randn(n)
        z = cl.zeros(n).sync()
        tx, ty = to_torch(x), to_torch(y)
        user_add(z.partition_mut(128), x, y).sync()
        assert torch.allclose(to_torch(z), tx + ty)
        reps, rounds = (300, 5) if self.args.quick else (1000, 7)
        self.record("tiny", "user kernel add 1024 (launch+sync)",
                    user=self.user_ratio(lambda: user_add(z.partition_mut(128), x, y).sync(),
                                         lambda: torch.add(tx, ty), reps, rounds), n=n)
        out = K.add(x, y).sync()
        assert torch.allclose(to_torch(out), tx + ty)
        self.record("tiny", "K.add 1024", n=n,
                    user=self.user_ratio(lambda: K.add(x, y).sync(), lambda: torch.add(tx, ty),
                                         reps, rounds))
        xs = randn((8, 1024), "f16")
        txs = to_torch(xs)
        assert torch.allclose(to_torch(K.softmax(xs).sync()).float(),
                              torch.softmax(txs.float(), -1), atol=5e-3)
        self.record("tiny", "K.softmax 8x1024", rows=8, cols=1024,
                    user=self.user_ratio(lambda: K.softmax(xs).sync(),
                                         lambda: torch.softmax(txs, -1), reps, rounds))
        if self.args.profile:
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(2000):
                K.add(x, y).sync()
            pr.disable()
            text = io.StringIO()
            pstats.Stats(pr, stream=text).sort_stats("tottime").print_stats(30)
            self.profile = text.getvalue()
            print(self.profile[:6000])

    def add(self):
        import cutile_lab.kernels as K
        from cutile_lab.kernels import elementwise
        from cutile_lab.kernels.host import _arch
        from cutile_lab.kernels.tuning import config, hints_text
        torch = self.torch
        n = 1 << 28
        x, y = randn(n), randn(n)
        tx, ty = to_torch(x), to_torch(y)
        out = K.add(x, y).sync()
        assert torch.equal(to_torch(out), tx + ty)
        del out
        user = self.user_ratio(lambda: K.add(x, y).sync(), lambda: torch.add(tx, ty), 10,
                               3 if self.args.quick else 5)
        cfg = config("add", _arch())
        z = cl.empty(n, "f32")
        tz = torch.empty_like(tx)
        run = self.prebuilt("add", elementwise.ADD.kernel(dt="f32", hints=hints_text(cfg)),
                            z, cfg["B"], x, y)
        kern = self.kernel_ratio(run, lambda: torch.add(tx, ty, out=tz))
        self.record("add", "K.add f32 2^28", user=user, kernel=kern, n=n, **cfg)

    def rowwise(self):
        import cutile_lab.kernels as K
        from cutile_lab.kernels import rowwise
        from cutile_lab.kernels.host import _arch
        from cutile_lab.kernels.tuning import config, hints_text
        torch = self.torch
        F = torch.nn.functional
        for cols in ([8192] if self.args.quick else [1024, 8192, 32768]):
            rows = (1 << 27) // cols
            x = randn((rows, cols), "f16")
            w, b = randn(cols, "f16"), randn(cols, "f16")
            tx, tw, tb = to_torch(x), to_torch(w), to_torch(b)
            cases = {
                "softmax": (lambda: K.softmax(x), lambda: torch.softmax(tx, -1), (x,),
                            lambda: torch.softmax(tx.float(), -1)),
                "layernorm": (lambda: K.layernorm(x, w, b, 1e-5),
                              lambda: F.layer_norm(tx, (cols,), tw, tb, 1e-5),
                              (x, w, b, cols, 1e-5),
                              lambda: F.layer_norm(tx.float(), (cols,), tw.float(), tb.float(),
                                                   1e-5)),
                "rmsnorm": (lambda: K.rmsnorm(x, w, 1e-6),
                            lambda: F.rms_norm(tx, (cols,), tw, 1e-6), (x, w, cols, 1e-6),
                            lambda: F.rms_norm(tx.float(), (cols,), tw.float(), 1e-6)),
            }
            templates = {"softmax": rowwise.SOFTMAX, "layernorm": rowwise.LAYERNORM,
                         "rmsnorm": rowwise.RMSNORM}
            for family, (ours, theirs, args, ref_fn) in cases.items():
                err = (to_torch(ours().sync()).float() - ref_fn()).abs().max().item()
                assert err < 5e-2, f"{family} {cols}: max error {err}"
                user = self.user_ratio(lambda: ours().sync(), theirs, 10,
                                       3 if self.args.quick else 5)
                cfg = config(family, _arch(), variant=str(cols))
                kernel = templates[family].kernel(**rowwise.substitutions(
                    family, "f16", cols, hints_text(cfg)))
                out = cl.empty((rows, cols), "f16")
                tile = (cfg["BR"], 1 << max(0, (cols - 1).bit_length()))
                kern = self.kernel_ratio(self.prebuilt(family, kernel, out, tile, *args), theirs)
                self.record(family, f"K.{family} f16 {rows}x{cols}", user=user, kernel=kern,
                            rows=rows, cols=cols, max_err=err, **cfg)

    def gemm(self):
        import cutile_lab.kernels as K
        from cutile_lab.kernels import matmul
        from cutile_lab.kernels.host import _arch
        from cutile_lab.kernels.tuning import config, hints_text
        torch = self.torch
        for dt in ("f16", "bf16"):
            for n in ((4096,) if self.args.quick else (4096, 8192)):
                a, b = randn((n, n), dt), randn((n, n), dt)
                ta, tb = to_torch(a), to_torch(b)
                c = K.gemm(a, b).sync()
                ref = torch.matmul(ta.float(), tb.float())
                rel = ((to_torch(c).float() - ref).norm() / ref.norm()).item()
                assert rel < 1e-2, f"gemm {dt} {n}: relative error {rel}"
                del c
                reps = 20 if n == 4096 else 8
                user = self.user_ratio(lambda: K.gemm(a, b).sync(), lambda: torch.matmul(ta, tb),
                                       reps, 3 if self.args.quick else 5)
                cfg = config("gemm", _arch(), variant=dt)
                kernel = matmul.GEMM.kernel(dt=dt, hints=hints_text(cfg))
                out = cl.empty((n, n), dt)
                tc = torch.empty_like(ta)
                kern = self.kernel_ratio(
                    self.prebuilt("gemm", kernel, out, (cfg["BM"], cfg["BN"]), a, b,
                                  BK=cfg["BK"]),
                    lambda: torch.matmul(ta, tb, out=tc))
                self.record("gemm", f"K.gemm {dt} {n}^3", user=user, kernel=kern, n=n,
                            rel_err=rel, **cfg)

    def attention(self):
        import cutile_lab.kernels as K
        from cutile_lab.kernels import flash_attention
        from cutile_lab.kernels.host import _arch
        from cutile_lab.kernels.tuning import config, hints_text
        torch = self.torch
        B, H, S, D = 4, 32, 4096, 128
        q, k, v = (randn((B * H, S, D), "f16") for _ in range(3))
        tq, tk, tv = (to_torch(t).view(B, H, S, D) for t in (q, k, v))
        sdpa = torch.nn.functional.scaled_dot_product_attention
        for causal in (False, True):
            tag = "causal" if causal else "non-causal"
            out = K.attention(q, k, v, causal=causal).sync()
            ref = sdpa(tq, tk, tv, is_causal=causal).view(B * H, S, D)
            rel = ((to_torch(out).float() - ref.float()).norm() / ref.float().norm()).item()
            assert rel < 1e-2, f"attention {tag}: relative error {rel}"
            del out
            user = self.user_ratio(lambda: K.attention(q, k, v, causal=causal).sync(),
                                   lambda: sdpa(tq, tk, tv, is_causal=causal), 5,
                                   3 if self.args.quick else 5)
            cfg = config("attention", _arch(), variant=tag)
            kernel = flash_attention.ATTENTION.kernel(dt="f16", hints=hints_text(cfg))
            o = cl.empty((B * H, S, D), "f16")
            scale = 1.0 / math.sqrt(D) * math.log2(math.e)
            kern = self.kernel_ratio(
                self.prebuilt("attention", kernel, o, (1, cfg["BQ"], D), q, k, v, scale,
                              BKV=cfg["BKV"], CAUSAL=int(causal)),
                lambda: sdpa(tq, tk, tv, is_causal=causal), rounds=3, repeats=5)
            self.record("attention", f"K.attention f16 {tag}", user=user, kernel=kern,
                        shape=[B, H, S, D], rel_err=rel, **cfg)

    def attention_variants(self):
        """Kernel-only ratios against SDPA of the tuned attention and of ``ATTENTION_VARIANTS``,
        non-causal, each checked against SDPA first."""
        from cutile_lab.kernels import flash_attention
        from cutile_lab.kernels.host import _arch
        from cutile_lab.kernels.tuning import config, hints_text
        torch = self.torch
        B, H, S, D = 4, 32, 4096, 128
        q, k, v = (randn((B * H, S, D), "f16") for _ in range(3))
        tq, tk, tv = (to_torch(t).view(B, H, S, D) for t in (q, k, v))
        sdpa = torch.nn.functional.scaled_dot_product_attention
        ref = sdpa(tq, tk, tv).view(B * H, S, D).float()
        o = cl.empty((B * H, S, D), "f16")
        to = to_torch(o)
        scale = 1.0 / math.sqrt(D) * math.log2(math.e)
        tuned = config("attention", _arch(), variant="non-causal")
        for BQ, BKV, hints in [(tuned["BQ"], tuned["BKV"],
                                {h: tuned[h] for h in tuned if h not in ("BQ", "BKV")})] \
                + ATTENTION_VARIANTS:
            tag = f"BQ={BQ} BKV={BKV} " + " ".join(f"{h}={x}" for h, x in hints.items())
            try:
                kernel = flash_attention.ATTENTION.kernel(dt="f16", hints=hints_text(hints))
                run = self.prebuilt("attention", kernel, o, (1, BQ, D), q, k, v, scale, BKV=BKV,
                                    CAUSAL=0)
                to.fill_(float("nan"))
                torch.cuda.synchronize()
                run()
                self.s.sync()
            except Exception as e:
                self.record("attention variant", tag, error=f"{type(e).__name__}: {e}"[:300])
                continue
            rel = ((to.float() - ref).norm() / ref.norm()).item()
            if not rel < 1e-2:
                self.record("attention variant", tag, error=f"relative error {rel}")
                continue
            kern = self.kernel_ratio(run, lambda: sdpa(tq, tk, tv), rounds=3, repeats=5)
            self.record("attention variant", tag, kernel=kern, rel_err=rel, BQ=BQ, BKV=BKV, **hints)


def write(bench: UserPath, out: str | None, label: str | None) -> Path:
    info = bench.info
    from cutile_lab.runtime.device import gpu
    result = {"device": info.name, "arch": info.arch,
              "theoretical_bandwidth_tb_s": info.theoretical_bandwidth / 1e12,
              "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
              "versions": versions(), "label": label,
              "pool_release_threshold": getattr(gpu(), "pool_release_threshold", None),
              "rows": bench.rows, "errors": bench.errors, "profile": bench.profile}
    try:
        from cutile_lab.kernels.tuning import device_key
        result["tuning_key"] = device_key(info)
    except ImportError:
        pass
    slug = re.sub(r"[^A-Za-z0-9]+", "-", info.name).strip("-").lower()
    stem = f"userpath-{slug}" + (f"-{label}" if label else "")
    dirs = [Path(__file__).resolve().parent / "results"] + ([Path(out)] if out else [])
    keys = sorted({k for r in bench.rows for k in r},
                  key=lambda k: (k not in ("family", "case"), k))
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{stem}.json").write_text(json.dumps(result, indent=2, default=str))
        with open(d / f"{stem}.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["device", "date"] + keys)
            w.writeheader()
            for r in bench.rows:
                w.writerow({"device": info.name, "date": result["date"],
                            **{k: (json.dumps(v) if isinstance(v, list) else v)
                               for k, v in r.items()}})
    return dirs[-1] / f"{stem}.json"


def markdown_table(rows: list[dict]) -> str:
    """The README's table of a run: per case the user-path and the kernel-only ratio."""
    lines = ["| call | user path (call + `.sync()`) | kernel only (events) |",
             "| --- | --- | --- |"]
    for r in rows:
        u = (f"{r['user_ratio']:.2f}x ({r['user_us']:.0f} µs against {r['torch_user_us']:.0f})"
             if "user_ratio" in r else "-")
        k = f"{r['kernel_ratio']:.2f}x" if "kernel_ratio" in r else "-"
        lines.append(f"| `{r['case']}` | {u} | {k} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out")
    ap.add_argument("--only", help="comma list of: " + ",".join(FAMILIES))
    ap.add_argument("--quick", action="store_true", help="fewer sizes and rounds")
    ap.add_argument("--profile", action="store_true", help="cProfile the tiny library call")
    ap.add_argument("--label", help="suffix of the results files (e.g. 'before')")
    ap.add_argument("--table", metavar="JSON", help="only print the markdown table of a results "
                                                    "file (no GPU needed)")
    args = ap.parse_args(argv)
    if args.table:
        data = json.loads(Path(args.table).read_text())
        print(f"{data['device']}, {data['date'][:10]}\n")
        print(markdown_table(data["rows"]))
        return 0
    chosen = args.only.split(",") if args.only else list(FAMILIES)
    unknown = [c for c in chosen if c not in FAMILIES]
    if unknown:
        ap.error(f"unknown families {', '.join(unknown)}: choose from {', '.join(FAMILIES)}")
    problem = use_gpu()
    if problem:
        print(problem)
        return 2
    if try_import("torch") is None:
        print("PyTorch is needed for the baselines")
        return 1
    bench = UserPath(args)
    print(f"device: {bench.info}")
    for family in chosen:
        bench.guard(family, getattr(bench, family))
        path = write(bench, args.out, args.label)     # after each family: a cut-off run keeps
                                                       # what it measured
    print(f"\nwrote {path}")
    print(f"\n{'case':40s} {'user path':>10s} {'kernel only':>12s}")
    for r in bench.rows:
        u = f"{r['user_ratio']:.2f}x" if "user_ratio" in r else "-"
        k = f"{r['kernel_ratio']:.2f}x" if "kernel_ratio" in r else "-"
        print(f"{r['case']:40s} {u:>10s} {k:>12s}")
    print(*bench.errors, sep="\n")
    return 1 if bench.errors else 0


if __name__ == "__main__":
    sys.exit(main())
