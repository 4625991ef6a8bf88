"""Pointer-style memory: gather and scatter with masks, atomics, raw memory by offset, and a
transpose through a tile permutation."""
import cuda.tile as ct
import numpy as np

ConstInt = ct.Constant[int]
EMPTY = np.int32(-1)


@ct.kernel
def embedding_gather(table, ids, out, D: ConstInt, BT: ConstInt):
    blk = ct.bid(0)
    tok = blk * BT + ct.arange(BT, dtype=ct.int32)
    idx = ct.gather(ids, tok, padding_value=0)
    rows = ct.reshape(idx, (BT, 1))
    cols = ct.reshape(ct.arange(D, dtype=ct.int32), (1, D))
    # tokens past the end and ids that are `EMPTY` read zeros
    valid = ct.reshape((tok < ids.shape[0]) & (idx != EMPTY), (BT, 1))
    vals = ct.gather(table, (rows, cols), mask=valid, padding_value=0.0)
    ct.store(out, index=(blk, 0), tile=vals)


@ct.kernel
def permute_scatter(x, perm, out, TILE: ConstInt):
    i = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)
    dest = ct.gather(perm, i, padding_value=0)
    v = ct.load(x, index=(ct.bid(0),), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.scatter(out, dest, v, mask=i < x.shape[0])


@ct.kernel
def histogram(values, counts, TILE: ConstInt):
    v = ct.load(values, index=(ct.bid(0),), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    i = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)
    # lanes past the end go to an index outside `counts`: bounds checking skips them
    bins = ct.where(i < values.shape[0], v, counts.shape[0])
    ct.atomic_add(counts, bins, 1)


@ct.kernel
def raw_copy_scaled(src, dst, factor: ct.Constant[float], TILE: ConstInt):
    offs = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)
    inside = offs < src.shape[0]
    v = src.get_raw_memory().load_offset(offs, mask=inside, padding_value=0.0)
    dst.get_raw_memory().store_offset(offs, v * factor, mask=inside)


@ct.kernel
def raw_count_positive(x, total, TILE: ConstInt):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    n = ct.sum(ct.where(t > 0, 1, 0))
    total.get_raw_memory().atomic_add_offset(0, n)


@ct.kernel
def transpose(x, out, TM: ConstInt, TN: ConstInt):
    m, n = ct.bid(0), ct.bid(1)
    t = ct.load(x, index=(m, n), shape=(TM, TN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(n, m), tile=ct.permute(t, (1, 0)))
