import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def rowsum(x, y, BM: ConstInt, BK: ConstInt, K: ConstInt):
    i = ct.bid(0)
    acc = ct.zeros((BM, 1), dtype=ct.float32)
    for k in range(K // BK):
        acc = acc + ct.sum(ct.load(x, index=(i, k), shape=(BM, BK)), axis=1, keepdims=True)
    ct.store(y, index=(i, 0), tile=acc)
