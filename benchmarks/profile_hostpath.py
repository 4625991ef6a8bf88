"""The Python cost per call of the user's paths, measured without a GPU: the work a launch hands
to its backend is replaced by a no-op, so what is left is exactly the host side of a call —
building the op, binding and checking its arguments (moves, launch rules, in-flight borrows),
the cached plan lookup, the allocation of a library call's output, starting and waiting.

    python benchmarks/profile_hostpath.py [--n 5000] [--profile CASE] [--out DIR]

Cases (the tiny cases of ``bench_userpath.py``):

- ``user``:       ``add(z.partition_mut(128), x, y).sync()`` — a user's kernel, a fresh partition
- ``user_start``: ``add(p, x, y).start(); .wait()`` of the very same objects (the reuse path)
- ``user_cell``:  ``user`` made from line 150 of a function, as from the end of a long notebook
  cell (the 150 lines before it are skipped at run time, but they are in its code's line table)
- ``K.add``:      ``K.add(x, y).sync()`` — a library call, its output allocated per call
- ``K.softmax``:  ``K.softmax(x).sync()`` on 8 rows of 1024
- ``K.add kept``: ``K.add`` with the last 512 outputs kept alive (each call's output at a new
  address, as in a model's forward pass)
- ``K.rmsnorm``:  ``K.rmsnorm(x, w).sync()`` on 8 rows of 1024 (f16, a weight and two scalars)
- ``K.gemm``:     ``K.gemm(a, b).sync()`` of two 64x64 f16 matrices (a const keyword: ``BK``)

By default it runs on the simulator backend with ``cutile_lab.runtime.sim.run_simulated`` (the only call
that does the simulated work) replaced by a no-op; everything else — the ownership checks of
each launch included — runs as it does for every user. The GPU backend shares all of it but the
stream lookup and the ctypes launch (``runtime.driver.RawLaunch``: one foreign call).
With ``--fake-gpu`` it runs the GPU backend's own path instead (``runtime.gpu``: the output's
stream-ordered allocation and free, the scalar-slot ``cuLaunchKernelEx``, events and waits,
the automatic backend choice) against the fakes of ``benchmarks/fake_gpu.py`` — cuda.core's
device, streams and buffers, the ctypes driver library and the compiler faked, every line of
the lab above them real. A CPU measurement of the GPU path's Python, not a GPU measurement.
``--only A,B`` measures only those cases. ``--profile CASE`` prints the top functions of a cProfile of that case by own time.
"""
from __future__ import annotations

import argparse
import collections
import cProfile
import datetime
import json
import platform
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np                                         # noqa: E402

import cutile_lab as cl                                    # noqa: E402
from cutile_lab import kernels as K                        # noqa: E402
from cutile_lab.lang import *                              # noqa: E402,F401,F403


@cl.kernel
def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


class _NoSimResult:
    def check(self):
        pass


def stub_simulator() -> None:
    """Every launch's simulated work becomes a no-op (the host path stays as it is)."""
    import cutile_lab.runtime.sim as sim
    sim.run_simulated = lambda *a, **k: _NoSimResult()


def long_cell(lines: int = 150):
    """``cell(z, x, y, skip)``: a function whose launch comes after ``lines`` lines of code
    (run only when ``skip`` is false), like the last line of a long notebook cell."""
    body = "".join(f"        v{i} = {i} * 2\n" for i in range(lines))
    src = ("def cell(z, x, y, skip):\n    if not skip:\n" + body +
           "    return add(z.partition_mut(128), x, y).sync()\n")
    namespace = {"add": add}
    exec(compile(src, "<long cell>", "exec"), namespace)
    return namespace["cell"]


def _on_device(array):
    return cl.from_numpy(array).sync()


def cases(make=_on_device) -> dict:
    """The cases, their tensors made by ``make(numpy array)``."""
    n = 1024
    x = make(np.random.rand(n).astype(np.float32))
    y = make(np.random.rand(n).astype(np.float32))
    z = make(np.zeros(n, np.float32))
    p = make(np.zeros(n, np.float32)).partition_mut(128)
    xs = make(np.random.rand(8, 1024).astype(np.float32))
    xh = make(np.random.rand(8, 1024).astype(np.float16))
    wh = make(np.random.rand(1024).astype(np.float16))
    a = make(np.random.rand(64, 64).astype(np.float16))
    b = make(np.random.rand(64, 64).astype(np.float16))

    def user_start():
        add(p, x, y).start().wait()
    kept = collections.deque(maxlen=512)
    cell = long_cell()
    return {
        "user": lambda: add(z.partition_mut(128), x, y).sync(),
        "user_start": user_start,
        "user_cell": lambda: cell(z, x, y, True),
        "K.add": lambda: K.add(x, y).sync(),
        "K.softmax": lambda: K.softmax(xs).sync(),
        "K.add kept": lambda: kept.append(K.add(x, y).sync()),
        "K.rmsnorm": lambda: K.rmsnorm(xh, wh).sync(),
        "K.gemm": lambda: K.gemm(a, b).sync(),
    }


def per_call_us(fn, n: int, rounds: int = 7) -> float:
    """The least over ``rounds`` of the mean CPU µs per call of ``n`` calls: this process's CPU
    time (``time.process_time``), not wall time, so that other work on a shared machine does
    not count; the least round is the least disturbed (caches shared with other work)."""
    for _ in range(min(n, 200)):
        fn()
    out = []
    for _ in range(rounds):
        t0 = time.process_time()
        for _ in range(n):
            fn()
        out.append((time.process_time() - t0) / n * 1e6)
    return min(out)


def cpu_name() -> str:
    """The CPU's model name (Linux), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000, help="calls per round")
    ap.add_argument("--profile", help="cProfile this case")
    ap.add_argument("--fake-gpu", action="store_true",
                    help="the GPU backend's path against fakes of cuda.core and the driver")
    ap.add_argument("--only", help="comma-separated cases")
    ap.add_argument("--top", type=int, default=25, help="functions a profile prints")
    ap.add_argument("--out", help="write hostpath-cpu-<date>.json here (µs per call by case)")
    args = ap.parse_args(argv)
    if args.fake_gpu:
        from benchmarks.fake_gpu import FakeGpu
        fake = FakeGpu().__enter__().quiet()
        table = cases(fake.tensor)
    else:
        cl.set_backend("sim")
        stub_simulator()
        table = cases()
    if args.only:
        table = {k: table[k] for k in args.only.split(",")}
    if args.profile:
        fn = table[args.profile]
        per_call_us(fn, 200, 1)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.n):
            fn()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)
        return 0
    results = {name: per_call_us(fn, args.n) for name, fn in table.items()}
    for name, us in results.items():
        print(f"{name:12s} {us:8.2f} µs/call (host, " +
              ("fake GPU)" if args.fake_gpu else "launch stubbed)"))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        day = datetime.datetime.now(datetime.timezone.utc)
        record = {"date": day.isoformat(timespec="seconds"), "cpu": cpu_name(),
                  "python": platform.python_version(),
                  "calls_per_round": args.n, "us_per_call": {k: round(v, 2) for k, v in results.items()}}
        kind = "fakegpu" if args.fake_gpu else "cpu"
        path = out / f"hostpath-{kind}-{day.date().isoformat()}.json"
        path.write_text(json.dumps(record, indent=2) + "\n")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
