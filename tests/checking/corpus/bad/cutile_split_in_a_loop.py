# expect: TL060 17:31
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def k(x, y, B: ConstInt, N: ConstInt):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid, 0), shape=(B, B))
    q = 0
    for i in range(2):
        n = ct.cdiv(N, i + 1)
        if i == 0:
            q = bid // n
        else:
            ct.store(y, index=(q, bid % n), tile=t)
