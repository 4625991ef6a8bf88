"""Where a tiny call's time goes on the GPU host: the allocation paths (PyTorch's, cuda.core's
pool, the same driver calls by ctypes, ``cl.empty``), a user's launch + sync and ``K.add`` + sync
against ``torch.add`` + synchronize (medians of 5 rounds of 2000 calls), then a cProfile of each.

    python benchmarks/probe_tiny_calls.py      # on a machine with a GPU
"""
import time, cProfile, pstats, io, sys, ctypes, statistics
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import torch
import cutile_lab as cl
import cutile_lab.kernels as K
from cutile_lab.lang import *
from cutile_lab.runtime.device import gpu

@cl.kernel
def user_add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))

def per_call(fn, n=2000, rounds=5):
    for _ in range(200): fn()
    r = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n): fn()
        r.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(r)

g = gpu(); dev = g.device; s = g.default_stream
x = cl.randn(1024).sync(); y = cl.randn(1024).sync(); z = cl.zeros(1024).sync()
tx = torch.randn(1024, device="cuda"); ty = torch.randn(1024, device="cuda")
res = {}
res["torch.add + sync"] = per_call(lambda: (torch.add(tx, ty), torch.cuda.synchronize()))
res["torch.empty(1024)"] = per_call(lambda: torch.empty(1024, device="cuda"))
res["cl.empty(1024)"] = per_call(lambda: cl.empty(1024, "f32"))
def core_alloc():
    b = dev.allocate(4096, stream=s); b.close(s)
res["cuda.core allocate+close"] = per_call(core_alloc)
from cuda.bindings import driver
pool = dev.memory_resource.handle
hs = int(s.handle)
lib = ctypes.CDLL("libcuda.so.1")
ptr = ctypes.c_uint64()
def raw_alloc():
    lib.cuMemAllocFromPoolAsync(ctypes.byref(ptr), ctypes.c_size_t(4096), ctypes.c_void_p(int(pool)), ctypes.c_void_p(hs))
    lib.cuMemFreeAsync(ctypes.c_uint64(ptr.value), ctypes.c_void_p(hs))
res["ctypes cuMemAllocFromPoolAsync+cuMemFreeAsync"] = per_call(raw_alloc)
res["user_add launch+sync"] = per_call(lambda: user_add(z.partition_mut(128), x, y).sync())
res["K.add + sync"] = per_call(lambda: K.add(x, y).sync())
res["K.add start (no sync)"] = per_call(lambda: K.add(x, y).start(), n=500)
torch.cuda.synchronize(); g.default_stream.sync()
res["stream.sync idle"] = per_call(lambda: s.sync())
for k, v in res.items(): print("%-55s %8.2f us" % (k, v))
for name, fn in (("K.add", lambda: K.add(x, y).sync()),
                 ("user", lambda: user_add(z.partition_mut(128), x, y).sync())):
    pr = cProfile.Profile(); pr.enable()
    for _ in range(3000): fn()
    pr.disable(); t = io.StringIO()
    pstats.Stats(pr, stream=t).sort_stats("tottime").print_stats(28)
    print("==== profile", name); print(t.getvalue()[:7000])
