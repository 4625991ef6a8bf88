# expect: TL062 7:5
import cuda.tile as ct

@ct.kernel
def inc(a, B: ct.Constant[int]):
    t = ct.load(a, index=(ct.bid(0),), shape=(B,))
    ct.store(a, index=(ct.bid(0),), tile=t + 1)
