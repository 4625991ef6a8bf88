# expect: TL060 11:27
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def k(x, y, n: ConstInt, B: ConstInt):
    t = ct.load(x, index=(ct.bid(0),), shape=(B,))
    for i in range(n):
        ct.store(y, index=(i,), tile=t)
