# expect: TL060 11:23
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def k(x, y, B: ConstInt):
    t = ct.load(x, index=(ct.bid(0), 0), shape=(B, B))
    ct.store(y, index=(ct.bid(0), 0), tile=t)
    ct.store(y, index=(0, ct.bid(0)), tile=t)
