"""Kernel-library benchmark: each family against its PyTorch (cuBLAS, fused kernels, SDPA) and
CuPy baselines and a device-to-device copy, measured side by side in one run.

    python benchmarks/bench_kernels.py [--out DIR] [--tune] [--only gemm,rowwise,...] [--quick]

One family alone: ``bench_elementwise.py``, ``bench_rowwise.py``, ``bench_gemm.py``,
``bench_attention.py`` (the same options but ``--only``; results named after the family).

Method: bytes and flops are counted first; every configuration is checked against PyTorch on
fresh random data before it is timed; times are medians of CUDA-event pairs after warm-up. The
memory-bound inputs are far larger than L2 (50 MB); GEMM and attention run back to back, as
their baselines do, and are timed in alternating rounds with their baseline (the ratio is the
median of the rounds' ratios: under tensor-core load the clock drifts within a run). ``--tune``
sweeps tile sizes and stores the fastest configuration per device (its name and memory
bandwidth, ``tuning.device_key``; GEMM per dtype, attention per causal/non-causal)
in ``cutile_lab/kernels/tuned.json``. Writes ``benchmarks/results/kernels-<device>``
``.json``/``.csv`` and the roofline and bandwidth plots beside them.
"""
from __future__ import annotations

import argparse
import csv
import datetime as _dt
import json
import math
import re
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cutile_lab as cl                                              # noqa: E402
from benchmarks.common import (event_times, median, to_torch,  # noqa: E402
                               torch_event_times, try_import, use_gpu, versions)
from cutile_lab.kernels import elementwise, flash_attention, matmul, rowwise  # noqa: E402
from cutile_lab.kernels.library import template                     # noqa: E402
from cutile_lab.kernels.tuning import device_key, hints_text, store           # noqa: E402
from cutile_lab.performance import counting                         # noqa: E402

# The same schedules with the output written by raw stores in `unsafe` code: what safety costs.
UNSAFE_GEMM = template('''
@kernel(tile_order="grouped", group_size=8{hints})
def gemm_unsafe_{dt}(c: Mut[Tensor[{dt}, "BM, BN"]], a: Tensor[{dt}, "?, ?"],
                     b: Tensor[{dt}, "?, ?"], BK: Const[int] = 64):
    acc = full((BM, BN), 0.0, dtype=f32)
    for k in range(num_tiles(a, 1, (BM, BK))):
        ta = load_tile(a, (tile_id(0), k), (BM, BK))
        tb = load_tile(b, (k, tile_id(1)), (BK, BN))
        acc = mma(ta, tb, acc)
    with unsafe():
        store(c, (tile_id(0), tile_id(1)), acc.astype({dt}))
''')

UNSAFE_SOFTMAX = template('''
@kernel(opt_level=3{hints})
def softmax_unsafe_{dt}(out: Mut[Tensor[{dt}, "BR, BN"]], x: Tensor[{dt}, "?, ?"]):
    t = load_tile_like(x, out, padding="{pad}")
    e = exp2((t.astype(f32) - max(t, axis=1, keepdims=True).astype(f32)) * 1.4426950408889634,
             flush_to_zero=True)
    with unsafe():
        store(out, (tile_id(0), tile_id(1)),
              (e * (1.0 / sum(e, axis=1, keepdims=True))).astype({dt}))
''')


def pow2(n):
    return 1 << max(0, (n - 1).bit_length())


class Bench:
    def __init__(self, args):
        from cutile_lab.performance.peaks import lookup_device
        from cutile_lab.runtime.device import device_info, gpu
        self.args = args
        self.info = device_info()
        self.key = device_key(self.info)      # --tune stores under this device's own key
        self.peaks = lookup_device(self.info.name)
        self.g = gpu()
        self.s = self.g.new_stream()
        self.torch = try_import("torch")
        self.cupy = try_import("cupy")
        self.rows: list[dict] = []
        self.errors: list[str] = []
        self.measurements = []

    # --- timing -----------------------------------------------------------------------------
    def ours(self, run, warmup=3, repeats=20):
        """Median seconds of ``run`` (launches on our stream) from CUDA-event pairs."""
        return median(event_times(run, self.s, warmup=warmup, repeats=repeats))

    def theirs(self, run, warmup=3, repeats=20):
        """The same for a PyTorch/CuPy baseline on the current torch stream."""
        return median(torch_event_times(run, warmup=warmup, repeats=repeats))

    def paired(self, ours, theirs, rounds=5, repeats=10):
        """(our seconds, their seconds, ratio theirs/ours) from ``rounds`` alternating rounds:
        a GPU held at full tensor-core load drifts in clock (power, heat) over seconds, so a
        baseline timed once before a sweep is not the baseline of every configuration. Each
        round times both; the ratio is the median of the rounds' ratios."""
        mine, base, ratios = [], [], []
        for _ in range(rounds):
            a = self.ours(ours, repeats=repeats)
            b = self.theirs(theirs, repeats=repeats)
            mine.append(a)
            base.append(b)
            ratios.append(b / a)
        return median(mine), median(base), median(ratios)

    def record(self, family, name, seconds, count, precision, baseline=None, ratio=None,
               **extra):
        from cutile_lab.performance.measurement import Measurement
        bw = count.bytes / seconds
        flops = count.flops / seconds
        row = {"family": family, "name": name, "ms": seconds * 1e3, "tb_s": bw / 1e12,
               "tflop_s": flops / 1e12, "bytes": count.bytes, "flops": count.flops, **extra}
        if self.peaks is not None:
            row["pct_bw"] = 100 * bw / self.peaks.mem_bw
            peak = self.peaks.peak_flops(precision)
            if peak and count.flops:
                row["pct_flops"] = 100 * flops / peak
        if baseline:
            row["vs_baseline"] = ratio if ratio is not None else baseline / seconds
            row["baseline_ms"] = baseline * 1e3
        self.rows.append(row)
        self.measurements.append(Measurement(name=name, kernel=family, precision=precision,
                                             flops=count.flops, bytes=count.bytes,
                                             seconds=seconds, samples=[seconds],
                                             device=self.info.name, params=extra))
        vs = f"  x{row['vs_baseline']:.3f} vs baseline" if baseline else ""
        print(f"  {name:44s} {seconds * 1e3:9.3f} ms {row['tb_s']:7.3f} TB/s "
              f"{row['tflop_s']:8.1f} TFLOP/s{vs}")
        return row

    def poison(self, t):
        """Fill ``t`` with NaN before a kernel writes it, so that an element it misses fails the
        check. The fill runs on PyTorch's stream and the kernel on ours: wait for it."""
        t.fill_(float("nan"))
        self.torch.cuda.current_stream().synchronize()

    def guard(self, what, fn, *a):
        try:
            return fn(*a)
        except Exception as e:
            msg = f"{what}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            self.errors.append(msg)
            print("  !!", msg)
            traceback.print_exc()

    # --- families ---------------------------------------------------------------------------
    def launcher(self, kernel, out, tile, *args, **consts):
        """A re-startable launch writing ``out`` in place (a mutable borrow, not a move)."""
        def run():
            op = kernel(out.partition_mut(tile), *args, **consts)
            op.start(self.s)
            return op
        return run

    def first_run(self, what: str, kernel, out, tout, tile, *args):
        """The launcher of one swept configuration, run once on a poisoned output (to be checked
        next), or None when the configuration does not compile (said, and skipped)."""
        try:
            run = self.launcher(kernel, out, tile, *args)
            self.poison(tout)
            run()
            self.s.sync()
            return run
        except cl.CompileError as e:
            print(f"  config {what}: {e.message}")
            return None

    def elementwise(self):
        torch = self.torch
        n = 1 << 28
        print("\n[add] f32, 2^28 elements")
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        ref = x + y
        cx, cy = cl.asarray(x), cl.asarray(y)
        z = cl.empty(n, "f32")
        tz = to_torch(z)
        count = counting.count_elementwise(n, 4, n_inputs=2)
        t_torch = self.theirs(lambda: torch.add(x, y, out=ref))
        self.record("add", "torch.add", t_torch, count, "f32")
        if self.cupy is not None:
            cp = self.cupy
            ax, ay = cp.asarray(x), cp.asarray(y)
            az = cp.empty_like(ax)
            self.record("add", "cupy.add", self.theirs(lambda: cp.add(ax, ay, out=az)), count,
                        "f32")
        w = torch.empty_like(x)
        copy = counting.count_elementwise(n, 4, n_inputs=1, flops_per_elem=0)
        self.record("add", "device-to-device copy", self.theirs(lambda: w.copy_(x)), copy, "f32")
        best = None
        for B, hints in (ADD_CONFIGS[:2] if self.args.quick else ADD_CONFIGS):
            kernel = elementwise.ADD.kernel(dt="f32", hints=hints_text(hints))
            run = self.first_run(f"B={B} {hints}", kernel, z, tz, B, cx, cy)
            if run is None:
                continue
            assert torch.equal(tz, x + y), f"add B={B} {hints} is wrong"
            t = self.ours(run)
            htag = "".join(f" {k}={v}" for k, v in hints.items())
            self.record("add", f"cutile_lab add B={B}{htag}", t, count, "f32",
                        baseline=t_torch, B=B, **hints)
            if best is None or t < best[0]:
                best = (t, {"B": B, **hints})
        if self.args.tune:
            store(self.key, "add", best[1], ms=best[0] * 1e3)

    def rowwise_family(self):
        torch = self.torch
        F = torch.nn.functional
        for cols in ([8192] if self.args.quick else [1024, 8192, 32768]):
            rows = (1 << 27) // cols          # 256 MB of f16 input
            print(f"\n[row-wise] f16, {rows} x {cols}")
            x = torch.randn(rows, cols, device="cuda", dtype=torch.float16) * 2
            w = torch.randn(cols, device="cuda", dtype=torch.float16)
            b = torch.randn(cols, device="cuda", dtype=torch.float16)
            cx, cw, cb = cl.asarray(x), cl.asarray(w), cl.asarray(b)
            out = cl.empty((rows, cols), "f16")
            tout = to_torch(out)
            cases = {
                "softmax": (rowwise.SOFTMAX, (cx,), lambda: torch.softmax(x, -1), 5,
                            lambda: torch.softmax(x.float(), -1)),
                "layernorm": (rowwise.LAYERNORM, (cx, cw, cb, cols, 1e-5),
                              lambda: F.layer_norm(x, (cols,), w, b, 1e-5), 8,
                              lambda: F.layer_norm(x.float(), (cols,), w.float(), b.float(),
                                                   1e-5)),
                "rmsnorm": (rowwise.RMSNORM, (cx, cw, cols, 1e-6),
                            lambda: F.rms_norm(x, (cols,), w, 1e-6), 4,
                            lambda: F.rms_norm(x.float(), (cols,), w.float(), 1e-6)),
            }
            for family, (tmpl, args, torch_fn, flops, ref_fn) in cases.items():
                extra_bytes = cols * 2 * (len(args) - 1 if family != "softmax" else 0)
                count = counting.count_rowwise(rows, cols, 2, flops, param_bytes=extra_bytes)
                t_torch = self.theirs(torch_fn)
                self.record(family, f"torch {family} {cols}", t_torch, count, "f16", cols=cols)
                ref = ref_fn()
                best = None
                # short rows: many small tiles per SM (occupancy) beat one big tile per SM;
                # long rows: a persistent schedule (each instance loops over row blocks, so the
                # next block's load overlaps this one's arithmetic) where registers allow
                persistent = {"schedule": "persistent"}
                brs = [(32, {"num_worker_warps": 8}), (16, {"num_worker_warps": 8,
                                                             "occupancy": 2}),
                       (8, {"occupancy": 4}), (4, {"occupancy": 8})] \
                    if cols <= 1024 else ([(4, {"occupancy": 2}), (4, {"num_worker_warps": 8}),
                                           (2, {**persistent, "occupancy": 2}),
                                           (4, {**persistent, "num_worker_warps": 8})]
                                          if cols <= 8192 else
                                          [(2, {"num_worker_warps": 8}), (1, persistent),
                                           (1, {**persistent, "num_worker_warps": 8})])
                for BR, hints in brs:
                    kernel = tmpl.kernel(**rowwise.substitutions(family, "f16", cols,
                                                                 hints_text(hints)))
                    run = self.first_run(f"BR={BR} {hints}", kernel, out, tout,
                                         (BR, pow2(cols)), *args)
                    if run is None:
                        continue
                    err = (tout.float() - ref).abs().max().item()
                    assert err < 5e-2, f"{family} {cols} BR={BR}: max error {err}"
                    t = self.ours(run)
                    htag = "".join(f" {k}={v}" for k, v in hints.items())
                    self.record(family, f"cutile_lab {family} {cols} BR={BR}{htag}", t, count,
                                "f16", baseline=t_torch, cols=cols, BR=BR, max_err=err, **hints)
                    if best is None or t < best[0]:
                        best = (t, {"BR": BR, **hints})
                if self.args.tune:
                    store(self.key, family, best[1], variant=str(cols),
                          ms=best[0] * 1e3, torch_ms=t_torch * 1e3)
                if family == "softmax":
                    self.guard("safety softmax", self.safety_softmax, cx, out, tout, ref, cols,
                               best[1], count)

    def safety_softmax(self, cx, out, tout, ref, cols, cfg, count):
        BR = cfg["BR"]
        subs = rowwise.substitutions("softmax", "f16", cols, hints_text(cfg))
        safe = self.launcher(rowwise.SOFTMAX.kernel(**subs), out, (BR, pow2(cols)), cx)
        raw = self.launcher(UNSAFE_SOFTMAX.kernel(**subs), out, (BR, pow2(cols)), cx)
        self.poison(tout)
        raw()
        self.s.sync()
        assert (tout.float() - ref).abs().max().item() < 5e-2
        ts, tu = [], []
        for _ in range(3):               # interleaved, so drift hits both alike
            ts.append(self.ours(safe))
            tu.append(self.ours(raw))
        self.record("safety", f"softmax {cols} safe", median(ts), count, "f16", cols=cols)
        self.record("safety", f"softmax {cols} unsafe raw store", median(tu), count, "f16",
                    cols=cols, safe_over_unsafe=median(ts) / median(tu))

    def gemm_family(self):
        torch = self.torch
        configs = [(128, 256, 64, {"num_worker_warps": 8}),
                   (128, 256, 128, {"num_worker_warps": 8}),
                   (128, 256, 64, {"num_worker_warps": 8, "schedule": "persistent"}),
                   (256, 256, 64, {"num_worker_warps": 8, "num_ctas": 2}),
                   (256, 256, 64, {"num_worker_warps": 8, "num_ctas": 2,
                                   "schedule": "persistent"})]
        if self.args.quick:
            configs = configs[:2]
        for dt, tdt in (("f16", torch.float16), ("bf16", torch.bfloat16)):
            for n in (4096, 8192):
                print(f"\n[gemm] {dt}, M=N=K={n}")
                a = torch.randn(n, n, device="cuda", dtype=tdt)
                b = torch.randn(n, n, device="cuda", dtype=tdt)
                count = counting.count_gemm(n, n, n, 2, 2)
                t_torch = self.theirs(lambda: torch.matmul(a, b))
                self.record("gemm", f"torch.matmul (cuBLAS) {dt} {n}", t_torch, count, dt, n=n)
                ref = torch.matmul(a.float(), b.float())
                ca, cb = cl.asarray(a), cl.asarray(b)
                c = cl.empty((n, n), dt)
                tc = to_torch(c)
                best = None
                for BM, BN, BK, hints in configs:
                    kernel = matmul.GEMM.kernel(dt=dt, hints=hints_text(hints))
                    try:
                        run = self.launcher(kernel, c, (BM, BN), ca, cb, BK=BK)
                        self.poison(tc)
                        run()
                        self.s.sync()
                    except Exception as e:
                        print(f"  config {BM}x{BN}x{BK} {hints}: {type(e).__name__}: {e}")
                        continue
                    err = ((tc.float() - ref).abs().max() / ref.abs().max()).item()
                    assert err < 2e-2, f"gemm {dt} {n} {BM}x{BN}x{BK}: relative error {err}"
                    t, tb, ratio = self.paired(run, lambda: torch.matmul(a, b))
                    tag = "".join(f" {k}={v}" for k, v in hints.items())
                    self.record("gemm", f"cutile_lab gemm {dt} {n} {BM}x{BN}x{BK}{tag}", t, count,
                                dt, baseline=tb, ratio=ratio, n=n, BM=BM, BN=BN, BK=BK,
                                rel_err=err, **hints)
                    cfg = {"BM": BM, "BN": BN, "BK": BK, **hints}
                    if best is None or ratio > best[2]:
                        best = (t, cfg, ratio, tb)
                if self.args.tune and best and n == 8192:
                    store(self.key, "gemm", best[1], variant=dt, ms=best[0] * 1e3,
                          cublas_ms=best[3] * 1e3, vs_cublas=best[2])
                if best and dt == "f16" and n == 8192:
                    self.guard("safety gemm", self.safety_gemm, ca, cb, c, tc, ref, best[1],
                               count)

    def safety_gemm(self, ca, cb, c, tc, ref, cfg, count):
        BM, BN, BK, hints = cfg["BM"], cfg["BN"], cfg["BK"], hints_text(cfg)
        safe = self.launcher(matmul.GEMM.kernel(dt="f16", hints=hints), c, (BM, BN), ca, cb,
                             BK=BK)
        raw = self.launcher(UNSAFE_GEMM.kernel(dt="f16", hints=hints), c, (BM, BN), ca, cb,
                            BK=BK)
        self.poison(tc)
        raw()
        self.s.sync()
        assert ((tc.float() - ref).abs().max() / ref.abs().max()).item() < 2e-2
        ts, tu, ratios = [], [], []
        for _ in range(7):               # alternating rounds: the clock drifts under load
            ts.append(self.ours(safe))
            tu.append(self.ours(raw))
            ratios.append(ts[-1] / tu[-1])
        self.record("safety", "gemm f16 8192 safe", median(ts), count, "f16")
        self.record("safety", "gemm f16 8192 unsafe raw store", median(tu), count, "f16",
                    safe_over_unsafe=median(ratios))

    def attention_family(self):
        torch = self.torch
        F = torch.nn.functional
        B, H, S, D = 4, 32, 4096, 128
        print(f"\n[attention] f16, batch {B}, heads {H}, seq {S}, head dim {D}")
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(3))
        cq, ck, cv = (cl.asarray(t.view(B * H, S, D)) for t in (q, k, v))
        out = cl.empty((B * H, S, D), "f16")
        tout = to_torch(out).view(B, H, S, D)
        configs = [(128, 64, {"occupancy": 2}), (256, 64, {"num_worker_warps": 8}),
                   (128, 64, {})]
        if self.args.quick:
            configs = configs[:1]
        for causal in (False, True):
            flops = 4 * B * H * S * S * D * (0.5 if causal else 1.0)
            count = counting.FlopByteCount(flops, 3 * B * H * S * D * 2, B * H * S * D * 2)
            t_torch = self.theirs(lambda: F.scaled_dot_product_attention(q, k, v,
                                                                         is_causal=causal))
            tag = "causal" if causal else "non-causal"
            self.record("attention", f"torch SDPA {tag}", t_torch, count, "f16", causal=causal,
                        backend=sdpa_backend(torch, q, k, v, causal))
            fa2 = self.guard("SDPA flash backend", self.sdpa_flash, q, k, v, causal)
            if fa2 is not None:
                self.record("attention", f"torch SDPA flash backend (FlashAttention-2) {tag}",
                            fa2, count, "f16", causal=causal, backend="flash")
            ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal).float()
            best = None
            for BQ, BKV, hints in configs:
                kernel = flash_attention.ATTENTION.kernel(dt="f16", hints=hints_text(hints))
                try:
                    run = self.launcher(kernel, out, (1, BQ, D), cq, ck, cv,
                                        math.log2(math.e) / math.sqrt(D), BKV=BKV,
                                        CAUSAL=int(causal))
                    self.poison(tout)
                    run()
                    self.s.sync()
                except Exception as e:
                    print(f"  config BQ={BQ} BKV={BKV} {hints}: {type(e).__name__}: {e}")
                    continue
                err = (tout.float() - ref).abs().max().item()
                assert err < 3e-2, f"attention {tag} BQ={BQ} BKV={BKV}: max error {err}"
                t, tb, ratio = self.paired(
                    run, lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
                    rounds=3, repeats=5)
                htag = "".join(f" {k}={v}" for k, v in hints.items())
                self.record("attention", f"cutile_lab attention {tag} BQ={BQ} BKV={BKV}{htag}",
                            t, count, "f16", baseline=tb, ratio=ratio, causal=causal, BQ=BQ,
                            BKV=BKV, max_err=err, **hints)
                if best is None or ratio > best[2]:
                    best = (t, {"BQ": BQ, "BKV": BKV, **hints}, ratio, tb)
            if best and fa2 is not None:
                print(f"  best vs SDPA's FlashAttention-2 backend: {fa2 / best[0]:.3f}x")
            if self.args.tune and best:
                store(self.key, "attention", best[1], variant=tag, ms=best[0] * 1e3,
                      sdpa_ms=best[3] * 1e3, vs_sdpa=best[2])

    def sdpa_flash(self, q, k, v, causal):
        """SDPA forced onto its FlashAttention-2 backend: the default on an H100 is cuDNN's
        fused kernel, the fastest SDPA has; this is the one most tile kernels are compared to."""
        from torch.nn.attention import SDPBackend, sdpa_kernel
        F = self.torch.nn.functional
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            return self.theirs(lambda: F.scaled_dot_product_attention(q, k, v,
                                                                     is_causal=causal))


# (tile, hints) of the element-wise sweep: 8 warps on 512 elements keep one 8-byte access per
# thread like 4 warps on 256, with twice the threads in flight per instance
ADD_CONFIGS = [(256, {}), (512, {"num_worker_warps": 8}), (512, {}),
               (1024, {"num_worker_warps": 8}), (1024, {}), (2048, {}), (4096, {}),
               (2048, {"num_worker_warps": 8}), (4096, {"num_worker_warps": 8})]
# Tried and dropped (H200, 2026-11-28): a persistent schedule for the add (B=1024..4096, 4 or 8
# warps) streams 2.0-2.8 TB/s against 4.4 for one tile per instance (benchmarks/NOTES.md).


def sdpa_backend(torch, q, k, v, causal) -> str:
    """The name of the kernel SDPA runs for these inputs (from the profiler)."""
    F = torch.nn.functional
    try:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            torch.cuda.synchronize()
        names = [e.name for e in prof.events()
                 if e.device_type == torch.autograd.DeviceType.CUDA and "emset" not in e.name]
        return names[0][:80] if names else "unknown"
    except Exception as e:          # a profiler that cannot start: the table says so
        return f"unknown ({type(e).__name__})"


CONFIG_KEYS = {"add": ("B",), "softmax": ("BR",), "layernorm": ("BR",), "rmsnorm": ("BR",),
               "gemm": ("BM", "BN", "BK"), "attention": ("BQ", "BKV")}


def fastest_configurations(rows: list[dict]):
    """(family, variant, configuration, ms) of the fastest cutile_lab row per family and
    variant: the row length for row-wise kernels, the largest size for GEMM, non-causal
    attention; what ``--tune`` stores."""
    best: dict = {}
    for r in rows:
        family = r["family"]
        if family not in CONFIG_KEYS or not r["name"].startswith("cutile_lab"):
            continue
        if family == "gemm" and r.get("n") != max(x.get("n", 0) for x in rows
                                                  if x["family"] == "gemm"):
            continue
        if family == "attention" and r.get("causal"):
            continue
        variant = str(r["cols"]) if family in ("softmax", "layernorm", "rmsnorm") else "*"
        cfg = {k: r[k] for k in CONFIG_KEYS[family] if k in r}
        cfg.update({k: r[k] for k in ("occupancy", "num_ctas", "num_worker_warps", "schedule")
                    if r.get(k)})
        if (family, variant) not in best or r["ms"] < best[(family, variant)][3]:
            best[(family, variant)] = (family, variant, cfg, r["ms"])
    return list(best.values())


def rowwise_figure(rows: list[dict], peaks):
    """Achieved bandwidth of the row-wise kernels per row length, ours beside PyTorch's, under
    the datasheet bandwidth (every case moves the same 256 MB, so length is the variable)."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(10, 5.5))
    ax = fig.add_subplot()
    families = ("softmax", "layernorm", "rmsnorm")
    colls = sorted({r["cols"] for r in rows if r["family"] in families and r.get("cols")})
    width = 0.8 / (2 * len(families))
    for fi, family in enumerate(families):
        for wi, who in enumerate(("torch", "cutile_lab")):
            heights = []
            for cols in colls:
                rs = [r for r in rows if r["family"] == family and r.get("cols") == cols
                      and r["name"].startswith(who)]
                heights.append(max((r["tb_s"] for r in rs), default=0))
            xs = [i + (2 * fi + wi - len(families) + 0.5) * width for i in range(len(colls))]
            ax.bar(xs, heights, width, label=f"{who} {family}",
                   color=f"C{fi}", alpha=0.45 if who == "torch" else 1.0)
    if peaks is not None:
        ax.axhline(peaks.mem_bw / 1e12, color="black", lw=1.5,
                   label=f"datasheet {peaks.mem_bw / 1e12:.2f} TB/s")
    ax.set_xticks(range(len(colls)), [f"{c} columns" for c in colls])
    ax.set_ylabel("achieved bandwidth (TB/s)")
    ax.set_title("Row-wise f16 kernels, 256 MB per launch: PyTorch (pale) and cutile_lab")
    ax.legend(fontsize=8, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.1))
    fig.subplots_adjust(bottom=0.25)
    ax.grid(axis="y", alpha=0.3)
    return fig


def plot(rows: list[dict], peaks, folder: Path, stem: str, errors: list) -> None:
    """Roofline of the fastest configuration per (family, size, variant) and of each baseline;
    achieved bandwidth of the memory-bound families."""
    from cutile_lab.performance.measurement import Measurement
    from cutile_lab.performance.roofline import roofline_figure
    best: dict = {}
    for r in rows:
        if r["family"] == "safety" or not r["name"].startswith(("cutile_lab", "torch", "cupy")):
            continue
        who = r["name"].split()[0]
        dtype = next((t for t in ("bf16", "f16", "f32") if f" {t} " in f" {r['name']} "), "f16")
        key = (r["family"], who, dtype, r.get("n"), r.get("cols"), r.get("causal"))
        if key not in best or r["ms"] < best[key]["ms"]:
            best[key] = r
    ms = []
    for (family, who, dtype, n, cols, causal), r in sorted(best.items(), key=str):
        size = n or cols or ""
        label = f"{who} {family} {dtype if family == 'gemm' else ''} {size}"
        if causal is not None:
            label += " causal" if causal else ""
        precision = "f32" if family == "add" else dtype
        ms.append(Measurement(name=" ".join(label.split()), kernel=family, precision=precision,
                              flops=r["flops"], bytes=r["bytes"], seconds=r["ms"] / 1e3,
                              samples=[r["ms"] / 1e3], device="", params={}))
    shown = [m for m in ms if m.flops and m.kernel in ("gemm", "attention")] + \
        [m for m in ms if m.kernel in ("softmax", "add") and m.flops]
    try:
        # each figure only where the run measured what it shows (a run of one family)
        if shown:
            roofline_figure(shown, peaks, max_labels=14).savefig(
                folder / f"{stem}-roofline.png", dpi=110)
        if any(r["family"] in ("softmax", "layernorm", "rmsnorm") for r in rows):
            rowwise_figure(rows, peaks).savefig(folder / f"{stem}-bandwidth.png", dpi=110)
    except Exception as e:
        errors.append(f"plots: {type(e).__name__}: {e}")


def write(bench: Bench, out: str | None, name: str = "kernels"):
    """``results/<name>-<device>.json``/``.csv`` and the plots (and the same under ``out``): a run
    of some families only (``--only``) is named after them, so that it never replaces the
    results of a run of all of them."""
    info = bench.info
    result = {"device": info.name, "arch": info.arch, "tuning_key": bench.key,
              "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
              "versions": versions(), "rows": bench.rows, "errors": bench.errors}
    slug = re.sub(r"[^A-Za-z0-9]+", "-", info.name).strip("-").lower()
    dirs = [Path(__file__).resolve().parent / "results"] + ([Path(out)] if out else [])
    keys = sorted({k for r in bench.rows for k in r}, key=lambda k: (k not in ("family", "name"), k))
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{name}-{slug}.json").write_text(json.dumps(result, indent=2, default=str))
        with open(d / f"{name}-{slug}.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["device", "date"] + keys)
            w.writeheader()
            for r in bench.rows:
                w.writerow({"device": info.name, "date": result["date"], **r})
        plot(bench.rows, bench.peaks, d, f"{name}-{slug}", bench.errors)
    print(f"\nwrote {dirs[0]}/{name}-{slug}.json, .csv and plots")


FAMILIES = ("add", "rowwise", "gemm", "attention")


def main(argv=None, *, families: str | None = None, description: str | None = None) -> int:
    """The command line; ``families`` fixes ``--only`` (the per-family scripts)."""
    ap = argparse.ArgumentParser(description=description or __doc__.split("\n")[0])
    ap.add_argument("--out")
    ap.add_argument("--tune", action="store_true", help="store the fastest configurations")
    if families is None:
        ap.add_argument("--only", help="comma list of: " + ",".join(FAMILIES))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--replot", metavar="JSON", help="only redraw the plots of a results file")
    ap.add_argument("--tune-from", metavar="JSON",
                    help="store the fastest configurations of a results file (no GPU needed)")
    args = ap.parse_args(argv)
    if families is not None:
        args.only = families
    chosen = args.only.split(",") if args.only else list(FAMILIES)
    unknown = [c for c in chosen if c not in FAMILIES]
    if unknown:
        ap.error(f"unknown famil{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)}: "
                 f"choose from {', '.join(FAMILIES)}")
    if args.tune_from:
        data = json.loads(Path(args.tune_from).read_text())
        for family, variant, cfg, ms in fastest_configurations(data["rows"]):
            store(data.get("tuning_key", data["arch"]), family, cfg, variant=variant, ms=ms)
        print(f"stored the fastest configurations of {args.tune_from}")
        return 0
    if args.replot:
        from cutile_lab.performance.peaks import lookup_device
        path = Path(args.replot)
        data = json.loads(path.read_text())
        errors: list = []
        plot(data["rows"], lookup_device(data["device"]), path.parent, path.stem, errors)
        print(*errors or ["plots written"], sep="\n")
        return 1 if errors else 0
    problem = use_gpu()
    if problem:
        print(problem)
        return 2
    bench = Bench(args)
    if bench.torch is None:
        print("PyTorch is needed for the baselines")
        return 1
    print(f"device: {bench.info}")
    runs = {"add": bench.elementwise, "rowwise": bench.rowwise_family,
            "gemm": bench.gemm_family, "attention": bench.attention_family}
    for name in chosen:
        bench.guard(name, runs[name])
    write(bench, args.out, "kernels" if not args.only else "kernels-" + "-".join(chosen))
    if bench.errors:
        print("errors:", *bench.errors, sep="\n  ")
    return 1 if bench.errors else 0


if __name__ == "__main__":
    sys.exit(main())
