"""Where a library call's host time goes on the GPU host, function by function: timing wrappers
around the steps of ``runtime.gpu.start`` (the output's allocation and tensor, the start record,
the launch, the ownership registry, the wait), for a user's launch and library calls on tiny and
large inputs; 3 rounds of each. The wrappers add ~0.3 us each: compare rows, not sums.

    python benchmarks/probe_start_path.py      # on a machine with a GPU; JSON under $OUT

benchmarks/NOTES.md (the user path, session 9) has what it found on an H200."""
import collections, json, os, statistics, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import cutile_lab as cl
import cutile_lab.kernels as K
from cutile_lab.lang import *
from cutile_lab.runtime import gpu as G, ownership, driver
from cutile_lab.runtime.backend import GPU as GB
from cutile_lab.runtime.launch import op as OPM, output as OUTM, checks as CH
from cutile_lab.runtime.tensor import Tensor as RT
from cutile_lab.runtime.partition import Partition as RP

@cl.kernel
def user_add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))

pc = time.perf_counter_ns
acc = collections.Counter(); cnt = collections.Counter()
def timed(name, fn):
    def w(*a, **k):
        t0 = pc()
        try:
            return fn(*a, **k)
        finally:
            acc[name] += pc() - t0; cnt[name] += 1
    return w

def patch():
    GB.new_tensor = timed("GPU.new_tensor", GB.new_tensor)
    OUTM.OutputLaunchOp._resolve = timed("OutputLaunchOp._resolve", OUTM.OutputLaunchOp._resolve)
    OPM.LaunchOp._start_of = timed("LaunchOp._start_of", OPM.LaunchOp._start_of)
    OPM.LaunchOp._enqueue = timed("LaunchOp._enqueue", OPM.LaunchOp._enqueue)
    GB.launch = timed("GPU.launch", GB.launch)
    driver.RawLaunch.launch = timed("RawLaunch.launch", driver.RawLaunch.launch)
    OPM.prepare_entry = timed("prepare_entry", OPM.prepare_entry)
    from cutile_lab.runtime import memory as MEM
    G.allocate = timed("memory.allocate", MEM.allocate)
    ownership.register = timed("ownership.register", ownership.register)
    ownership.release_through = timed("ownership.release_through", ownership.release_through)
    RP.__init__ = timed("Partition.__init__", RP.__init__)
    CH.check_in_flight = timed("checks.check_in_flight", CH.check_in_flight)
    OPM.checks.check_in_flight = CH.check_in_flight
    GB.wait = timed("GPU.wait", GB.wait)
    from cutile_lab.runtime.launch import checks as CK
    OPM.checks.raise_moved = CK.raise_moved

x = cl.randn(1024).sync(); y = cl.randn(1024).sync(); z = cl.zeros(1024).sync()
a = cl.randn((64, 64), "f16").sync(); b = cl.randn((64, 64), "f16").sync()
xb = cl.randn((131072, 1024), "f16").sync(); wb = cl.randn(1024, "f16").sync(); bb = cl.randn(1024, "f16").sync()
xs = cl.randn((8, 1024), "f16").sync()
cases = {"user": lambda: user_add(z.partition_mut(128), x, y),
         "K.add": lambda: K.add(x, y),
         "K.layernorm small": lambda: K.layernorm(xs, wb, bb, 1e-5),
         "K.layernorm big": lambda: K.layernorm(xb, wb, bb, 1e-5)}
for f in cases.values():
    for _ in range(30): G.start(f(), None, True).wait()
patch()
start = timed("gpu.start", G.start)
build_t = collections.Counter(); wait_t = collections.Counter()
report = {}
for rep in range(3):
    for name, f in cases.items():
        acc.clear(); cnt.clear()
        n = 300 if "big" in name else 3000
        for _ in range(n):
            op = f()
            p = start(op, None, True)
            p.wait()
        report[f"{name}/{rep}"] = {k: acc[k] / cnt[k] / 1e3 for k in acc} | {"calls/" + k: cnt[k] / n for k in cnt}
for k, v in report.items():
    print("==", k)
    for kk, vv in sorted(v.items()):
        if not kk.startswith("calls/"):
            print(f"   {kk:32s} {vv:7.2f} us  x{v['calls/' + kk]:.2f}")
import datetime
info = cl.device_info()
Path(os.environ.get("OUT", "/tmp")).joinpath("probe-start-path.json").write_text(json.dumps(
    {"device": info.name, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec="seconds"), "us_per_call": report}, indent=1))
