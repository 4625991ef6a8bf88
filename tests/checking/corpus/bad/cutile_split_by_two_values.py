# expect: TL060 11:23
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def k(x, y, B: ConstInt, N: ConstInt, M: ConstInt):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid, 0), shape=(B, B))
    ct.store(y, index=(bid // N, bid % M), tile=t)
