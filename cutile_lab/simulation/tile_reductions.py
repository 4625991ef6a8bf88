"""Reductions and scans over tile axes: ``sum``/``prod``/``max``/``min``/``argmax``/``argmin``
(with ``keepdims``), ``cumsum``/``cumprod``, and the user-function ``reduce``/``scan`` over one
tile or a tuple of tiles.
"""
from __future__ import annotations

import numpy as np

from cutile_lab.simulation import dtypes as D
from cutile_lab.simulation.dtypes import BOOL, FLOAT
from cutile_lab.simulation.tile_elementwise import astype, to_tile
from cutile_lab.simulation.tile_shapes import axis_arg, full
from cutile_lab.simulation.tile_value import KernelError, Tile, as_tile, scalar_tile


# --- reductions and scans ----------------------------------------------------------------------

def _reduce_axes(axis, ndim: int, *, allow_tuple=True, op="reduction"):
    if axis is None:
        return None
    if isinstance(axis, (tuple, list)):
        if not allow_tuple:
            raise KernelError(f"{op} does not support a tuple of axes")
        axes = tuple(sorted({axis_arg(a, ndim) for a in axis}))
        return axes
    if type(axis) is Tile or not isinstance(axis, int) or isinstance(axis, bool):
        raise KernelError(f"{op}: axis must be a constant int"
                          f"{' or a tuple of ints' if allow_tuple else ''}, got "
                          f"{'a tile' if type(axis) is Tile else repr(axis)}",
                          help="for the elementwise maximum/minimum of two tiles use "
                               "maximum(a, b) / minimum(a, b)")
    return (axis_arg(axis, ndim),)


def _reduce_input(x, op) -> Tile:
    t = as_tile(x, f"the argument of {op}")
    if t.dtype.category == BOOL:
        t = astype(t, D.int32)
    return t


def _simple_reduce(op: str, x, axis, keepdims):
    t = _reduce_input(x, op)
    axes = _reduce_axes(axis, t.ndim, op=op)
    rd = t.dtype
    cd = rd.compute
    a = t.a if t.a.dtype == cd else t.a.astype(cd)
    if op == "sum":
        r = np.sum(a, axis=axes, dtype=cd, keepdims=keepdims)
    elif op == "prod":
        r = np.prod(a, axis=axes, dtype=cd, keepdims=keepdims)
    else:
        raise AssertionError(op)
    return to_tile(np.asarray(r), rd)


def sum(x, /, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=False) -> Tile:
    return _simple_reduce("sum", x, axis, keepdims)


def prod(x, /, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=False) -> Tile:
    return _simple_reduce("prod", x, axis, keepdims)


def _minmax(op: str, x, axis, keepdims, propagate_nan):
    t = _reduce_input(x, op)
    axes = _reduce_axes(axis, t.ndim, op=op)
    rd = t.dtype
    a = t.a
    if rd.category == FLOAT:
        cd = rd.compute
        if a.dtype != cd:
            a = a.astype(cd)
        if propagate_nan:
            r = (np.max if op == "max" else np.min)(a, axis=axes, keepdims=keepdims)
        else:   # NaNs are ignored; all-NaN gives the identity (-inf for max, +inf for min)
            uf = np.fmax if op == "max" else np.fmin
            init = -np.inf if op == "max" else np.inf
            r = uf.reduce(a, axis=axes, keepdims=keepdims, initial=init)
    else:
        r = (np.max if op == "max" else np.min)(a, axis=axes, keepdims=keepdims)
    return to_tile(np.asarray(r), rd)


def max(x, /, axis=None, *, keepdims=False, flush_to_zero=False, propagate_nan=False) -> Tile:
    return _minmax("max", x, axis, keepdims, propagate_nan)


def min(x, /, axis=None, *, keepdims=False, flush_to_zero=False, propagate_nan=False) -> Tile:
    return _minmax("min", x, axis, keepdims, propagate_nan)


def _argminmax(op: str, x, axis, keepdims, propagate_nan):
    t = _reduce_input(x, op)
    axes = _reduce_axes(axis, t.ndim, allow_tuple=False, op=op)
    a = t.a
    if t.dtype.category == FLOAT:
        a = a.astype(t.dtype.compute) if a.dtype != t.dtype.compute else a
        if not propagate_nan:   # NaN is the worst value
            a = np.where(np.isnan(a), -np.inf if op == "argmax" else np.inf, a)
    f = np.argmax if op == "argmax" else np.argmin
    if axes is None:
        r = f(np.reshape(a, -1))
        if keepdims:
            r = np.reshape(r, (1,) * t.ndim)
    else:
        r = f(a, axis=axes[0], keepdims=keepdims)
    return Tile(np.asarray(r, dtype=np.int32), D.int32)


def argmax(x, /, axis=None, *, keepdims=False, propagate_nan=False) -> Tile:
    return _argminmax("argmax", x, axis, keepdims, propagate_nan)


def argmin(x, /, axis=None, *, keepdims=False, propagate_nan=False) -> Tile:
    return _argminmax("argmin", x, axis, keepdims, propagate_nan)


def _scan(op: str, x, axis, reverse):
    t = _reduce_input(x, op)
    ax = axis_arg(axis, t.ndim) if t.ndim else 0
    rd = t.dtype
    cd = rd.compute
    a = t.a if t.a.dtype == cd else t.a.astype(cd)
    if reverse:
        a = np.flip(a, ax)
    r = (np.cumsum if op == "cumsum" else np.cumprod)(a, axis=ax, dtype=cd)
    if reverse:
        r = np.flip(r, ax)
    return to_tile(np.ascontiguousarray(r), rd)


def cumsum(x, /, axis=0, *, reverse=False, rounding_mode=None, flush_to_zero=False) -> Tile:
    return _scan("cumsum", x, axis, reverse)


def cumprod(x, /, axis=0, *, reverse=False, rounding_mode=None, flush_to_zero=False) -> Tile:
    return _scan("cumprod", x, axis, reverse)


def _as_group(x):
    tuple_mode = isinstance(x, (tuple, list))
    xs = [as_tile(t) for t in (x if tuple_mode else (x,))]
    try:
        shape = np.broadcast_shapes(*(t.shape for t in xs))
    except ValueError:
        raise KernelError("the tiles do not broadcast to a common shape") from None
    xs = [Tile(np.broadcast_to(t.a, shape), t.dtype) for t in xs]
    return tuple_mode, xs, shape


def _identities(identity, xs, tuple_mode):
    ids = tuple(identity) if tuple_mode else (identity,)
    if len(ids) != len(xs):
        raise KernelError(f"{len(ids)} identity values for {len(xs)} tiles")
    return ids


def _call_combiner(func, tuple_mode, n, args, what):
    res = func(*args)
    res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
    if len(res) != n:
        raise KernelError(f"the {what} function returned {len(res)} values, expected {n}")
    return [as_tile(r) for r in res]


def _fold_start(x, axis, identity):
    """(tuple mode, the tiles, their shape, the axis, the accumulators at the identity) of a
    custom reduction or scan along ``axis``."""
    tuple_mode, xs, shape = _as_group(x)
    ax = axis_arg(axis, len(shape))
    ids = _identities(identity, xs, tuple_mode)
    out_shape = shape[:ax] + shape[ax + 1:]
    acc = [full(out_shape, i, t.dtype) if out_shape else scalar_tile(i, t.dtype)
           for i, t in zip(ids, xs)]
    return tuple_mode, xs, shape, ax, acc


def reduce(x, /, axis, func, identity, *, keepdims=False):
    """Custom reduction, folded along ``axis`` with ``func`` applied to whole slices at once
    (one call per position along the axis, each vectorised over the other axes)."""
    tuple_mode, xs, shape, ax, acc = _fold_start(x, axis, identity)
    for k in range(shape[ax]):
        sl = [Tile(np.take(t.a, k, axis=ax), t.dtype) for t in xs]
        acc = _call_combiner(func, tuple_mode, len(xs), acc + sl, "reduce")
        acc = [astype(a, t.dtype) for a, t in zip(acc, xs)]
    if keepdims:
        acc = [Tile(np.expand_dims(a.a, ax), a.dtype) for a in acc]
    return tuple(acc) if tuple_mode else acc[0]


def scan(x, /, axis, func, identity, *, reverse=False):
    """Custom inclusive scan along ``axis`` (sequential over the axis, vectorised across)."""
    tuple_mode, xs, shape, ax, acc = _fold_start(x, axis, identity)
    outs = [np.empty(shape, dtype=t.dtype.np) for t in xs]
    order = range(shape[ax] - 1, -1, -1) if reverse else range(shape[ax])
    for k in order:
        sl = [Tile(np.take(t.a, k, axis=ax), t.dtype) for t in xs]
        acc = _call_combiner(func, tuple_mode, len(xs), acc + sl, "scan")
        acc = [astype(a, t.dtype) for a, t in zip(acc, xs)]
        for o, a in zip(outs, acc):
            idx = [slice(None)] * len(shape)
            idx[ax] = k
            o[tuple(idx)] = a.a
    res = [Tile(o, t.dtype) for o, t in zip(outs, xs)]
    return tuple(res) if tuple_mode else res[0]

