"""The tile language: the types a kernel signature is written in and the parser of kernel source.

Owns: dtypes, ``Tensor`` / ``Mut`` / ``Const`` annotations, the surface names a kernel body may use,
and turning source text into ``KernelDef`` values (``frontend``); the ownership a CUDA C++
kernel's signature declares (``cuda_signature``). It knows nothing of cuTile,
compilers or devices: lowering lives in ``cutile_lab.compiling``, checking in
``cutile_lab.checking``.
"""
from cutile_lab.language.dtypes import DType, DTYPES, dtype_by_name
from cutile_lab.language.types import Tensor, Mut, Const, TensorType, MutType, ANY
from cutile_lab.language.frontend import KernelDef, Param, KernelSource, parse_kernels

__all__ = ["DType", "DTYPES", "dtype_by_name", "Tensor", "Mut", "Const", "TensorType",
           "MutType", "ANY", "KernelDef", "Param", "KernelSource", "parse_kernels"]
