import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.function
def put(y, t):
    ct.store(y, index=(ct.bid(0),), tile=t)


@ct.kernel
def copy(x, y, B: ConstInt):
    put(y, ct.load(x, index=(ct.bid(0),), shape=(B,)))
