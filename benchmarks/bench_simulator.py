"""Speed of the CPU simulator (``cutile_lab.simulation.simulate``).

* vector add of 2**20 f32 elements with 1024-element tiles (1024 tiles): goal < 0.2 s;
* a 256 x 256 x 256 f32 GEMM with 64 x 64 tiles and 32-wide K steps (16 tiles, 8 ``mma`` each):
  goal < 1 s;
* for reference, the same launches without recording (``record=False``: no ownership maps or
  race detection), a row softmax, and the per-tile overhead of a one-op kernel.

Each launch is timed end to end (argument checks, the per-tile loop, building the result) after
one warm-up call (which lowers and compiles the kernel text once); the median and the minimum of
``--repeats`` runs are reported (the minimum is the better estimate on a busy machine). Prints a
table and writes ``benchmarks/results/simulator.json``.

    python benchmarks/bench_simulator.py [--repeats 5]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results" / "simulator.json"

from cutile_lab.kernel import kernels_from_source  # noqa: E402
from cutile_lab.simulation import simulate  # noqa: E402

SOURCE = '''
def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    tx = load_tile_like(x, z)
    ty = load_tile_like(y, z)
    z.store(tx + ty)

def gemm(c: Mut[Tensor[f32, "BM, BN"]], a: Tensor[f32, "?, ?"], b: Tensor[f32, "?, ?"],
         BK: Const[int]):
    acc = full((BM, BN), 0, dtype=f32)
    for k in range(num_tiles(a, 1, (BM, BK))):
        ta = load_tile(a, (tile_id(0), k), (BM, BK))
        tb = load_tile(b, (k, tile_id(1)), (BK, BN))
        acc = mma(ta, tb, acc)
    c.store(acc)

def softmax(out: Mut[Tensor[f32, "1, N"]], x: Tensor[f32, "?, N"]):
    t = load_tile_like(x, out)
    e = exp(t - max(t, axis=1, keepdims=True))
    out.store(e / sum(e, axis=1, keepdims=True))

def copy(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z))
'''


def _time(fn, repeats: int) -> tuple[float, list[float]]:
    fn()                                    # warm-up: lowering and compile are cached after it
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    opts = ap.parse_args()
    k = kernels_from_source(SOURCE, "<bench_simulator>")
    rng = np.random.default_rng(0)

    n = 1 << 20
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    z = np.zeros(n, np.float32)
    a = rng.standard_normal((256, 256)).astype(np.float32)
    b = rng.standard_normal((256, 256)).astype(np.float32)
    c = np.zeros((256, 256), np.float32)
    xs = rng.standard_normal((4096, 256)).astype(np.float32)
    outs = np.zeros_like(xs)
    small = np.zeros(1 << 16, np.float32)
    small_x = rng.standard_normal(1 << 16).astype(np.float32)

    cases = [
        ("vector add 2^20 f32, tile 1024", "add_2p20", 0.2, 1024,
         lambda rec: simulate(k["add"], [z, x, y], (n // 1024,), {"B": 1024}, record=rec)),
        ("GEMM 256^3 f32, 64x64x32", "gemm_256", 1.0, 16,
         lambda rec: simulate(k["gemm"], [c, a, b], (4, 4), {"BM": 64, "BN": 64, "BK": 32},
                              record=rec)),
        ("row softmax 4096 x 256 f32", "softmax_4096x256", None, 4096,
         lambda rec: simulate(k["softmax"], [outs, xs], (4096, 1), {"N": 256}, record=rec)),
        ("copy 2^16 f32, tile 16 (per-tile cost)", "copy_tiny_tiles", None, 4096,
         lambda rec: simulate(k["copy"], [small, small_x], (4096,), {"B": 16}, record=rec)),
    ]
    results: dict = {}
    rows = []
    for label, key, goal, tiles, run in cases:
        for rec in (True, False):
            med, all_t = _time(lambda: run(rec), opts.repeats)
            entry = {"median_s": med, "min_s": min(all_t), "all_s": all_t, "tiles": tiles,
                     "per_tile_us": med / tiles * 1e6, "record": rec}
            if goal is not None and rec:
                entry.update(goal_s=goal, meets_goal=med < goal)
            results[key + ("" if rec else "_norecord")] = entry
            rows.append((label + ("" if rec else " (record=False)"), med, min(all_t), tiles,
                         goal if rec else None))
    # correctness of what was timed
    np.testing.assert_allclose(z, x + y, rtol=1e-6)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)

    print(f"{'launch':56} {'median':>10} {'min':>10} {'tiles':>6} {'per tile':>10}  goal")
    for label, med, best, tiles, goal in rows:
        mark = "" if goal is None else (f"< {goal:g} s " + ("ok" if med < goal else "MISSED"))
        print(f"{label:56} {med * 1e3:7.1f} ms {best * 1e3:7.1f} ms {tiles:6d} "
              f"{med / tiles * 1e6:7.1f} us  {mark}")
    results["machine"] = {"python": platform.python_version(), "numpy": np.__version__,
                          "cpu_count": os.cpu_count(), "platform": platform.platform(),
                          "processor": platform.processor()}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    ok = all(v.get("meets_goal", True) for v in results.values() if isinstance(v, dict))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
