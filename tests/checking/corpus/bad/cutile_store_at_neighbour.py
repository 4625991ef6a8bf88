# expect: TL060 10:23
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def shift(x, y, B: ConstInt):
    t = ct.load(x, index=(ct.bid(0),), shape=(B,))
    ct.store(y, index=(ct.bid(0) + 1,), tile=t)
