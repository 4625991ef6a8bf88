"""Reductions and scans: a column loop per row, a prefix sum, an arg-max, and a racy kernel."""
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def row_sums(x, out, BM: ConstInt, BN: ConstInt):
    m = ct.bid(0)
    acc = ct.full((BM,), 0.0, dtype=ct.float32)
    for j in range(ct.num_tiles(x, axis=1, shape=(BM, BN))):
        t = ct.load(x, index=(m, j), shape=(BM, BN), padding_mode=ct.PaddingMode.ZERO)
        acc += ct.sum(t.astype(ct.float32), axis=1)
    ct.store(out, index=(m,), tile=acc)


@ct.kernel
def prefix_sum_rows(x, out, BN: ConstInt):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, BN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(row, 0), tile=ct.cumsum(t, axis=1))


@ct.kernel
def argmax_rows(x, out, BN: ConstInt):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, BN), padding_mode=ct.PaddingMode.NEG_INF)
    ct.store(out, index=(row,), tile=ct.argmax(t, axis=1).astype(out.dtype))


@ct.kernel
def total_racy(x, out, TILE: ConstInt):
    # every block stores its partial sum to element 0: a race (the last writer wins)
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(0,), tile=ct.reshape(ct.sum(t), (1,)))
