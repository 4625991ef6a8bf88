"""Flash-attention forward: softmax(Q Kᵀ · scale) V, one (BQ, D) block of queries per kernel
instance, streaming K and V in BKV blocks with an online softmax (running max and sum in f32,
base-2 exponentials with the scale folded into ``qk_scale = scale · log2 e``). The scores stay
unscaled (the running max too): ``exp2(s · qk_scale − m · qk_scale)`` is one fused multiply-add
per score, where scaling the scores first costs a pass of its own (and scaling Q instead moves
it out of shared memory into registers: slower still; measured on an H100). K is loaded
transposed (``order=``), so no transpose is computed in the loop. The output is normalised with
one reciprocal per row: a division per element compiles to a checked slow path (FCHK + CALL in
the SASS). The exponentials flush subnormal results to zero (``flush_to_zero``): a probability
below 2^-126 adds nothing next to the row's maximum (whose term is 1), and the exact path costs
a compare and two multiplies per score around MUFU.EX2 (0.770x -> 0.781x SDPA on an H100).

Tensors are (batch·heads, sequence, head_dim). The causal variant runs the blocks wholly below
the diagonal without a mask and masks only the blocks that cross it. Its later query blocks see
more keys, so the tiles are launched in reverse order (``tile_order="reverse"``): the longest
start first and the last wave is short (causal 0.82 -> 0.84x SDPA on an H100; the non-causal
kernel's tiles are all alike, and the order changes nothing there).
"""
from cutile_lab.kernels.library import template

ATTENTION = template('''
@kernel(opt_level=3, tile_order="reverse"{hints})
def attention_{dt}(out: Mut[Tensor[{dt}, "1, BQ, D"]], q: Tensor[{dt}, "?, ?, D"],
                   k: Tensor[{dt}, "?, ?, D"], v: Tensor[{dt}, "?, ?, D"], qk_scale: f32,
                   BKV: Const[int] = 64, CAUSAL: Const[int] = 0):
    bh = tile_id(0)
    qi = tile_id(1)
    tq = reshape(load_tile_like(q, out), (BQ, D))
    m = full((BQ, 1), -1.0e30, dtype=f32)
    l = full((BQ, 1), 0.0, dtype=f32)
    acc = full((BQ, D), 0.0, dtype=f32)
    zero = full((BQ, BKV), 0.0, dtype=f32)
    n_kv = num_tiles(k, 1, (1, BKV, D))
    n_full = n_kv
    if CAUSAL:
        n_full = (qi * BQ) // BKV
        n_kv = (qi * BQ + BQ + BKV - 1) // BKV
    for j in range(n_full):
        tkt = reshape(load_tile(k, (bh, 0, j), (1, D, BKV), order=(0, 2, 1)), (D, BKV))
        s = mma(tq, tkt, zero)
        m_new = maximum(m, max(s, axis=1, keepdims=True))
        p = exp2(s * qk_scale - m_new * qk_scale, flush_to_zero=True)
        alpha = exp2((m - m_new) * qk_scale, flush_to_zero=True)
        l = l * alpha + sum(p, axis=1, keepdims=True)
        tv = reshape(load_tile(v, (bh, j, 0), (1, BKV, D)), (BKV, D))
        acc = mma(p.astype({dt}), tv, acc * alpha)
        m = m_new
    rows = reshape(arange(BQ, dtype=i32), (BQ, 1)) + qi * BQ
    for j in range(n_full, n_kv):
        tkt = reshape(load_tile(k, (bh, 0, j), (1, D, BKV), order=(0, 2, 1)), (D, BKV))
        s = mma(tq, tkt, zero)
        cols = reshape(arange(BKV, dtype=i32), (1, BKV)) + j * BKV
        s = where(cols <= rows, s, -1.0e30)
        m_new = maximum(m, max(s, axis=1, keepdims=True))
        p = exp2(s * qk_scale - m_new * qk_scale, flush_to_zero=True)
        alpha = exp2((m - m_new) * qk_scale, flush_to_zero=True)
        l = l * alpha + sum(p, axis=1, keepdims=True)
        tv = reshape(load_tile(v, (bh, j, 0), (1, BKV, D)), (BKV, D))
        acc = mma(p.astype({dt}), tv, acc * alpha)
        m = m_new
    out.store(reshape((acc * (1.0 / l)).astype({dt}), (1, BQ, D)))
''')
