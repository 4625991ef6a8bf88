"""The launch check's host cost alone: ``check_launch`` of a three-argument add, uncached, with its
ArgDescs built once and built per call (the two ``check_launch`` rows of ``bench_runtime.py``),
best of 7 rounds of 3000 calls of process CPU time, on the simulator (no GPU needed).

    python benchmarks/profile_check_launch.py [LABEL] [prof]

Run it from two trees (``PYTHONPATH=<other tree>``) alternately to compare them; ``prof`` adds a
cProfile of 20000 calls.
"""
import sys, time, importlib
import cutile_lab as cl
from cutile_lab.lang import *
@cl.kernel
def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))
L = importlib.import_module("cutile_lab.runtime.launch")
from cutile_lab.checking.launch_rules import check_launch
from cutile_lab.runtime.callsite import user_call_site
N = 1024
x = cl.randn(N).sync(); y = cl.randn(N).sync(); z = cl.zeros(N).sync()
p = z.partition_mut(N)
add(p, x, y).sync()
info = L.kernel_info(add); values = {"z": p, "x": x, "y": y}
descs = L.arg_descs(info, values); where = user_call_site()
def best(f, n=3000):
    r = []
    for _ in range(7):
        t0 = time.process_time()
        for _ in range(n): f()
        r.append((time.process_time() - t0) / n * 1e6)
    return min(r)
print(sys.argv[1] if len(sys.argv) > 1 else "this tree", "check_launch %.2f us" % best(lambda: check_launch(add.definition, descs, where, None)),
      " +descs %.2f us" % best(lambda: check_launch(add.definition, L.arg_descs(info, values), where, None)))
if len(sys.argv) > 2:
    import cProfile, pstats
    pr = cProfile.Profile(); pr.enable()
    for _ in range(20000): check_launch(add.definition, descs, where, None)
    pr.disable(); pstats.Stats(pr).sort_stats("tottime").print_stats(22)
