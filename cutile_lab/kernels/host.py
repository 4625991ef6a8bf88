"""Host functions of the kernel library: each takes tensors (ours, PyTorch, CuPy, or NumPy on the
simulator) and returns a ``DeviceOp`` that allocates the output (when it runs, stream-ordered on
its stream), launches the kernel into it (``runtime.launch.launch_into``) and whose result is the
output tensor. ``.sync()`` (or ``await``) runs it.
"""
from __future__ import annotations

import math

from cutile_lab.kernels import flash_attention as _attention
from cutile_lab.kernels import elementwise as _elementwise
from cutile_lab.kernels import matmul as _gemm
from cutile_lab.kernels import rowwise as _rowwise
from cutile_lab.kernels.tuning import config, device_target, hints_text
from cutile_lab import runtime as _runtime
from cutile_lab.runtime.launch import launch_into


def _tensor(x):
    if type(x) is _runtime.Tensor:
        return x
    from cutile_lab.runtime import Tensor, asarray, backend, from_numpy
    if isinstance(x, Tensor):
        return x
    import numpy as np
    if isinstance(x, np.ndarray) and backend() == "gpu":
        return from_numpy(x).sync()
    return asarray(x)


def _arch() -> tuple[str, str] | None:
    """The tuning target: (device key, architecture) of the GPU in use; None on the simulator."""
    if _runtime.backend() != "gpu":
        return None
    return device_target()


def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def add(x, y, *, B: int | None = None):
    """``x + y`` element-wise (1-D)."""
    x, y = _tensor(x), _tensor(y)
    cfg = config("add", _arch())
    B = B or cfg["B"]
    kernel = _elementwise.ADD.kernel(dt=x.dtype.name, hints=hints_text(cfg))
    return launch_into(kernel, x.shape, x.dtype, B, x, y)


def saxpy(alpha: float, x, y, *, B: int | None = None):
    """``alpha * x + y`` element-wise (1-D), computed in f32."""
    x, y = _tensor(x), _tensor(y)
    cfg = config("saxpy", _arch())
    B = B or cfg["B"]
    kernel = _elementwise.SAXPY.kernel(dt=x.dtype.name, hints=hints_text(cfg))
    return launch_into(kernel, x.shape, x.dtype, B, x, y, float(alpha))


def _rowwise_launch(family: str, template, x, extra, BR: int | None):
    rows, cols = x.shape
    cfg = config(family, _arch(), variant=str(cols))
    BR = BR or cfg["BR"]
    kernel = template.kernel(**_rowwise.substitutions(family, x.dtype.name, cols,
                                                      hints_text(cfg)))
    return launch_into(kernel, x.shape, x.dtype, (BR, _pow2(cols)), x, *extra)


def softmax(x, *, BR: int | None = None):
    """Softmax over the last axis of a 2-D tensor (statistics in f32)."""
    x = _tensor(x)
    return _rowwise_launch("softmax", _rowwise.SOFTMAX, x, (), BR)


def layernorm(x, weight, bias, eps: float = 1e-5, *, BR: int | None = None):
    """Layer normalisation over the last axis, with weight and bias."""
    x, w, b = _tensor(x), _tensor(weight), _tensor(bias)
    return _rowwise_launch("layernorm", _rowwise.LAYERNORM, x, (w, b, x.shape[1], float(eps)),
                           BR)


def rmsnorm(x, weight, eps: float = 1e-6, *, BR: int | None = None):
    """RMS normalisation over the last axis, with weight."""
    x, w = _tensor(x), _tensor(weight)
    return _rowwise_launch("rmsnorm", _rowwise.RMSNORM, x, (w, x.shape[1], float(eps)), BR)


def gemm(a, b, *, BM: int | None = None, BN: int | None = None, BK: int | None = None,
         schedule: str | None = None):
    """``a @ b`` for 2-D f16/bf16 (f32 accumulation), in grouped tile order; ``schedule=
    "persistent"`` launches one instance per SM that loops over its tiles."""
    a, b = _tensor(a), _tensor(b)
    cfg = config("gemm", _arch(), variant=a.dtype.name)
    if schedule is not None:
        cfg["schedule"] = schedule
    BM, BN, BK = BM or cfg["BM"], BN or cfg["BN"], BK or cfg["BK"]
    kernel = _gemm.GEMM.kernel(dt=a.dtype.name, hints=hints_text(cfg))
    return launch_into(kernel, (a.shape[0], b.shape[1]), a.dtype, (BM, BN), a, b, BK=BK)


def attention(q, k, v, *, causal: bool = False, scale: float | None = None,
              BQ: int | None = None, BKV: int | None = None):
    """Flash-attention forward on (batch·heads, sequence, head_dim) tensors."""
    q, k, v = _tensor(q), _tensor(k), _tensor(v)
    bh, s, d = q.shape
    cfg = config("attention", _arch(), variant="causal" if causal else "non-causal")
    BQ, BKV = BQ or cfg["BQ"], BKV or cfg["BKV"]
    scale = float(scale if scale is not None else 1.0 / math.sqrt(d))
    kernel = _attention.ATTENTION.kernel(dt=q.dtype.name, hints=hints_text(cfg))
    return launch_into(kernel, q.shape, q.dtype, (1, BQ, d), q, k, v, scale * math.log2(math.e),
                       BKV=BKV, CAUSAL=int(bool(causal)))
