# expect: TL063 13:5
import cuda.tile as ct


class Put:
    @staticmethod
    def first(a, t):
        ct.store(a, index=(0,), tile=t)


@ct.kernel
def k(z, x, B: ct.Constant[int]):
    Put.first(z, ct.load(x, index=(ct.bid(0),), shape=(B,)))
