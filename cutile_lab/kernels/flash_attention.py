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

Tensors are (batch·heads, sequence, head_dim); K and V may have fewer heads than Q (grouped-query
attention: ``REP`` query heads share one K/V head, ``kh = bh // REP``), and a key length that is
not a multiple of ``BKV``: the last block masks the keys past the end (``cols < skv``). A mask
(``mask_substitutions``: boolean, or a float added to the scores) sends every block through the
masked loop, reading the mask's tile of each block. The causal variant runs the blocks wholly below
the diagonal without a mask and masks only the blocks that cross it. Its later query blocks see
more keys, so the tiles are launched in reverse order (``tile_order="reverse"``): the longest
start first and the last wave is short (causal 0.82 -> 0.84x SDPA on an H100; the non-causal
kernel's tiles are all alike, and the order changes nothing there).
"""
from cutile_lab.kernels.library import template

ATTENTION = template('''
@kernel(opt_level=3, tile_order="reverse"{hints})
def attention_{dt}(out: Mut[Tensor[{dt}, "1, BQ, D"]], q: Tensor[{dt}, "?, ?, ?"],
                   k: Tensor[{dt}, "?, ?, ?"], v: Tensor[{dt}, "?, ?, ?"], qk_scale: f32,{mask_param}
                   BKV: Const[int] = 64, CAUSAL: Const[int] = 0, REP: Const[int] = 1,
                   HEADS: Const[int] = 1):
    bh = tile_id(0)
    qi = tile_id(1)
    kh = bh // REP
    skv = k.shape[1]
    tq = reshape(load_tile_like(q, out), (BQ, D))
    m = full((BQ, 1), -1.0e30, dtype=f32)
    l = full((BQ, 1), 0.0, dtype=f32)
    acc = full((BQ, D), 0.0, dtype=f32)
    zero = full((BQ, BKV), 0.0, dtype=f32)
    n_kv = num_tiles(k, 1, (1, BKV, D))
    n_full = {n_full}
    if CAUSAL:
        n_below = (qi * BQ) // BKV
        n_full = (n_full + n_below - abs(n_full - n_below)) // 2
        n_reach = (qi * BQ + BQ + BKV - 1) // BKV
        n_kv = (n_kv + n_reach - abs(n_kv - n_reach)) // 2
    for j in range(n_full):
        tkt = reshape(load_tile(k, (kh, 0, j), (1, D, BKV), order=(0, 2, 1)), (D, BKV))
        s = mma(tq, tkt, zero)
        m_new = maximum(m, max(s, axis=1, keepdims=True))
        p = exp2(s * qk_scale - m_new * qk_scale, flush_to_zero=True)
        alpha = exp2((m - m_new) * qk_scale, flush_to_zero=True)
        l = l * alpha + sum(p, axis=1, keepdims=True)
        tv = reshape(load_tile(v, (kh, j, 0), (1, BKV, D)), (BKV, D))
        acc = mma(p.astype({dt}), tv, acc * alpha)
        m = m_new
    rows = reshape(arange(BQ, dtype=i32), (BQ, 1)) + qi * BQ
    for j in range(n_full, n_kv):
        tkt = reshape(load_tile(k, (kh, 0, j), (1, D, BKV), order=(0, 2, 1)), (D, BKV))
        s = mma(tq, tkt, zero)
        cols = reshape(arange(BKV, dtype=i32), (1, BKV)) + j * BKV
        s = where(cols < skv, s, -1.0e30){mask_apply}
        if CAUSAL:
            s = where(cols <= rows, s, -1.0e30)
        m_new = maximum(m, max(s, axis=1, keepdims=True))
        p = exp2(s * qk_scale - m_new * qk_scale, flush_to_zero=True)
        alpha = exp2((m - m_new) * qk_scale, flush_to_zero=True)
        l = l * alpha + sum(p, axis=1, keepdims=True)
        tv = reshape(load_tile(v, (kh, j, 0), (1, BKV, D)), (BKV, D))
        acc = mma(p.astype({dt}), tv, acc * alpha)
        m = m_new
    out.store(reshape((acc * (1.0 / l)).astype({dt}), (1, BQ, D)))
''', mask_param="", mask_apply="", n_full="skv // BKV")


def mask_substitutions(mask_dtype: str, index: str, rows: bool, cols: bool) -> dict:
    """What ``ATTENTION`` needs for a mask of ``mask_dtype`` (``bool``: True keeps a score; a float:
    added to the scaled scores) read at ``(index, query block, key block)``, where ``rows`` /
    ``cols`` say whether the mask has a query / key dimension (else it broadcasts over it)."""
    MQ, mq = ("BQ", "qi") if rows else ("1", "0")
    MK, mk = ("BKV", "j") if cols else ("1", "0")
    tile = f"reshape(load_tile(mask, ({index}, {mq}, {mk}), (1, {MQ}, {MK})), ({MQ}, {MK}))"
    if mask_dtype == "bool":
        apply = f"s = where({tile}, s, -1.0e30)"
    else:
        apply = f"s = s + {tile}.astype(f32) * minv"
    return {"mask_param": f' mask: Tensor[{mask_dtype}, "?, ?, ?"], minv: f32,',
            "mask_apply": "; " + apply, "n_full": "0"}
