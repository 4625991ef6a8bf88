import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def scale(x, y, B: ConstInt):
    idx = (ct.bid(0),)
    t = ct.load(x, index=idx, shape=(B,))
    ct.store(y, index=idx, tile=t * 2.0)
