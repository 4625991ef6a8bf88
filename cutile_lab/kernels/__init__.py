"""The kernel library: element-wise, row-wise fused, GEMM and flash-attention kernels written in
the tile language (the safe subset), with host functions that partition, launch and hand the
result back. Reference tests compare each with a float64 NumPy computation.
"""
