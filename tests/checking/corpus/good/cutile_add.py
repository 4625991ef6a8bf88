import cuda.tile as ct

@ct.kernel
def add(z, x, y, B: ct.Constant[int]):
    tx = ct.load(x, index=(ct.bid(0),), shape=(B,), padding_mode=ct.PaddingMode.ZERO)
    ty = ct.load(y, index=(ct.bid(0),), shape=(B,))
    ct.store(z, index=(ct.bid(0),), tile=tx + ty)
