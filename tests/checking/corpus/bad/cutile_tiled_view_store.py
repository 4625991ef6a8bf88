# expect: TL063 8:5
import cuda.tile as ct


@ct.kernel
def k(z, x, B: ct.Constant[int]):
    tv = z.tiled_view((B,))
    tv.store((ct.bid(0) + 1,), ct.load(x, index=(ct.bid(0),), shape=(B,)))
