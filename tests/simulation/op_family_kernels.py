"""One plain cuTile Python kernel per op family of cuTile 1.7, for the simulator-vs-GPU tests:
element-wise math, comparisons and bits, conversions (with their corners), reductions, scans,
loads and stores with every padding mode, array slices and tiled views, gather and scatter,
atomics, mma, shape ops, control flow, and constants."""
import math

import cuda.tile as ct
import numpy as np

ConstInt = ct.Constant[int]
ConstBool = ct.Constant[bool]


def row(v, T):
    return ct.reshape(v, (1, T))


PADDINGS = (ct.PaddingMode.ZERO, ct.PaddingMode.NEG_ZERO, ct.PaddingMode.NAN,
            ct.PaddingMode.POS_INF, ct.PaddingMode.NEG_INF)


@ct.kernel
def math_ops(x, y, out, T: ConstInt):
    b = ct.bid(0)
    a = ct.load(x, index=(b,), shape=(T,), padding_mode=ct.PaddingMode.ZERO)
    c = ct.load(y, index=(b,), shape=(T,), padding_mode=ct.PaddingMode.ZERO)
    pos = ct.abs(a) + 0.5
    ct.store(out, index=(0, b), tile=row(ct.exp(a), T))
    ct.store(out, index=(1, b), tile=row(ct.log(pos), T))
    ct.store(out, index=(2, b), tile=row(ct.sqrt(pos) + ct.rsqrt(pos), T))
    ct.store(out, index=(3, b), tile=row(ct.sin(a) * ct.cos(c) + ct.tanh(a), T))
    ct.store(out, index=(4, b), tile=row(ct.floor(a * 3) + ct.ceil(c * 3), T))
    ct.store(out, index=(5, b), tile=row(ct.atan2(a, c) + ct.pow(pos, 1.5), T))
    ct.store(out, index=(6, b), tile=row(a // c + a % c, T))
    ct.store(out, index=(7, b), tile=row(ct.maximum(a, c) - ct.minimum(a, c) + ct.exp2(c), T))


@ct.kernel
def int_bits(x, y, out, T: ConstInt):
    b = ct.bid(0)
    a = ct.load(x, index=(b,), shape=(T,))
    c = ct.load(y, index=(b,), shape=(T,))
    ct.store(out, index=(0, b), tile=row((a & c) | (a ^ 0x55), T))
    ct.store(out, index=(1, b), tile=row((a << 3) >> (c & 7), T))
    ct.store(out, index=(2, b), tile=row(a // (c | 1) + a % (c | 1), T))
    ct.store(out, index=(3, b), tile=row(ct.where(a > c, a, c) + ct.where(a == c, 1, 0), T))


@ct.kernel
def conversions(x, to_i8, to_u8, to_f16, to_bf16, to_f8, bits, T: ConstInt):
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(T,))
    ct.store(to_i8, index=(b,), tile=t.astype(ct.int8))         # saturates, NaN -> 0
    ct.store(to_u8, index=(b,), tile=t.astype(ct.uint8))
    ct.store(to_f16, index=(b,), tile=t.astype(ct.float16))     # overflow -> inf
    ct.store(to_bf16, index=(b,), tile=t.astype(ct.bfloat16))
    ct.store(to_f8, index=(b,), tile=t.astype(ct.float8_e4m3fn))
    ct.store(bits, index=(b,), tile=ct.bitcast(t, ct.int32))


@ct.kernel
def reductions(x, out, idx, BN: ConstInt):
    r = ct.bid(0)
    t = ct.load(x, index=(r, 0), shape=(1, BN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(r, 0), tile=ct.reshape(ct.sum(t, axis=1), (1, 1)))
    ct.store(out, index=(r, 1), tile=ct.reshape(ct.max(t, axis=1), (1, 1)))
    ct.store(out, index=(r, 2), tile=ct.reshape(ct.min(t, axis=1), (1, 1)))
    ct.store(out, index=(r, 3), tile=ct.reshape(ct.prod(t * 0.1 + 1.0, axis=1), (1, 1)))
    ct.store(out, index=(r, 4), tile=ct.reshape(
        ct.reduce(t, axis=1, func=lambda a, b: ct.maximum(a, b) + 0.0, identity=-math.inf),
        (1, 1)))
    ct.store(idx, index=(r, 0), tile=ct.reshape(ct.argmax(t, axis=1), (1, 1)))
    ct.store(idx, index=(r, 1), tile=ct.reshape(ct.argmin(t, axis=1), (1, 1)))


@ct.kernel
def scans(x, out, BN: ConstInt):
    r = ct.bid(0)
    t = ct.load(x, index=(r, 0), shape=(1, BN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(0, r, 0), tile=ct.reshape(ct.cumsum(t, axis=1), (1, 1, BN)))
    ct.store(out, index=(1, r, 0), tile=ct.reshape(ct.cumsum(t, axis=1, reverse=True),
                                                   (1, 1, BN)))
    ct.store(out, index=(2, r, 0), tile=ct.reshape(ct.cumprod(t * 0.01 + 1.0, axis=1),
                                                   (1, 1, BN)))
    ct.store(out, index=(3, r, 0), tile=ct.reshape(
        ct.scan(t, axis=1, func=lambda a, b: ct.maximum(a, b), identity=-math.inf),
        (1, 1, BN)))


@ct.kernel
def paddings(x, out, T: ConstInt):
    # tiles past the end of `x` are padded: one row of `out` per padding mode
    b = ct.bid(0)
    for p in ct.static_iter(range(5)):
        t = ct.load(x, index=(b,), shape=(T,), padding_mode=ct.static_eval(PADDINGS[p]))
        ct.store(out, index=(p, b), tile=ct.reshape(t, (1, T)))


@ct.kernel
def slices_and_views(x, out, start, T: ConstInt):
    b = ct.bid(0)
    part = x.slice(axis=0, start=start, stop=x.shape[0])
    t = ct.load(part, index=(b,), shape=(T,), padding_mode=ct.PaddingMode.ZERO)
    view = out.tiled_view((T,), padding_mode=ct.PaddingMode.ZERO)
    view.store((b,), t * 2.0)


@ct.kernel
def gather_scatter(x, idx, out, T: ConstInt):
    b = ct.bid(0)
    i = ct.load(idx, index=(b,), shape=(T,), padding_mode=ct.PaddingMode.ZERO)
    v = ct.gather(x, i, mask=i >= 0, padding_value=-1.0)
    dest = b * T + ct.arange(T, dtype=ct.int32)
    ct.scatter(out, dest, v, mask=dest < out.shape[0])


@ct.kernel
def atomics(vals, acc, T: ConstInt):
    v = ct.load(vals, index=(ct.bid(0),), shape=(T,))
    slot = ct.arange(T, dtype=ct.int32) % 4
    ct.atomic_add(acc, (0, slot), v)
    ct.atomic_max(acc, (1, slot), v)
    ct.atomic_min(acc, (2, slot), v)
    ct.atomic_or(acc, (3, slot), v & 0xF0)
    ct.atomic_and(acc, (4, slot), v | 0x0F)
    ct.atomic_xor(acc, (5, slot), v)
    ct.atomic_xchg(acc, (6, ct.bid(0) % 4), ct.bid(0) + 100)
    ct.atomic_cas(acc, (7, ct.bid(0) % 4), 0, ct.bid(0) + 1)


@ct.kernel
def mma_dtypes(a16, b16, a8, b8, c32, ci32, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    m, n = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    acc_i = ct.full((TM, TN), 0, dtype=ct.int32)
    for k in range(ct.num_tiles(a16, axis=1, shape=(TM, TK))):
        acc = ct.mma(ct.load(a16, index=(m, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO),
                     ct.load(b16, index=(k, n), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO),
                     acc)
        acc_i = ct.mma(ct.load(a8, index=(m, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO),
                       ct.load(b8, index=(k, n), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO),
                       acc_i)
    ct.store(c32, index=(m, n), tile=acc)
    ct.store(ci32, index=(m, n), tile=acc_i)


@ct.kernel
def shapes(x, out, T: ConstInt):
    t = ct.load(x, index=(0, 0), shape=(T, T))
    flat = ct.reshape(ct.permute(t, (1, 0)), (T * T,))
    ct.store(out, index=(0,), tile=flat)
    both = ct.cat((t, ct.transpose(t)), axis=0)                        # (2T, T)
    first = ct.extract(ct.reshape(both, (2 * T * T,)), index=(0,), shape=(T * T,))
    cols = ct.broadcast_to(ct.expand_dims(ct.sum(t, axis=0), 0), (T, T))
    ct.store(out, index=(1,), tile=first + ct.reshape(cols, (T * T,)))


@ct.kernel
def control_flow(x, out, LIMIT: ConstInt, SKIP_ODD: ConstBool, T: ConstInt):
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(T,), padding_mode=ct.PaddingMode.ZERO)
    acc = ct.full((T,), 0.0, dtype=ct.float32)
    i = 0
    while True:
        if i >= LIMIT:
            break
        i += 1
        if SKIP_ODD and i % 2 == 1:
            continue
        acc = acc + t * i
    if b % 2 == 0:
        acc = -acc
    ct.store(out, index=(b,), tile=acc)


@ct.kernel
def forms(x, out, counts, T: ConstInt):
    # keyword shapes, 0-d tiles (a sum, a count used by range), `t[:, None]`, `.item()`,
    # num_tiles positionally, by keyword with order="F", and through a tiled view
    t = ct.load(x, index=(0, 0), shape=(T, T))
    ct.store(out, index=(0,), tile=t.reshape(shape=(T * T,)) + ct.reshape(t, shape=(T * T,)))
    s = ct.sum(t)
    acc = ct.full((T,), 0.0, dtype=ct.float32)
    for i in range(ct.full((), 3, dtype=ct.int32)):
        acc = acc + s
    ct.store(out, index=(1,), tile=ct.reshape(ct.broadcast_to(acc[:, None], (T, T)), (T * T,)))
    c0 = ct.num_tiles(x, 0, (4, 8))
    c1 = ct.num_tiles(x, axis=1, shape=(4, 8), order="F")
    c2 = x.tiled_view((4, 8)).num_tiles(1)
    two = ct.full((1,), 2, dtype=ct.int32).item()
    ct.store(counts, index=(0,), tile=ct.cat((ct.full((1,), c0, dtype=ct.int32),
                                              ct.full((1,), c1, dtype=ct.int32)), 0))
    ct.store(counts, index=(1,), tile=ct.cat((ct.full((1,), c2, dtype=ct.int32),
                                              ct.full((1,), two, dtype=ct.int32)), 0))
