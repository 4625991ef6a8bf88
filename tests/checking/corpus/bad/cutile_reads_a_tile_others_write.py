# expect: TL060 7:9
# expect: TL062 8:5
import cuda.tile as ct

@ct.kernel
def smooth(z, B: ct.Constant[int]):
    t = ct.load(z, index=(ct.bid(0) + 1,), shape=(B,))
    ct.store(z, index=(ct.bid(0),), tile=t * 0.5)
