# expect: TL060 10:23
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def k(x, y, B: ConstInt):
    t = ct.load(x, index=(ct.bid(0), ct.bid(1)), shape=(B, B))
    ct.store(y, index=(ct.bid(0), 0), tile=t)
