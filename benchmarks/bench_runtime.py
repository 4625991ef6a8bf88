"""Runtime benchmark: element-wise bandwidth and host launch overhead, side by side in one run.

    python benchmarks/bench_runtime.py [--out DIR] [--n-log2 28] [--quick]

Measures, on the GPU in use:

1. ``z = x + y`` (f32, 2**28 elements) with this runtime (a few tile sizes), ``torch.add``,
   CuPy, a raw ``cuda.tile.launch`` of the same kernel, and a device-to-device copy: median
   kernel time from CUDA events after warm-up, bandwidth in TB/s and as a share of the datasheet
   (H100 SXM: 3.35 TB/s). Bytes are counted first (reads + writes), results are checked on fresh
   random data.
2. Host overhead per launch of a tiny kernel (one 1024-element tile): this runtime's ``sync()``
   launch (a full round trip), its async launch (``start`` on one stream, enqueue cost only,
   with and without building the op each time), a CUDA-graph replay per kernel, a raw
   ``cuda.core.launch`` of the same cubin, a raw ``cuda.tile.launch`` and PyTorch's tiny add.
3. The cost of the launch-level checks: per cached launch, and ``check_launch`` uncached.

Writes ``benchmarks/results/runtime-<device>.json`` and ``.csv`` (and copies to ``--out``).
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cutile_lab as cl                                   # noqa: E402
from benchmarks.common import (event_times, host_per_call, median, to_torch,  # noqa: E402
                               torch_event_times, try_import as _try_import, use_gpu,
                               versions as _versions)
from cutile_lab.lang import *                             # noqa: E402,F401,F403

H100_SXM_BW = 3.35e12


@cl.kernel
def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


def _ct_add(**hints):
    """The plain cuTile add (compiled with ``hints``, e.g. ``num_worker_warps=8``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _ct_kernels import ct_add, ct_add_with
    return ct_add_with(**hints) if hints else ct_add


# --- the benchmark ---------------------------------------------------------------------------------

class Bench:
    def __init__(self, n_log2: int, quick: bool):
        self.n = 1 << n_log2
        self.quick = quick
        self.rows: list[dict] = []
        self.errors: list[str] = []
        self.notes: list[str] = []

    def row(self, section, name, **fields):
        r = {"section": section, "name": name, **fields}
        self.rows.append(r)
        return r

    def guard(self, what, fn):
        try:
            fn()
        except Exception as e:  # one failing part must not lose the others
            msg = f"{what}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            self.errors.append(msg)
            print("  !!", msg)
            traceback.print_exc()

    # 1. bandwidth ------------------------------------------------------------------------------
    def bandwidth(self):
        from cutile_lab.performance.counting import count_elementwise
        from cutile_lab.performance.peaks import lookup_device
        from cutile_lab.runtime.device import gpu
        g = gpu()
        info = g.info
        peaks = lookup_device(info.name)
        self.datasheet_bw = peaks.mem_bw if peaks is not None else None
        n = self.n
        add_count = count_elementwise(n, 4, n_inputs=2)          # 12 bytes/element, 1 flop
        copy_count = count_elementwise(n, 4, n_inputs=1, flops_per_elem=0)
        self.notes.append(f"add: {add_count.bytes / 1e9:.3f} GB moved per run "
                          f"({n} f32 elements, 2 reads + 1 write); copy: "
                          f"{copy_count.bytes / 1e9:.3f} GB")
        s = g.new_stream()
        x = cl.randn(n).sync()
        y = cl.randn(n).sync()
        z = cl.zeros(n).sync()
        torch = _try_import("torch")
        ref = None
        if torch is not None:
            tx = to_torch(x)
            ty = to_torch(y)
            ref = tx + ty
        else:
            self.notes.append("torch missing: the add is checked on a sample")

        def record(name, secs, count, **extra):
            t = median(secs)
            bw = count.bytes / t
            r = self.row("bandwidth", name, seconds=t, bytes=count.bytes,
                         tb_per_s=bw / 1e12, pct_h100_sxm=100 * bw / H100_SXM_BW,
                         pct_datasheet=(100 * bw / self.datasheet_bw)
                         if self.datasheet_bw else None, samples=len(secs), **extra)
            ref_bw = self.datasheet_bw or H100_SXM_BW
            print(f"  {name:34s} {t * 1e3:8.3f} ms  {bw / 1e12:6.3f} TB/s  "
                  f"{100 * bw / ref_bw:5.1f}% of {ref_bw / 1e12:.2f} TB/s (datasheet)")

        from benchmarks.bench_kernels import ADD_CONFIGS
        from cutile_lab.kernels import elementwise
        from cutile_lab.kernels.tuning import hints_text
        best = None
        for B, hints in (ADD_CONFIGS[:2] if self.quick else ADD_CONFIGS):
            kernel = elementwise.ADD.kernel(dt="f32", hints=hints_text(hints))

            def one(B=B, kernel=kernel):
                op = kernel(z.partition_mut(B), x, y)
                op.start(s)
                return op
            op = one()
            s.sync()
            if ref is not None:
                ok = bool(torch.equal(to_torch(z), ref))
            else:
                idx = np.random.default_rng().integers(0, n, 4096)
                ok = bool(np.array_equal(z.to_numpy()[idx], (x.to_numpy() + y.to_numpy())[idx]))
            secs = event_times(lambda: one(), s)
            regs = (op.compiled.resources or {}).get("registers") if op.compiled else None
            htag = "".join(f" {k}={v}" for k, v in hints.items())
            record(f"cutile_lab add B={B}{htag}", secs, add_count, tile=B, correct=ok,
                   registers=regs, threads=op.compiled.max_threads_per_block, **hints)
            if best is None or median(secs) < best[2]:
                best = (B, hints, median(secs))
        self.best_tile, self.best_hints = best[0], best[1]
        self.row("bandwidth", "cutile_lab add (best tile)", tile=best[0], seconds=best[2],
                 tb_per_s=add_count.bytes / best[2] / 1e12,
                 pct_h100_sxm=100 * add_count.bytes / best[2] / H100_SXM_BW, **best[1])

        # device-to-device copy of the same bytes per element read (the copy ceiling)
        from cutile_lab.runtime.memory import copy as dcopy
        w = cl.empty(n)
        secs = event_times(lambda: dcopy(w.ptr, x.ptr, n * 4, s), s)
        record("device-to-device copy (cuMemcpyAsync)", secs, copy_count)

        if torch is not None:
            tz = torch.empty_like(tx)
            secs = torch_event_times(lambda: torch.add(tx, ty, out=tz))
            record("torch.add", secs, add_count, correct=bool(torch.equal(tz, ref)))
        cp = _try_import("cupy")
        if cp is not None:
            cx, cy = cp.asarray(x), cp.asarray(y)
            cz = cp.empty_like(cx)
            cs = cp.cuda.Stream(non_blocking=True)

            def cupy_add():
                with cs:
                    cp.add(cx, cy, out=cz)
            cupy_add()
            cs.synchronize()
            from cuda.core import Stream as CoreStream
            core_cs = CoreStream.from_handle(cs.ptr)
            secs = event_times(cupy_add, core_cs)
            ok = bool(cp.array_equal(cz, cp.asarray(z))) if ref is not None else None
            record("cupy.add", secs, add_count, correct=ok)
        else:
            self.notes.append("cupy not installed: no CuPy row")
        self.guard("raw cuda.tile.launch (bandwidth)", lambda: self._raw_ct_bandwidth(
            x, y, n, add_count, record, torch))

    def _raw_ct_bandwidth(self, x, y, n, count, record, torch):
        import cuda.tile as ct
        if torch is None:
            raise RuntimeError("cuda.tile.launch needs torch (or CuPy) arrays and stream")
        ct_add = _ct_add(**self.best_hints)          # the same hints as our best
        B = self.best_tile
        tx, ty = to_torch(x), to_torch(y)
        tz = torch.empty_like(tx)
        grid = (-(-n // B), 1, 1)
        ct.launch(torch.cuda.current_stream(), grid, ct_add, (tz, tx, ty, B))
        torch.cuda.synchronize()
        ok = bool(torch.equal(tz, tx + ty))
        secs = torch_event_times(
            lambda: ct.launch(torch.cuda.current_stream(), grid, ct_add, (tz, tx, ty, B)))
        htag = "".join(f" {k}={v}" for k, v in self.best_hints.items())
        record(f"raw cuda.tile.launch B={B}{htag}", secs, count, tile=B, correct=ok)

    # 2. host overhead ---------------------------------------------------------------------------
    def overhead(self):
        from cutile_lab.runtime.device import gpu
        importlib_launch = sys.modules.get("cutile_lab.runtime.launch")
        if importlib_launch is None:
            import importlib
            importlib_launch = importlib.import_module("cutile_lab.runtime.launch")
        L = importlib_launch
        from cutile_lab.runtime import driver as D
        g = gpu()
        s = g.new_stream()
        N = 1024
        x = cl.randn(N).sync()
        y = cl.randn(N).sync()
        z = cl.zeros(N).sync()
        p = z.partition_mut(N)
        op = add(p, x, y)
        op.sync()
        assert np.array_equal(z.to_numpy(), x.to_numpy() + y.to_numpy())
        n_iter = 500 if self.quick else 2000

        def rec(name, secs_per_call, **extra):
            self.row("overhead", name, us_per_launch=secs_per_call * 1e6, **extra)
            print(f"  {name:44s} {secs_per_call * 1e6:8.2f} us")

        # sync: a full round trip per launch
        rec("cutile_lab sync launch (op.sync())",
            host_per_call(op.sync, s.sync, n=max(200, n_iter // 4)), kind="round trip")
        # async: enqueue only, on one stream (stream order makes repeated writers legal)
        rec("cutile_lab async launch (op.start(s))", host_per_call(lambda: op.start(s), s.sync,
                                                                   n=n_iter), kind="enqueue")
        L.STATS["check_s"] = 0.0
        L.STATS["checks"] = 0
        L.MEASURE[0] = True
        host_per_call(lambda: op.start(s), s.sync, n=n_iter, rounds=3)
        L.MEASURE[0] = False
        check_cached = L.STATS["check_s"] / max(L.STATS["checks"], 1)
        rec("cutile_lab async launch, building the op",
            host_per_call(lambda: add(p, x, y).start(s), s.sync, n=n_iter), kind="enqueue")
        # graph replay: one replay of a chain of 10 tiny launches
        chain = add(p, x, y)
        for _ in range(9):
            chain = chain.then(lambda r: add(*r))
        graph = cl.graph(chain)
        graph.replay(1)
        # few enough replays that the GPU queue never fills (10 kernels per replay): this
        # measures the host's enqueue cost, not the GPU's execution rate
        per_replay = host_per_call(lambda: graph.launch(1, s), s.sync, n=30, warmup=10)
        rec("cutile_lab graph replay, per kernel (10/graph)", per_replay / graph.num_kernels,
            kind="enqueue", per_replay_us=per_replay * 1e6, kernels=graph.num_kernels)
        graph1 = cl.graph(add(p, x, y))
        per_replay1 = host_per_call(lambda: graph1.launch(1, s), s.sync, n=200, warmup=20)
        rec("cutile_lab graph replay (1 kernel/graph)", per_replay1, kind="enqueue")
        how = "ctypes cuLaunchKernel, arguments packed once per cached entry" \
            if isinstance(op._entry.raw, D.RawLaunch) else "cuda.core.launch"
        self.notes.append(f"kernel launches: {how}; graph replay: "
                          f"{'ctypes cuGraphLaunch' if graph._raw else 'cuda.core Graph.launch'}"
                          f" of a graph captured by {graph.method}")
        # host time of one replay with the GPU idle (no queue pressure at all)
        one = []
        for _ in range(200):
            s.sync()
            t0 = time.perf_counter()
            graph.launch(1, s)
            one.append(time.perf_counter() - t0)
        s.sync()
        rec("cutile_lab graph replay, 10 kernels, GPU idle (host)", median(one),
            kind="enqueue", per_kernel_us=median(one) / graph.num_kernels * 1e6)
        one = []
        for _ in range(200):
            s.sync()
            t0 = time.perf_counter()
            op.start(s)
            one.append(time.perf_counter() - t0)
        s.sync()
        rec("cutile_lab async launch, GPU idle (host)", median(one), kind="enqueue")
        # raw cuda.core launch of the same cubin, arguments packed once
        from cuda.core import launch as core_launch
        entry = op._entry
        args = list(entry.template)
        rec("raw cuda.core.launch (same cubin)",
            host_per_call(lambda: core_launch(s, entry.config, entry.plan.kernel, *args), s.sync,
                          n=n_iter), kind="enqueue")
        if isinstance(entry.raw, D.RawLaunch):
            raw = entry.raw
            _, vp = g.stream_handles(s)
            rec("raw cuLaunchKernel via ctypes (this runtime's packed call)",
                host_per_call(lambda: raw.launch_kernel(vp, raw.ptrs, None), s.sync, n=n_iter),
                kind="enqueue")
            self.guard("driver calls of a start", lambda: self._driver_floor(s, vp, raw, rec,
                                                                             n_iter))
        from cuda.bindings import driver
        fh = entry.plan.kernel.handle
        if isinstance(fh, driver.CUkernel):
            fh = driver.cuKernelGetFunction(fh)[1]
        import ctypes
        cvals = [ctypes.c_uint64(a) if type(a) is int else ctypes.c_int32(int(a)) for a in args]
        ptrs = (ctypes.c_void_p * len(cvals))(*[ctypes.addressof(c) for c in cvals])
        h = g.stream_key(s)
        blk = entry.plan.block
        rec("raw cuLaunchKernel via cuda.bindings (prepacked)",
            host_per_call(lambda: driver.cuLaunchKernel(fh, 1, 1, 1, blk, 1, 1, 0, h,
                                                        ctypes.addressof(ptrs), 0),
                          s.sync, n=n_iter), kind="enqueue")
        torch = _try_import("torch")
        if torch is not None:
            tx, ty = to_torch(x), to_torch(y)
            tz = torch.empty_like(tx)
            rec("torch.add (tiny)", host_per_call(lambda: torch.add(tx, ty, out=tz),
                                                   torch.cuda.synchronize, n=n_iter),
                kind="enqueue")

            def torch_round_trip():
                torch.add(tx, ty, out=tz)
                torch.cuda.synchronize()
            rec("torch.add + synchronize (round trip)",
                host_per_call(torch_round_trip, torch.cuda.synchronize,
                              n=max(200, n_iter // 4)), kind="round trip")
            self.guard("raw cuda.tile.launch (overhead)",
                       lambda: self._raw_ct_overhead(tx, ty, tz, N, rec, n_iter))
            self.guard("async launch vs raw cuda.tile.launch, interleaved",
                       lambda: self._interleaved(op, s, tx, ty, tz, N, rec, n_iter,
                                                 lambda: add(p, x, y).start(s)))
        # the launch-level checks
        rec("launch checks, cached launch (moves + in-flight)", check_cached, kind="checks")
        from cutile_lab.checking.launch_rules import check_launch
        from cutile_lab.runtime.callsite import user_call_site
        info = L.kernel_info(add)
        values = {"z": p, "x": x, "y": y}
        descs = L.arg_descs(info, values)
        where = user_call_site()
        t = host_per_call(lambda: check_launch(add.definition, descs, where, None),
                          lambda: None, n=n_iter, warmup=50)
        rec("check_launch (uncached: ArgDescs built)", t, kind="checks")
        t = host_per_call(lambda: check_launch(add.definition, L.arg_descs(info, values), where,
                                               None), lambda: None, n=n_iter, warmup=50)
        rec("check_launch + building the ArgDescs", t, kind="checks")

    def _driver_floor(self, s, vp, raw, rec, n_iter):
        """The driver calls of an async start as they were when each start recorded its own
        completion event (launch + cuEventRecord), next to the launch alone: what the lazy
        events of ``ownership`` save per start."""
        import ctypes
        from cutile_lab.runtime import driver as D
        lib = D.libcuda()
        ev = s.record()
        evh = ctypes.c_void_p(int(ev.handle))
        record = lib.cuEventRecord
        rec("raw cuEventRecord via ctypes", host_per_call(lambda: record(evh, vp), s.sync,
                                                          n=n_iter), kind="enqueue")

        def both():
            raw.launch_kernel(vp, raw.ptrs, None)
            record(evh, vp)
        rec("raw cuLaunchKernel + cuEventRecord via ctypes (a start's driver calls)",
            host_per_call(both, s.sync, n=n_iter), kind="enqueue")

    def _interleaved(self, op, s, tx, ty, tz, N, rec, n_iter, build):
        """Our async start — of one op started again, and of a new op built per launch
        (``add(p, x, y).start(s)``: the same work as a raw launch, arguments given each time)
        — and a raw ``cuda.tile.launch`` in alternating rounds (the host's speed drifts from
        run to run; a ratio taken round by round does not)."""
        import cuda.tile as ct
        import torch
        ct_add = _ct_add()
        stream = torch.cuda.current_stream()
        ours, built, raw, ratios, built_ratios = [], [], [], [], []
        for _ in range(15):
            a = host_per_call(lambda: op.start(s), s.sync, n=n_iter, warmup=50, rounds=1)
            c = host_per_call(build, s.sync, n=n_iter, warmup=50, rounds=1)
            b = host_per_call(lambda: ct.launch(stream, (1, 1, 1), ct_add, (tz, tx, ty, N)),
                              torch.cuda.synchronize, n=n_iter, warmup=50, rounds=1)
            ours.append(a)
            built.append(c)
            raw.append(b)
            ratios.append(a / b)
            built_ratios.append(c / b)
        rec("cutile_lab async launch (interleaved with raw)", median(ours), kind="enqueue")
        rec("cutile_lab async launch, building the op (interleaved with raw)", median(built),
            kind="enqueue")
        rec("raw cuda.tile.launch (interleaved with ours)", median(raw), kind="enqueue")
        self.row("overhead", "async launch / raw cuda.tile.launch (median of 15 rounds)",
                 ratio=median(ratios), kind="ratio")
        self.row("overhead", "async launch building the op / raw cuda.tile.launch "
                 "(median of 15 rounds)", ratio=median(built_ratios), kind="ratio")
        print(f"  {'async launch / raw cuda.tile.launch':44s} {median(ratios):8.3f} x "
              f"(median of 15 interleaved rounds; target <= 1.10)")
        print(f"  {'  the same, building the op per launch':44s} {median(built_ratios):8.3f} x")

    def _raw_ct_overhead(self, tx, ty, tz, N, rec, n_iter):
        import cuda.tile as ct
        import torch
        ct_add = _ct_add()
        stream = torch.cuda.current_stream()
        ct.launch(stream, (1, 1, 1), ct_add, (tz, tx, ty, N))
        torch.cuda.synchronize()
        assert torch.equal(tz, tx + ty)
        rec("raw cuda.tile.launch (tiny)",
            host_per_call(lambda: ct.launch(stream, (1, 1, 1), ct_add, (tz, tx, ty, N)),
                          torch.cuda.synchronize, n=n_iter), kind="enqueue")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="also copy the results into this folder")
    ap.add_argument("--n-log2", type=int, default=28, help="elements of the add: 2**N")
    ap.add_argument("--quick", action="store_true", help="fewer tile sizes and iterations")
    args = ap.parse_args(argv)

    problem = use_gpu()
    if problem:
        print(problem)
        return 2
    from cutile_lab.runtime.device import device_info
    info = device_info()
    print(f"device: {info}")
    b = Bench(args.n_log2, args.quick)
    print(f"\n[1] z = x + y, f32, 2^{args.n_log2} elements (median of CUDA-event timings)")
    b.guard("bandwidth", b.bandwidth)
    print("\n[2] host cost per launch of a tiny kernel (1 tile of 1024 f32)")
    b.guard("overhead", b.overhead)

    result = {
        "device": info.name, "arch": info.arch, "sm_count": info.sm_count,
        "sm_clock_mhz": info.sm_clock_mhz, "driver": info.driver_version,
        "theoretical_bandwidth_tb_s": info.theoretical_bandwidth / 1e12,
        "datasheet_bandwidth_tb_s": (b.__dict__.get("datasheet_bw") or 0) / 1e12 or None,
        "h100_sxm_datasheet_tb_s": H100_SXM_BW / 1e12,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "versions": _versions(), "n_elements": b.n, "rows": b.rows, "notes": b.notes,
        "errors": b.errors,
    }
    slug = re.sub(r"[^A-Za-z0-9]+", "-", info.name).strip("-").lower()
    outdir = Path(__file__).resolve().parent / "results"
    outdir.mkdir(parents=True, exist_ok=True)
    paths = [outdir]
    if args.out:
        paths.append(Path(args.out))
    for d in paths:
        d.mkdir(parents=True, exist_ok=True)
        (d / f"runtime-{slug}.json").write_text(json.dumps(result, indent=2, default=str))
        keys = sorted({k for r in b.rows for k in r}, key=lambda k: (k not in ("section", "name"),
                                                                       k))
        with open(d / f"runtime-{slug}.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["device", "date"] + keys)
            w.writeheader()
            for r in b.rows:
                w.writerow({"device": info.name, "date": result["date"], **r})
    print(f"\nwrote {outdir}/runtime-{slug}.json and .csv")
    if b.errors:
        print("errors:", *b.errors, sep="\n  ")
    return 1 if b.errors else 0


if __name__ == "__main__":
    sys.exit(main())
