# expect: TL060 8:23
import cuda.tile as ct

@ct.kernel
def rows(z, x, BM: ct.Constant[int], BN: ct.Constant[int]):
    j = ct.bid(1)
    t = ct.load(x, index=(ct.bid(0), j), shape=(BM, BN))
    ct.store(z, index=(ct.bid(0), 0), tile=t)
