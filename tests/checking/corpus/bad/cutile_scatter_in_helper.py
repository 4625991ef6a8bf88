# expect: TL060 15:5
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.function
def spread(y, idx, t):
    ct.scatter(y, idx, t)


@ct.kernel
def k(x, y, B: ConstInt):
    t = ct.load(x, index=(ct.bid(0),), shape=(B,))
    spread(y, ct.arange(B, dtype=ct.int32), t)
