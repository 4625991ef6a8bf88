# expect: TL060 9:14
import cuda.tile as ct


@ct.kernel
def k(z, y, x, c: int, B: ct.Constant[int]):
    a = z if c > 0 else y
    t = ct.load(x, index=(ct.bid(0),), shape=(2 * B,))
    ct.store(a, index=(ct.bid(0),), tile=t)
    ct.store(z, index=(ct.bid(0),), tile=ct.load(x, index=(ct.bid(0),), shape=(B,)))
