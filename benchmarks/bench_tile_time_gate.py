"""Compare %tile_time's gated timing (every run queued before the GPU starts) with ungated
timing (the host enqueues while the GPU runs) for vector add at several sizes. GPU only."""
import cutile_lab as cl
from cutile_lab.performance.timing import time_launch

src = '''def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))
'''
add = cl.kernels_from_source(src, "<gate>")["add"]
print(f"{'n':>10} {'gated µs':>10} {'ungated µs':>11} {'gated TB/s':>11}")
for k in (16, 18, 20, 22, 24, 26):
    n = 1 << k
    x, y = cl.randn(n).sync(), cl.randn(n).sync()
    zp = cl.zeros(n).sync().partition(1024)
    op = add(zp, x, y)
    g = time_launch(lambda: op, warmup=5, repeats=50, gate=True)
    u = time_launch(lambda: op, warmup=5, repeats=50, gate=False)
    print(f"{n:>10} {g.median * 1e6:>10.2f} {u.median * 1e6:>11.2f} "
          f"{12 * n / g.median / 1e12:>11.2f}")
