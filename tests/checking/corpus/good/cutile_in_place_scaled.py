# expect: TL062 8:5
import cuda.tile as ct


@ct.kernel
def scale_in_place(x, alpha, B: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(B,))
    ct.store(x, index=(ct.bid(0),), tile=t * alpha)
