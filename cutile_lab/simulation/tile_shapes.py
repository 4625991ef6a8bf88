"""Tile ops that move, select or create elements without arithmetic: shapes (``reshape``,
``broadcast_to``, ``expand_dims``, ``permute``, ``transpose``, ``cat``), sub-tiles (``extract``,
``insert``), ``where``, and the factories (``full``, ``zeros``, ``ones``, ``arange``, ``astile``).
Tile shapes must be powers of two, as in cuTile.
"""
from __future__ import annotations

import operator

import numpy as np

from cutile_lab.simulation import dtypes as D
from cutile_lab.simulation.dtypes import convert
from cutile_lab.simulation.tile_elementwise import (add, astype, compute_operand, dtype_arg, mul,
                                                    result_dtype)
from cutile_lab.simulation.tile_value import KernelError, Tile, operand, as_tile


# --- shapes ------------------------------------------------------------------------------------

def _const_int(v, what: str) -> int:
    if type(v) is int:
        return v
    if isinstance(v, (bool, float)) or v is None:
        raise KernelError(f"{what} must be an integer constant, got {v!r}")
    if type(v) is Tile:
        raise KernelError(f"{what} must be a compile-time constant, not a tile",
                          help="use a literal or a Const[int] parameter")
    try:
        return operator.index(v)
    except TypeError:
        raise KernelError(f"{what} must be an integer constant, got {v!r}") from None


def _shape_arg(shape, what: str = "shape", *, pow2: bool = True,
               allow_neg1: bool = False) -> tuple[int, ...]:
    if isinstance(shape, (tuple, list)):
        dims = tuple(_const_int(s, what) for s in shape)
    else:
        dims = (_const_int(shape, what),)
    for i, n in enumerate(dims):
        if allow_neg1 and n == -1:
            continue
        if n <= 0:
            raise KernelError(f"dimension #{i} of {what} {dims} is not positive")
        if pow2 and n & (n - 1):
            raise KernelError(f"dimension #{i} of {what} {dims} is not a power of two",
                              help="tile dimensions must be powers of two, e.g. 64, 128, 256")
    return dims


def check_pow2_shape(shape, what="tile shape") -> tuple[int, ...]:
    return _shape_arg(shape, what)


def axis_arg(axis, ndim: int, what="axis") -> int:
    a = _const_int(axis, what)
    if not -ndim <= a < ndim:
        raise KernelError(f"{what} {a} is out of range for a tile of rank {ndim}")
    return a % ndim


def reshape(x, /, shape) -> Tile:
    t = as_tile(x)
    dims = _shape_arg(shape, "shape", pow2=False, allow_neg1=True) if shape != () else ()
    try:
        return Tile(np.reshape(t.a, dims), t.dtype)
    except ValueError:
        raise KernelError(f"cannot reshape a tile of shape {t.shape} ({t.size} elements) to "
                          f"{dims}") from None


def broadcast_to(x, /, shape) -> Tile:
    t = as_tile(x)
    dims = _shape_arg(shape)
    try:
        return Tile(np.broadcast_to(t.a, dims), t.dtype)
    except ValueError:
        raise KernelError(f"cannot broadcast a tile of shape {t.shape} to {dims}") from None


def expand_dims(x, /, axis) -> Tile:
    t = as_tile(x)
    return Tile(np.expand_dims(t.a, axis_arg(axis, t.ndim + 1)), t.dtype)


def permute(x, /, axes) -> Tile:
    t = as_tile(x)
    if not isinstance(axes, (tuple, list)) or len(axes) != t.ndim:
        raise KernelError(f"permute needs {t.ndim} axes for a tile of shape {t.shape}, "
                          f"got {axes!r}")
    ax = tuple(axis_arg(a, t.ndim) for a in axes)
    if len(set(ax)) != len(ax):
        raise KernelError(f"permute axes {tuple(axes)} repeat an axis")
    return Tile(np.transpose(t.a, ax), t.dtype)


def transpose(x, /, axis0=None, axis1=None) -> Tile:
    t = as_tile(x)
    if t.ndim < 2:
        raise KernelError(f"cannot transpose a tile of shape {t.shape} (fewer than 2 axes)")
    if axis0 is None and axis1 is None:
        if t.ndim != 2:
            raise KernelError("give axis0 and axis1 to transpose a tile of more than 2 axes")
        a0, a1 = 0, 1
    elif axis0 is None or axis1 is None:
        raise KernelError("transpose axes must both be given or both be None")
    else:
        a0, a1 = axis_arg(axis0, t.ndim), axis_arg(axis1, t.ndim)
    return Tile(np.swapaxes(t.a, a0, a1), t.dtype)


def cat(tiles, /, axis) -> Tile:
    if not isinstance(tiles, (tuple, list)) or not tiles:
        raise KernelError("cat takes a tuple of (at most two) tiles")
    ts = [as_tile(t) for t in tiles]
    if len(ts) == 1:
        return ts[0]
    if len(ts) > 2:
        raise KernelError(f"cat supports at most 2 tiles, got {len(ts)}")
    x, y = ts
    if x.dtype is not y.dtype:
        raise KernelError(f"cat needs tiles of one dtype, got {x.dtype} and {y.dtype}")
    if x.ndim != y.ndim:
        raise KernelError(f"cat needs tiles of one rank, got {x.shape} and {y.shape}")
    ax = axis_arg(axis, x.ndim)
    for i, (a, b) in enumerate(zip(x.shape, y.shape)):
        if i != ax and a != b:
            raise KernelError(f"cat: shapes {x.shape} and {y.shape} differ outside axis {ax}")
    n = x.shape[ax] + y.shape[ax]
    if n & (n - 1):
        raise KernelError(f"cat result length {n} along axis {ax} is not a power of two")
    return Tile(np.concatenate([x.a, y.a], axis=ax), x.dtype)


def _subtile_index(t: Tile, shape, index, noun):
    dims = _shape_arg(shape, f"{noun} shape", pow2=False) if shape != () else (1,) * t.ndim
    if len(dims) != t.ndim:
        raise KernelError(f"{noun} shape {dims} does not match the tile's rank {t.ndim}")
    idx = index if isinstance(index, (tuple, list)) else (index,)
    if len(idx) != t.ndim:
        raise KernelError(f"index {tuple(idx)} does not match the tile's rank {t.ndim}")
    slices = []
    for i, (n, s, k) in enumerate(zip(t.shape, dims, idx)):
        if n % s:
            raise KernelError(f"tile shape {t.shape} is not divisible by {noun} shape {dims}")
        k = operator.index(k)
        if not 0 <= k < n // s:
            raise KernelError(f"{noun} index {k} is out of range at dimension #{i}: valid "
                              f"range is [0, {n // s})")
        slices.append(slice(k * s, (k + 1) * s))
    return tuple(slices), dims


def extract(x, /, index, shape) -> Tile:
    t = as_tile(x)
    sl, dims = _subtile_index(t, shape, index, "result")
    out = np.array(np.asarray(t.a)[sl])
    return Tile(out.reshape(()) if shape == () else out, t.dtype)


def insert(x, /, index, value) -> Tile:
    t = as_tile(x)
    v = as_tile(value)
    shape = v.shape if v.ndim else ()
    sl, dims = _subtile_index(t, shape, index, "value")
    out = np.array(t.a)
    out[sl] = convert(v.a, v.dtype, t.dtype).reshape(dims)
    return Tile(out, t.dtype)


def where(cond, x, y, /) -> Tile:
    ca, cdt = operand(cond)
    xa, xd = operand(x)
    ya, yd = operand(y)
    rd = result_dtype(xd, xa, yd, ya)
    c = np.asarray(ca) if cdt is D.bool_ else np.asarray(ca) != 0
    st = rd.np
    xv = np.asarray(convert(xa, xd, rd) if xd is not None else compute_operand(xa, None, rd, st))
    yv = np.asarray(convert(ya, yd, rd) if yd is not None else compute_operand(ya, None, rd, st))
    try:
        return Tile(np.asarray(np.where(c, xv, yv)), rd)
    except ValueError:
        raise KernelError(f"where: shapes {c.shape}, {xv.shape} and {yv.shape} cannot be "
                          "broadcast together") from None


# --- factories ---------------------------------------------------------------------------------

def full(shape, fill_value, dtype) -> Tile:
    dims = _shape_arg(shape)
    dt = dtype_arg(dtype)
    fa, fd = operand(fill_value)
    if fd is not None and np.ndim(fa):
        raise KernelError(f"full: the fill value must be a scalar, got a tile of shape "
                          f"{np.shape(fa)}")
    v = convert(fa, fd, dt)
    return Tile(np.full(dims, v, dtype=dt.np), dt)


def zeros(shape, dtype) -> Tile:
    dt = dtype_arg(dtype)
    return Tile(np.zeros(_shape_arg(shape), dtype=dt.np), dt)


def ones(shape, dtype) -> Tile:
    dt = dtype_arg(dtype)
    return Tile(np.ones(_shape_arg(shape), dtype=dt.np), dt)


def arange(size, /, *, dtype, start=0, step=1) -> Tile:
    (n,) = _shape_arg(size, "arange size")
    dt = dtype_arg(dtype)
    base = Tile(np.arange(n, dtype=np.int32), D.int32)
    r = astype(base, dt)
    if not (isinstance(step, int) and step == 1):
        r = mul(r, astype(step, dt))
    if not (isinstance(start, int) and start == 0):
        r = add(r, astype(start, dt))
    return r


def astile(value, /, *, dtype) -> Tile:
    dt = dtype_arg(dtype)
    if isinstance(value, (tuple, list)):
        def shape_of(v, path):
            if isinstance(v, (tuple, list)):
                n = len(v)
                if n == 0 or n & (n - 1):
                    raise KernelError(f"astile: tuple length {n} at {path} is not a power "
                                      "of two")
                inner = {shape_of(e, path + (i,)) for i, e in enumerate(v)}
                if len(inner) != 1:
                    raise KernelError(f"astile: uneven nesting at {path}")
                return (n,) + inner.pop()
            return ()
        shape = shape_of(value, ())

        def flat(v):
            if isinstance(v, (tuple, list)):
                for e in v:
                    yield from flat(e)
            else:
                yield v
        vals = [astype(v, dt).a for v in flat(value)]
        return Tile(np.array(vals, dtype=dt.np).reshape(shape), dt)
    return astype(value, dt)

