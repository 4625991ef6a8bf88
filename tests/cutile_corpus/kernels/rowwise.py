"""Row-wise kernels: softmax, layer norm and RMS norm, forward and backward."""
import cuda.tile as ct

ConstInt = ct.Constant[int]
ConstFloat = ct.Constant[float]
PAD_ZERO = ct.PaddingMode.ZERO
PAD_NEG_INF = ct.PaddingMode.NEG_INF


@ct.kernel
def softmax_rows(x, out, BLOCK_N: ConstInt):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, BLOCK_N), padding_mode=PAD_NEG_INF)
    t = t.astype(ct.float32)
    m = ct.max(t, axis=1, keepdims=True)
    e = ct.exp(t - m)
    y = e / ct.sum(e, axis=1, keepdims=True)
    ct.store(out, index=(row, 0), tile=y.astype(out.dtype))


@ct.kernel
def layernorm_fwd(x, w, b, out, mean, rstd, N, eps: ConstFloat, BLOCK_N: ConstInt):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, BLOCK_N), padding_mode=PAD_ZERO)
    t = t.astype(ct.float32)
    mu = ct.sum(t, axis=1) / N
    cols = ct.arange(BLOCK_N, dtype=ct.int32)
    d = ct.where(ct.reshape(cols, (1, BLOCK_N)) < N, t - ct.reshape(mu, (1, 1)), 0.0)
    var = ct.sum(d * d, axis=1) / N
    r = ct.rsqrt(var + eps)
    tw = ct.load(w, index=(0,), shape=(BLOCK_N,), padding_mode=PAD_ZERO)
    tb = ct.load(b, index=(0,), shape=(BLOCK_N,), padding_mode=PAD_ZERO)
    y = d * ct.reshape(r, (1, 1)) * ct.reshape(tw, (1, BLOCK_N)) + ct.reshape(tb, (1, BLOCK_N))
    ct.store(out, index=(row, 0), tile=y.astype(out.dtype))
    ct.store(mean, index=(row,), tile=mu)
    ct.store(rstd, index=(row,), tile=r)


@ct.kernel
def layernorm_bwd_dx(dy, x, w, mean, rstd, dx, dw_partial, db_partial, N,
                     BLOCK_N: ConstInt):
    row = ct.bid(0)
    tx = ct.load(x, index=(row, 0), shape=(1, BLOCK_N), padding_mode=PAD_ZERO)
    tdy = ct.load(dy, index=(row, 0), shape=(1, BLOCK_N), padding_mode=PAD_ZERO)
    tw = ct.reshape(ct.load(w, index=(0,), shape=(BLOCK_N,), padding_mode=PAD_ZERO),
                    (1, BLOCK_N))
    mu = ct.reshape(ct.load(mean, index=(row,), shape=(1,)), (1, 1))
    r = ct.reshape(ct.load(rstd, index=(row,), shape=(1,)), (1, 1))
    cols = ct.reshape(ct.arange(BLOCK_N, dtype=ct.int32), (1, BLOCK_N))
    xhat = ct.where(cols < N, (tx - mu) * r, 0.0)
    g = tdy * tw
    c1 = ct.sum(xhat * g, axis=1, keepdims=True) / N
    c2 = ct.sum(g, axis=1, keepdims=True) / N
    ct.store(dx, index=(row, 0), tile=(g - xhat * c1 - c2) * r)
    # per-row partial gradients of the weight and bias: summed on the host
    ct.store(dw_partial, index=(row, 0), tile=tdy * xhat)
    ct.store(db_partial, index=(row, 0), tile=tdy)


@ct.kernel
def rmsnorm_fwd(x, w, out, N, eps: ConstFloat, BLOCK_N: ConstInt):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, BLOCK_N), padding_mode=PAD_ZERO)
    t = t.astype(ct.float32)
    ms = ct.sum(t * t, axis=1, keepdims=True) / N
    tw = ct.load(w, index=(0,), shape=(BLOCK_N,), padding_mode=PAD_ZERO)
    y = t * ct.rsqrt(ms + eps) * ct.reshape(tw.astype(ct.float32), (1, BLOCK_N))
    ct.store(out, index=(row, 0), tile=y.astype(out.dtype))


@ct.kernel
def rmsnorm_bwd(dy, x, w, dx, dw, N, eps: ConstFloat, BLOCK_N: ConstInt):
    row = ct.bid(0)
    tx = ct.load(x, index=(row, 0), shape=(1, BLOCK_N), padding_mode=PAD_ZERO)
    tdy = ct.load(dy, index=(row, 0), shape=(1, BLOCK_N), padding_mode=PAD_ZERO)
    tw = ct.reshape(ct.load(w, index=(0,), shape=(BLOCK_N,), padding_mode=PAD_ZERO),
                    (1, BLOCK_N))
    r = ct.rsqrt(ct.sum(tx * tx, axis=1, keepdims=True) / N + eps)
    g = tdy * tw
    c = ct.sum(g * tx, axis=1, keepdims=True) * r * r / N
    ct.store(dx, index=(row, 0), tile=(g - tx * c) * r)
    # the weight's gradient is a sum over rows: atomic adds of each row's share
    cols = ct.arange(BLOCK_N, dtype=ct.int32)
    share = ct.reshape(tdy * tx * r, (BLOCK_N,))
    ct.atomic_add(dw, cols, share)
