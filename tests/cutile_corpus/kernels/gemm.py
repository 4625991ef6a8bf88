"""Matrix multiplication in the ways cuTile kernels write it: a 2-D grid, a grouped (swizzled)
1-D grid with a plain helper function, a persistent loop over tiles, and split-K with either
a spin lock per output tile or atomic adds."""
import cuda.tile as ct

ConstInt = ct.Constant[int]
PAD_ZERO = ct.PaddingMode.ZERO


def grouped_tile(M, N, TM, TN, GROUP, tile):
    """The (m, n) tile of linear tile id ``tile`` in groups of GROUP tile rows."""
    tiles_m = ct.cdiv(M, TM)
    tiles_n = ct.cdiv(N, TN)
    per_group = GROUP * tiles_n
    group = tile // per_group
    first_m = group * GROUP
    rows = min(tiles_m - first_m, GROUP)
    m = first_m + (tile % per_group) % rows
    n = (tile % per_group) // rows
    return m, n


@ct.kernel
def matmul(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(m, k), shape=(TM, TK), padding_mode=PAD_ZERO)
        b = ct.load(B, index=(k, n), shape=(TK, TN), padding_mode=PAD_ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(m, n), tile=acc.astype(C.dtype))


@ct.kernel
def matmul_grouped(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt, GROUP: ConstInt):
    m, n = grouped_tile(A.shape[0], B.shape[1], TM, TN, GROUP, ct.bid(0))
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(m, k), shape=(TM, TK), padding_mode=PAD_ZERO)
        b = ct.load(B, index=(k, n), shape=(TK, TN), padding_mode=PAD_ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(m, n), tile=acc.astype(C.dtype))


@ct.kernel
def matmul_persistent(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    tiles_m = ct.cdiv(A.shape[0], TM)
    tiles_n = ct.cdiv(B.shape[1], TN)
    for tile in range(ct.bid(0), tiles_m * tiles_n, ct.num_blocks(0)):
        m = tile // tiles_n
        n = tile % tiles_n
        acc = ct.full((TM, TN), 0, dtype=ct.float32)
        for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
            a = ct.load(A, index=(m, k), shape=(TM, TK), padding_mode=PAD_ZERO)
            b = ct.load(B, index=(k, n), shape=(TK, TN), padding_mode=PAD_ZERO)
            acc = ct.mma(a, b, acc)
        ct.store(C, index=(m, n), tile=acc.astype(C.dtype))


@ct.kernel
def matmul_splitk_lock(A, B, C, locks, TM: ConstInt, TN: ConstInt, TK: ConstInt,
                       SPLIT: ConstInt):
    m, n, s = ct.bid(0), ct.bid(1), ct.bid(2)
    k_tiles = ct.num_tiles(A, axis=1, shape=(TM, TK))
    per_split = ct.cdiv(k_tiles, SPLIT)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(s * per_split, min((s + 1) * per_split, k_tiles)):
        a = ct.load(A, index=(m, k), shape=(TM, TK), padding_mode=PAD_ZERO)
        b = ct.load(B, index=(k, n), shape=(TK, TN), padding_mode=PAD_ZERO)
        acc = ct.mma(a, b, acc)
    lock = m * ct.num_blocks(1) + n
    while ct.atomic_cas(locks, lock, 0, 1, memory_order=ct.MemoryOrder.ACQUIRE) == 1:
        pass
    c = ct.load(C, index=(m, n), shape=(TM, TN), padding_mode=PAD_ZERO)
    ct.store(C, index=(m, n), tile=c + acc)
    ct.atomic_xchg(locks, lock, 0, memory_order=ct.MemoryOrder.RELEASE)


@ct.kernel
def matmul_splitk_atomic(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt, SPLIT: ConstInt):
    m, n, s = ct.bid(0), ct.bid(1), ct.bid(2)
    k_tiles = ct.num_tiles(A, axis=1, shape=(TM, TK))
    per_split = ct.cdiv(k_tiles, SPLIT)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(s * per_split, min((s + 1) * per_split, k_tiles)):
        a = ct.load(A, index=(m, k), shape=(TM, TK), padding_mode=PAD_ZERO)
        b = ct.load(B, index=(k, n), shape=(TK, TN), padding_mode=PAD_ZERO)
        acc = ct.mma(a, b, acc)
    rows = ct.reshape(m * TM + ct.arange(TM, dtype=ct.int32), (TM, 1))
    cols = ct.reshape(n * TN + ct.arange(TN, dtype=ct.int32), (1, TN))
    ct.atomic_add(C, (rows, cols), acc)
