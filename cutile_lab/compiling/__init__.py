"""Compilation: tile-language kernel -> cuTile Python -> Tile IR bytecode -> Tile IR text -> cubin.

Owns the lowering, the toolchain, the compile cache and the compile report; CUDA C++ kernels
compile with NVRTC (``nvrtc``) into the same cache. It must not touch a
GPU: everything here runs on a CPU-only machine.
"""
