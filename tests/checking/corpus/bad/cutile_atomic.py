# expect: TL061 7:5
import cuda.tile as ct

@ct.kernel
def total(out, x, B: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(B,))
    ct.atomic_add(out, (0,), ct.sum(t))
