import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def gemm_tile(a, b, c, N: ConstInt, BM: ConstInt, BN: ConstInt, BK: ConstInt, K: ConstInt):
    bid = ct.bid(0)
    num_bid_n = ct.cdiv(N, BN)
    bid_m = bid // num_bid_n
    bid_n = bid % num_bid_n
    acc = ct.zeros((BM, BN), dtype=ct.float32)
    for k in range(K // BK):
        ta = ct.load(a, index=(bid_m, k), shape=(BM, BK))
        tb = ct.load(b, index=(k, bid_n), shape=(BK, BN))
        acc = ct.mma(ta, tb, acc)
    ct.store(c, index=(bid_m, bid_n), tile=acc)
