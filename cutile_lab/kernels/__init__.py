"""The kernel library: element-wise, row-wise fused, GEMM and flash-attention kernels written in
the tile language (the safe subset), with host functions that partition, launch and hand the
result back as a ``DeviceOp``:

    import cutile_lab.kernels as K
    y = K.softmax(x).sync()
    c = K.gemm(a, b).sync()

Templates (``ADD``, ``SOFTMAX``, ``GEMM``, ...) live in the family modules; tile sizes per
architecture in ``tuning``.
"""
from cutile_lab.kernels.host import add, attention, gemm, layernorm, rmsnorm, saxpy, softmax

__all__ = ["add", "saxpy", "softmax", "layernorm", "rmsnorm", "gemm", "attention"]
