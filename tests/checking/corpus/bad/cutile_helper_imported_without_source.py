# expect: TL063 8:5
import cuda.tile as ct
from mylib import write_tile


@ct.kernel
def k(x, y, B: ct.Constant[int]):
    write_tile(y, ct.load(x, index=(ct.bid(0),), shape=(B,)))
