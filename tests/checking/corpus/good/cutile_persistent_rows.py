import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def rows(x, y, n_rows: ConstInt, TILE: ConstInt):
    for r in range(ct.bid(0), n_rows, ct.num_blocks(0)):
        t = ct.load(x, index=(r, 0), shape=(1, TILE))
        ct.store(y, index=(r, 0), tile=t * t)
