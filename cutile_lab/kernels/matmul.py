"""GEMM: C = A @ B with f32 accumulation on tensor cores, in grouped tile order.

Each kernel instance owns one (BM, BN) tile of C and walks K in BK steps with ``mma``. Grouped
tile order (a bijection of the launch index) makes neighbouring instances share A and B tiles in
L2; ownership of C's tiles stays one-to-one, so the kernel is in the safe language. With
``schedule="persistent"`` (a tuning choice) about one instance per SM loops over a disjoint
stride of the tiles.
"""
from cutile_lab.kernels.library import template

GEMM = template('''
@kernel(tile_order="grouped", group_size=8{hints})
def gemm_{dt}(c: Mut[Tensor[{dt}, "BM, BN"]], a: Tensor[{dt}, "?, ?"], b: Tensor[{dt}, "?, ?"],
              BK: Const[int] = 64):
    acc = full((BM, BN), 0.0, dtype=f32)
    for k in range(num_tiles(a, 1, (BM, BK))):
        ta = load_tile(a, (tile_id(0), k), (BM, BK))
        tb = load_tile(b, (k, tile_id(1)), (BK, BN))
        acc = mma(ta, tb, acc)
    c.store(acc.astype({dt}))
''')
