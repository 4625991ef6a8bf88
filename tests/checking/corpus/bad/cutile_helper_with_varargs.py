# expect: TL063 13:5
import cuda.tile as ct

ConstInt = ct.Constant[int]


def put(*args):
    ct.store(args[0], index=(ct.bid(0),), tile=args[1])


@ct.kernel
def k(x, y, B: ConstInt):
    put(y, ct.load(x, index=(ct.bid(0),), shape=(B,)))
