# expect: TL060 7:23
import cuda.tile as ct

@ct.kernel
def shift(z, x, B: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(B,))
    ct.store(z, index=(ct.bid(0) + 1,), tile=t)
