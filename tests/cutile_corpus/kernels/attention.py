"""Attention forward with an online softmax in base 2 (FlashAttention style)."""
import math

import cuda.tile as ct

ConstInt = ct.Constant[int]
ConstBool = ct.Constant[bool]
INV_LOG_2 = 1.0 / math.log(2)
PAD_ZERO = ct.PaddingMode.ZERO


@ct.kernel
def attention_fwd(Q, K, V, Out, scale: ct.Constant[float], D: ConstInt, BM: ConstInt,
                  BN: ConstInt, CAUSAL: ConstBool):
    bh = ct.bid(1)
    qb = ct.bid(0)
    q = ct.load(Q, index=(bh, qb, 0), shape=(1, BM, D), padding_mode=PAD_ZERO)
    q = ct.reshape(q, (BM, D))
    qk_scale = scale * INV_LOG_2
    m_i = ct.full((BM, 1), -math.inf, dtype=ct.float32)
    l_i = ct.full((BM, 1), 0.0, dtype=ct.float32)
    acc = ct.full((BM, D), 0.0, dtype=ct.float32)
    n_kv = ct.num_tiles(K, axis=1, shape=(1, BN, D))
    if CAUSAL:
        n_kv = min(n_kv, ct.cdiv((qb + 1) * BM, BN))
    rows = ct.reshape(qb * BM + ct.arange(BM, dtype=ct.int32), (BM, 1))
    for j in range(n_kv):
        k = ct.reshape(ct.load(K, index=(bh, j, 0), shape=(1, BN, D), padding_mode=PAD_ZERO),
                       (BN, D))
        v = ct.reshape(ct.load(V, index=(bh, j, 0), shape=(1, BN, D), padding_mode=PAD_ZERO),
                       (BN, D))
        s = ct.mma(q, ct.transpose(k), ct.full((BM, BN), 0.0, dtype=ct.float32)) * qk_scale
        cols = ct.reshape(j * BN + ct.arange(BN, dtype=ct.int32), (1, BN))
        valid = cols < K.shape[1]
        if CAUSAL:
            valid = valid & (cols <= rows)
        s = ct.where(valid, s, -math.inf)
        m_new = ct.maximum(m_i, ct.max(s, axis=1, keepdims=True))
        p = ct.exp2(s - m_new)
        alpha = ct.exp2(m_i - m_new)
        l_i = l_i * alpha + ct.sum(p, axis=1, keepdims=True)
        acc = ct.mma(p.astype(v.dtype), v, acc * alpha)
        m_i = m_new
    out = acc / l_i
    ct.store(Out, index=(bh, qb, 0), tile=ct.reshape(out.astype(Out.dtype), (1, BM, D)))
