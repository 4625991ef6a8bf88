import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def vector_add(a, b, c, tile_size: ConstInt):
    pid = ct.bid(0)
    ta = ct.load(a, index=(pid,), shape=(tile_size,))
    tb = ct.load(b, index=(pid,), shape=(tile_size,))
    ct.store(c, index=(pid,), tile=ta + tb)
