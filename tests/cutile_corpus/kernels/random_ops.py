"""Dropout with a counter-based integer hash (no random state on the device)."""
import cuda.tile as ct
import numpy as np

ConstInt = ct.Constant[int]
ConstFloat = ct.Constant[float]
MIX_1 = np.uint32(0x7FEB352D)
MIX_2 = np.uint32(0x846CA68B)


@ct.function
def hash32(x):
    x = x ^ (x >> 16)
    x = x * MIX_1
    x = x ^ (x >> 15)
    x = x * MIX_2
    return x ^ (x >> 16)


@ct.kernel
def dropout(x, out, seed, p: ConstFloat, TILE: ConstInt):
    i = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)
    r = hash32(i.astype(ct.uint32) ^ seed)
    keep = (r >> 8).astype(ct.float32) * (1.0 / 16777216.0) >= p
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(ct.bid(0),), tile=ct.where(keep, t * (1.0 / (1.0 - p)), 0.0))
