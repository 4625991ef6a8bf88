"""Plain cuTile Python kernels and helpers that turn them into Tile IR bytecode, for the toolchain,
cubin and cache tests. They live in a real file because cuTile reads kernel source with inspect.
"""
from __future__ import annotations

import functools

import cuda.tile as ct
from cuda.tile._compile import compile_tile
from cuda.tile.compilation import ArrayConstraint, CallingConvention, KernelSignature


@ct.kernel
def add(z, x, y, B: ct.Constant[int]):
    tx = ct.load(x, index=(ct.bid(0),), shape=(B,), padding_mode=ct.PaddingMode.ZERO)
    ty = ct.load(y, index=(ct.bid(0),), shape=(B,))
    ct.store(z, index=(ct.bid(0),), tile=tx + ty)


@ct.kernel
def to_fp8(z, x, B: ct.Constant[int]):
    tx = ct.load(x, index=(ct.bid(0),), shape=(B,))
    ct.store(z, index=(ct.bid(0),), tile=tx.astype(ct.float8_e4m3fn))


@ct.kernel
def matmul(A, B, C, BM: ct.Constant[int], BN: ct.Constant[int], BK: ct.Constant[int]):
    acc = ct.full((BM, BN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(BM, BK))):
        a = ct.load(A, index=(ct.bid(0), k), shape=(BM, BK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, ct.bid(1)), shape=(BK, BN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(ct.bid(0), ct.bid(1)), tile=acc.astype(C.dtype))


def _array(dtype, ndim: int) -> ArrayConstraint:
    return ArrayConstraint(dtype, ndim, index_dtype=ct.int32, stride_lower_bound_incl=0,
                           alias_groups=(), may_alias_internally=False,
                           stride_constant=(None,) * (ndim - 1) + (1,), base_addr_divisible_by=16)


def _bytecode(kernel, signatures) -> tuple[bytes, list[str]]:
    result = compile_tile(kernel._annotated_function, signatures, sm_arch="sm_90",
                          return_bytecode=True, return_cubin=False)
    return bytes(result.bytecode), [s.symbol for s in result.kernel_signatures]


def _signature(params) -> KernelSignature:
    return KernelSignature(list(params), CallingConvention.cutile_python_v1())


@functools.lru_cache(maxsize=None)
def add_bytecode(*tile_sizes: int) -> tuple[bytes, list[str]]:
    """``add`` specialised for each tile size (one kernel per size, in one module)."""
    f32 = ct.float32
    sigs = [_signature([_array(f32, 1), _array(f32, 1), _array(f32, 1), b])
            for b in (tile_sizes or (128,))]
    return _bytecode(add, sigs)


@functools.lru_cache(maxsize=None)
def fp8_bytecode() -> tuple[bytes, list[str]]:
    """Stores fp8, which tileiras refuses for sm_80 (with a source location)."""
    return _bytecode(to_fp8, [_signature([_array(ct.float8_e4m3fn, 1), _array(ct.float32, 1),
                                          128])])


@functools.lru_cache(maxsize=None)
def matmul_bytecode(bm: int = 64, bn: int = 64, bk: int = 32) -> tuple[bytes, list[str]]:
    f16 = ct.float16
    return _bytecode(matmul, [_signature([_array(f16, 2), _array(f16, 2), _array(f16, 2),
                                          bm, bn, bk])])
