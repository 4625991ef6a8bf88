"""Element-wise kernels written as cuTile Python users write them: module-level aliases,
PaddingMode constants, NumPy and math constants, and @ct.function helpers."""
import math

import cuda.tile as ct
import numpy as np

ConstInt = ct.Constant[int]
ConstFloat = ct.Constant[float]
PAD_ZERO = ct.PaddingMode.ZERO
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
GELU_COEF = np.float32(0.044715)


@ct.function
def tanh_gelu(x):
    inner = SQRT_2_OVER_PI * (x + GELU_COEF * x * x * x)
    return 0.5 * x * (1.0 + ct.tanh(inner))


@ct.kernel
def vector_add(a, b, c, TILE: ConstInt):
    bid = ct.bid(0)
    ta = ct.load(a, index=(bid,), shape=(TILE,), padding_mode=PAD_ZERO)
    tb = ct.load(b, index=(bid,), shape=(TILE,), padding_mode=PAD_ZERO)
    ct.store(c, index=(bid,), tile=ta + tb)


@ct.kernel
def saxpy(x, y, out, alpha, TILE: ConstInt):
    i = ct.bid(0)
    tx = ct.load(x, index=(i,), shape=(TILE,), padding_mode=PAD_ZERO)
    ty = ct.load(y, index=(i,), shape=(TILE,), padding_mode=PAD_ZERO)
    ct.store(out, index=(i,), tile=alpha * tx + ty)


@ct.kernel
def gelu_2d(x, out, TM: ConstInt, TN: ConstInt):
    m, n = ct.bid(0), ct.bid(1)
    t = ct.load(x, index=(m, n), shape=(TM, TN), padding_mode=PAD_ZERO)
    y = tanh_gelu(t.astype(ct.float32))
    ct.store(out, index=(m, n), tile=y.astype(out.dtype))


@ct.kernel
def clamp_scale(x, out, lo: ConstFloat, hi: ConstFloat, TILE: ConstInt):
    i = ct.bid(0)
    t = ct.load(x, index=(i,), shape=(TILE,), padding_mode=PAD_ZERO)
    t = ct.where(t < lo, lo, t)
    t = ct.minimum(t, hi)
    ct.store(out, index=(i,), tile=t)


@ct.kernel
def relu_to_half(x, out, TILE: ConstInt):
    i = ct.bid(0)
    t = ct.load(x, index=(i,), shape=(TILE,), padding_mode=PAD_ZERO)
    # float32 -> float16 is converted explicitly; the store keeps out's dtype
    ct.store(out, index=(i,), tile=ct.maximum(t, 0.0).astype(ct.float16))
