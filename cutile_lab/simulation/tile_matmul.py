"""Matrix multiply of tiles: ``mma`` (multiply-accumulate into an accumulator of the dtype cuTile
allows for the operands) and ``matmul`` (``@``), batched over leading axes.
"""
from __future__ import annotations

import numpy as np

from cutile_lab.simulation import dtypes as D
from cutile_lab.simulation.dtypes import INT
from cutile_lab.simulation.tile_elementwise import astype, result_dtype, to_tile
from cutile_lab.simulation.tile_value import KernelError, Tile, as_tile


# --- matrix multiply ---------------------------------------------------------------------------

_MMA_ACC = {
    "float8_e4m3fn": ("float16", "float32"), "float8_e5m2": ("float16", "float32"),
    "float16": ("float16", "float32"), "bfloat16": ("float32",), "float32": ("float32",),
    "float64": ("float64",), "tfloat32": ("float32",), "int8": ("int32",), "uint8": ("int32",),
}


def _mma_operands(x: Tile, y: Tile):
    """x and y in the type the tensor core multiplies in (products are exact there)."""
    d = x.dtype
    if d.category == INT:
        return x.a.astype(np.int64), y.a.astype(np.int64), np.int64
    if d is D.float64:
        return x.a, y.a, np.float64
    return x.a.astype(np.float32, copy=False), y.a.astype(np.float32, copy=False), np.float32


def _matmul_shapes(xs, ys):
    if xs[-1] != ys[-2]:
        raise KernelError(f"incompatible shapes for a matrix multiply: {xs} and {ys}",
                          help="x is [..., M, K] and y is [..., K, N]")
    try:
        np.broadcast_shapes(xs[:-2], ys[:-2])
    except ValueError:
        raise KernelError(f"batch dimensions of {xs} and {ys} do not broadcast") from None


def mma(x, y, /, acc, *, use_fast_acc=False) -> Tile:
    """``x @ y + acc`` in ``acc``'s dtype. Products and the sum over K are computed in float32
    (float64 for f64, exact int64 for i8/u8) and rounded once to ``acc``'s dtype; the GPU's
    tensor cores also accumulate in f32, in a different order."""
    x, y, acc = as_tile(x, "mma's x"), as_tile(y, "mma's y"), as_tile(acc, "mma's acc")
    if x.ndim < 2 or y.ndim < 2:
        raise KernelError(f"mma needs x and y of at least 2 dimensions, got {x.shape} and "
                          f"{y.shape}", help="reshape a vector to (1, K) or (K, 1)")
    if x.dtype is not y.dtype and not {x.dtype, y.dtype} <= {D.int8, D.uint8}:
        raise KernelError(f"mma needs x and y of one dtype, got {x.dtype} and {y.dtype}",
                          help="convert one with astype")
    accs = _MMA_ACC.get(x.dtype.name)
    if accs is None:
        raise KernelError(f"mma does not take {x.dtype} inputs (supported: "
                          f"{', '.join(_MMA_ACC)})")
    if acc.dtype.name not in accs:
        raise KernelError(f"mma with {x.dtype} inputs needs an accumulator of "
                          f"{' or '.join(accs)}, got {acc.dtype}",
                          help=f"create it with full(shape, 0, dtype={accs[-1]})")
    _matmul_shapes(x.shape, y.shape)
    out_shape = np.broadcast_shapes(x.shape[:-2], y.shape[:-2]) + (x.shape[-2], y.shape[-1])
    if acc.shape != out_shape:
        raise KernelError(f"mma: the accumulator has shape {acc.shape}, expected {out_shape}")
    xa, ya, ct_ = _mma_operands(x, y)
    r = np.matmul(xa, ya) + acc.a.astype(ct_)
    rd = acc.dtype
    if rd.category == INT:
        r = r.astype(np.int64).astype(np.int32)     # wraps like the hardware's i32
    return to_tile(np.asarray(r), rd) if r.dtype != rd.np else Tile(r, rd)


def matmul(x, y, /) -> Tile:
    """``x @ y`` in the promoted dtype of x and y (accumulated as ``mma`` does)."""
    x, y = as_tile(x, "matmul's x"), as_tile(y, "matmul's y")
    cd = result_dtype(x.dtype, x.a, y.dtype, y.a)
    if cd.name not in _MMA_ACC:
        raise KernelError(f"matmul does not take {cd} inputs")
    x, y = astype(x, cd), astype(y, cd)
    x2 = x.a[None, :] if x.ndim == 1 else x.a
    y2 = y.a[:, None] if y.ndim == 1 else y.a
    _matmul_shapes(x2.shape, y2.shape)
    xa, ya, _ = _mma_operands(Tile(x2, cd), Tile(y2, cd))
    r = np.matmul(xa, ya)
    if x.ndim == 1:
        r = r[..., 0, :]
    if y.ndim == 1:
        r = r[..., 0]
    acc_dt = D.dtype_by_name(_MMA_ACC[cd.name][-1])
    if acc_dt.category == INT:
        r = r.astype(np.int64).astype(np.int32)
    return astype(to_tile(np.asarray(r), acc_dt), cd)

