"""The kernel library: element-wise, row-wise fused, GEMM and flash-attention kernels written in
the tile language (the safe subset), with host functions that partition, launch and hand the
result back as a ``DeviceOp``:

    import cutile_lab.kernels as K
    y = K.softmax(x).sync()
    c = K.gemm(a, b).sync()

Every function checks its arguments on the host first (``validate``): a call PyTorch would
refuse, or one the kernels cannot do, is a ``TL15x`` error at the caller's line.

Templates (``ADD``, ``SOFTMAX``, ``GEMM``, ...) live in the family modules; tile sizes per
architecture in ``tuning``.
"""
from cutile_lab.kernels.attention_host import attention
from cutile_lab.kernels.gemm_host import gemm
from cutile_lab.kernels.host import add, layernorm, mul, rmsnorm, saxpy, softmax

__all__ = ["add", "mul", "saxpy", "softmax", "layernorm", "rmsnorm", "gemm", "attention"]
