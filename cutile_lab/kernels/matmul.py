"""GEMM: C = A @ B with f32 accumulation on tensor cores, in grouped tile order.

Each kernel instance owns one (BM, BN) tile of C and walks K in BK steps with ``mma``. Grouped
tile order (a bijection of the launch index) makes neighbouring instances share A and B tiles in
L2; ownership of C's tiles stays one-to-one, so the kernel is in the safe language. With
``schedule="persistent"`` (a tuning choice) about one instance per SM loops over a disjoint
stride of the tiles.
"""
from cutile_lab.kernels.library import template

GEMM = template('''
@kernel(tile_order="grouped", group_size={group}{hints})
def gemm_{dt}(c: Mut[Tensor[{dt}, "BM, BN"]], a: Tensor[{dt}, "?, ?"], b: Tensor[{dt}, "?, ?"],
              BK: Const[int] = 64):
    acc = full((BM, BN), 0.0, dtype=f32)
    for k in range(num_tiles(a, 1, (BM, BK))):
        ta = load_tile(a, (tile_id(0), k), (BM, BK))
        tb = load_tile(b, (k, tile_id(1)), (BK, BN))
        acc = mma(ta, tb, acc)
    c.store(acc.astype({dt}))
''', group="8")

# Batched GEMM (``matmul`` of 3-D tensors): one (BM, BN) tile of one batch's C per instance. An
# operand without a batch dimension (or a batch of 1) is read at batch 0 by every batch
# (``{ab}`` / ``{bb}``: ``tile_id(0)`` or ``0``).
BATCHED_GEMM = template('''
@kernel(opt_level=3{hints})
def bgemm_{dt}(c: Mut[Tensor[{dt}, "1, BM, BN"]], a: Tensor[{dt}, "?, ?, ?"],
               b: Tensor[{dt}, "?, ?, ?"], BK: Const[int] = 64):
    acc = full((BM, BN), 0.0, dtype=f32)
    for k in range(num_tiles(a, 2, (1, BM, BK))):
        ta = reshape(load_tile(a, ({ab}, tile_id(1), k), (1, BM, BK)), (BM, BK))
        tb = reshape(load_tile(b, ({bb}, k, tile_id(2)), (1, BK, BN)), (BK, BN))
        acc = mma(ta, tb, acc)
    c.store(reshape(acc.astype({dt}), (1, BM, BN)))
''', ab="tile_id(0)", bb="tile_id(0)")
