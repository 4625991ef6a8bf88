import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def add2d(x, y, BM: ConstInt, BN: ConstInt):
    bm, bn = ct.bid(0), ct.bid(1)
    t = ct.load(x, index=(bm, bn), shape=(BM, BN))
    ct.store(y, index=(bm, bn), tile=t + 1.0)
