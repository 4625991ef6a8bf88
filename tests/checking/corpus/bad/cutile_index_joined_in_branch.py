# expect: TL060 12:23
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def k(x, y, c, B: ConstInt):
    row = ct.bid(0)
    if c > 0:
        row = 0
    ct.store(y, index=(row,), tile=ct.load(x, index=(ct.bid(0),), shape=(B,)))
