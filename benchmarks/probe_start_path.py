"""Where a library call's host time goes on the GPU host, function by function: timing wrappers
around the steps of ``runtime.gpu.start`` (the output's allocation and tensor, the start record,
the launch, the ownership registry, the wait), for a user's launch and library calls on tiny and
large inputs; 3 rounds of each. The wrappers add ~0.3 us each: compare rows, not sums.

    python benchmarks/probe_start_path.py      # on a machine with a GPU; JSON under $OUT

benchmarks/NOTES.md (the user path, session 9) has what it found on an H200.
"""
import collections
import datetime
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cutile_lab as cl                                                  # noqa: E402
import cutile_lab.kernels as K                                           # noqa: E402
from benchmarks.common import use_gpu                                    # noqa: E402
from cutile_lab.lang import Mut, Tensor, f32, load_tile_like             # noqa: E402
from cutile_lab.runtime import driver, memory, ownership                 # noqa: E402
from cutile_lab.runtime import gpu as G                                  # noqa: E402
from cutile_lab.runtime.backend import GPU                               # noqa: E402
from cutile_lab.runtime.launch import checks, op, output                 # noqa: E402
from cutile_lab.runtime.partition import Partition                       # noqa: E402

ROUNDS = 3


@cl.kernel
def user_add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


_ns = collections.Counter()         # step -> nanoseconds in it this case
_calls = collections.Counter()      # step -> times it ran this case


def timed(name, fn):
    """``fn`` with its time and calls added to the step ``name``."""
    def wrapper(*a, **k):
        t0 = time.perf_counter_ns()
        try:
            return fn(*a, **k)
        finally:
            _ns[name] += time.perf_counter_ns() - t0
            _calls[name] += 1
    return wrapper


def wrap_steps() -> None:
    """Time the steps of the start path where the start path looks them up."""
    GPU.new_tensor = timed("GPU.new_tensor", GPU.new_tensor)
    GPU.launch = timed("GPU.launch", GPU.launch)
    GPU.wait = timed("GPU.wait", GPU.wait)
    G.allocate = timed("memory.allocate", memory.allocate)
    output.OutputLaunchOp._resolve = timed("OutputLaunchOp._resolve",
                                           output.OutputLaunchOp._resolve)
    op.LaunchOp._start_of = timed("LaunchOp._start_of", op.LaunchOp._start_of)
    op.LaunchOp._enqueue = timed("LaunchOp._enqueue", op.LaunchOp._enqueue)
    op.prepare_entry = timed("prepare_entry", op.prepare_entry)
    driver.RawLaunch.launch = timed("RawLaunch.launch", driver.RawLaunch.launch)
    ownership.register = timed("ownership.register", ownership.register)
    ownership.release_through = timed("ownership.release_through", ownership.release_through)
    Partition.__init__ = timed("Partition.__init__", Partition.__init__)
    checks.check_in_flight = timed("checks.check_in_flight", checks.check_in_flight)


def main() -> int:
    err = use_gpu()
    if err:
        print(err)
        return 1
    x, y, z = cl.randn(1024).sync(), cl.randn(1024).sync(), cl.zeros(1024).sync()
    xs, xb = cl.randn((8, 1024), "f16").sync(), cl.randn((131072, 1024), "f16").sync()
    w, b = cl.randn(1024, "f16").sync(), cl.randn(1024, "f16").sync()
    cases = {"user": lambda: user_add(z.partition_mut(128), x, y),
             "K.add": lambda: K.add(x, y),
             "K.layernorm small": lambda: K.layernorm(xs, w, b, 1e-5),
             "K.layernorm big": lambda: K.layernorm(xb, w, b, 1e-5)}
    for f in cases.values():                  # compiled, loaded, pools warm
        for _ in range(30):
            G.start(f(), None, True).wait()
    wrap_steps()
    start = timed("gpu.start", G.start)
    report = {}
    for rep in range(ROUNDS):
        for name, f in cases.items():
            _ns.clear()
            _calls.clear()
            n = 300 if "big" in name else 3000
            for _ in range(n):
                start(f(), None, True).wait()
            report[f"{name}/{rep}"] = ({k: _ns[k] / _calls[k] / 1e3 for k in _ns}
                                       | {"calls/" + k: _calls[k] / n for k in _calls})
    for case, steps in report.items():
        print("==", case)
        for step, us in sorted(steps.items()):
            if not step.startswith("calls/"):
                print(f"   {step:32s} {us:7.2f} us  x{steps['calls/' + step]:.2f}")
    out = {"device": cl.device_info().name, "date": datetime.datetime.now(
        datetime.timezone.utc).isoformat(timespec="seconds"), "us_per_call": report}
    Path(os.environ.get("OUT", "/tmp")).joinpath("probe-start-path.json").write_text(
        json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
