"""Kernels written for cuTile Python as they are usually written -- nothing here knows about
cutile_lab. Notebook 8 brings this file into the lab as it is."""
import math

import cuda.tile as ct
import numpy as np

ConstInt = ct.Constant[int]
PAD_ZERO = ct.PaddingMode.ZERO
LOG2E = np.float32(1 / math.log(2))


@ct.function
def exp_via_exp2(t):
    return ct.exp2(t * LOG2E)


@ct.kernel
def vector_add(a, b, c, TILE: ConstInt):
    bid = ct.bid(0)
    ta = ct.load(a, index=(bid,), shape=(TILE,), padding_mode=PAD_ZERO)
    tb = ct.load(b, index=(bid,), shape=(TILE,), padding_mode=PAD_ZERO)
    ct.store(c, index=(bid,), tile=ta + tb)


@ct.kernel
def softmax_rows(x, out, BLOCK_N: ConstInt):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, BLOCK_N), padding_mode=ct.PaddingMode.NEG_INF)
    e = exp_via_exp2(t - ct.max(t, axis=1, keepdims=True))
    ct.store(out, index=(row, 0), tile=e / ct.sum(e, axis=1, keepdims=True))


@ct.kernel
def total(x, out, TILE: ConstInt):
    # a classic slip: every block stores its partial sum into the same element
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,), padding_mode=PAD_ZERO)
    ct.store(out, index=(0,), tile=ct.reshape(ct.sum(t), (1,)))
