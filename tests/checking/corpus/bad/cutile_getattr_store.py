# expect: TL063 7:5
import cuda.tile as ct


@ct.kernel
def k(z, x, B: ct.Constant[int]):
    getattr(ct, "store")(z, index=(0,), tile=ct.load(x, index=(ct.bid(0),), shape=(B,)))
