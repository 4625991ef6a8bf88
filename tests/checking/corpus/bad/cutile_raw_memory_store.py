# expect: TL060 11:5
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def k(x, y, B: ConstInt):
    t = ct.load(x, index=(ct.bid(0),), shape=(B,))
    ct_mem = y.get_raw_memory()
    ct_mem.store_offset(ct.arange(B, dtype=ct.int32), t)
