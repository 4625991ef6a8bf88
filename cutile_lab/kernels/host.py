"""Host functions of the kernel library: each takes tensors (ours, PyTorch, CuPy, or NumPy on the
simulator), checks them (``validate``: a refused call is a ``TL15x`` error at the caller's line,
before anything is compiled or launched), and returns a ``DeviceOp`` whose result is the output
tensor (``.sync()`` or ``await`` runs it). On the common path (one launch over a contiguous
output) the output is allocated when the launch runs, stream-ordered on its stream, and the
kernel launched into it (``runtime.launch.launch_into``): no host wait, no hand-back; the
other paths allocate it first and lend it to the launches (``partition_mut``).

They take what their PyTorch counterparts take: the row-wise functions reduce over the last
dimension (or ``dim=``) of a tensor of any rank, with rows of any length (a row longer than one
tile goes to the chunked kernels); ``gemm`` has ``matmul``'s semantics up to 3-D; ``add``/``mul``
broadcast. ``attention`` lives in ``attention_host`` (it uses the shared helpers here).
Sections below: shared helpers, then one per function family. ``gemm`` lives in ``gemm_host``
and ``attention`` in ``attention_host`` (both use the shared helpers here).
"""
from __future__ import annotations

import itertools
import math
import numbers

import numpy as np

from cutile_lab.kernels import elementwise as _elementwise
from cutile_lab.kernels import rowwise as _rowwise
from cutile_lab import runtime as _runtime
from cutile_lab.kernels import validate as _v
from cutile_lab.kernels.tuning import device_target, hints_text, shared_config, stored
from cutile_lab.runtime import (Tensor, asarray, backend, device_info, empty, from_numpy, full,
                                value)
from cutile_lab.runtime.callsite import user_site
from cutile_lab.runtime.launch import launch_into
from cutile_lab.runtime.launch.output import output_plan


# --- shared helpers -----------------------------------------------------------------------------

def _arch() -> tuple[str, str] | None:
    """The tuning target: (device key, architecture) of the GPU in use; None on the simulator."""
    if _runtime.backend() != "gpu":
        return None
    return device_target()


_SELECTED: dict = {}    # (family, target, variant, key) -> (kernel, the configuration it was built for)


def _selected(family: str, variant: str | None, key, build):
    """(kernel, configuration) of ``family`` on the device in use: ``build(cfg)`` makes the
    kernel once per (family, device, variant, ``key``) — the template substitutions ``key``
    stands for — and again only when the tuning store gives a new configuration. What a library
    call pays per call for its kernel: two dict lookups. ``cfg`` is shared: read it only."""
    target = _arch()
    cfg = shared_config(family, target, variant)
    k = (family, target, variant, key)
    hit = _SELECTED.get(k)
    if hit is None or hit[1] is not cfg:
        hit = _SELECTED[k] = (build(cfg), cfg)
    return hit


# a common call's key (function, shapes, strides, dtype: everything its checks and its kernel's
# choice depend on) -> (tuning store, device target, the OutputPlan of its launch)
_PLANNED: dict = {}


def _planned(key):
    """The ``OutputPlan`` kept for the common call ``key`` (kept only once the call's checks
    passed: ``key`` holds all they depend on), while the tuning store and the device in use are
    those it was made with; else None. A call of a known key then pays a lookup and the op."""
    hit = _PLANNED.get(key)
    if hit is not None and hit[0] is stored() and hit[1] == _arch():
        return hit[2]
    return None


def _launch_planned(key, kernel, shape, dtype, tile, *args, **kwargs):
    """``launch_into(kernel, shape, dtype, tile, *args, **kwargs)`` of the common call ``key``
    (checked), its plan kept for the next call of ``key`` (``_planned``)."""
    plan = output_plan(kernel, shape, dtype, tile, args, kwargs)
    if plan is None:
        return launch_into(kernel, shape, dtype, tile, *args, **kwargs)
    if len(_PLANNED) > 1024:
        _PLANNED.clear()
    _PLANNED[key] = (stored(), _arch(), plan)
    return plan.op(args, user_site(2))


def _sm_count() -> int:
    if backend() != "gpu":
        return 8
    return device_info().sm_count


def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _tensors(fn: str, *named) -> list:
    """Each ``(name, position, value)`` as a tensor on the current backend, all on one device."""
    if len(named) == 1:
        name, pos, value = named[0]
        return [_v.tensor(value, (name, pos), fn)]
    out = [((name, pos), _v.tensor(value, (name, pos), fn)) for name, pos, value in named]
    _v.same_device(fn, out)
    return [t for _, t in out]


def _view(t, shape, strides, offset: int | None = None):
    """A view of ``t``'s memory. A dimension of size 1 gets the stride it would have in a
    contiguous tensor (never 0: kernel arguments' strides also describe the memory layout to
    the compiler, which expects them aligned)."""
    shape, strides = tuple(shape), list(strides)
    inner = 1
    for d in range(len(shape) - 1, -1, -1):
        if shape[d] == 1:
            strides[d] = inner
        inner = max(inner, abs(strides[d]) * shape[d])
    return t._view(shape, tuple(strides), t.offset if offset is None else offset)


def _merge(shape, strides) -> tuple[list, list]:
    """Adjacent dimensions folded into one wherever the strides allow it (a view of the same
    memory); size-1 dimensions dropped."""
    dims = [(n, s) for n, s in zip(shape, strides) if n != 1]
    out: list[list[int]] = []
    for n, s in dims:
        if out and out[-1][1] == s * n:
            out[-1] = [out[-1][0] * n, s]
        else:
            out.append([n, s])
    return [n for n, _ in out], [s for _, s in out]


def _chain(ops, result):
    """Run the zero-argument op builders ``ops`` one after the other on one stream; the chain's
    result is ``result``."""

    def step(build):
        return lambda _: build()
    op = value(None)
    for build in ops:
        op = op.then(step(build))
    return op.then(lambda _: result)


def _outer_index(shape):
    """Every index tuple of ``shape`` (row-major)."""
    return itertools.product(*(range(n) for n in shape))


# --- element-wise: add, mul, saxpy --------------------------------------------------------------

def _scalar_operand(y, like):
    """A Python number as a 0-d tensor of ``like``'s dtype (``add(x, 2.0)`` as in PyTorch)."""
    from cutile_lab.runtime.dtypes import numpy_dtype
    arr = np.asarray(y, dtype=numpy_dtype(like.dtype))
    if like.backend == "gpu":
        return from_numpy(arr.reshape(1)).sync().reshape(())
    return asarray(arr.reshape(1)).reshape(())


# (shape, strides of x, strides of y) of non-empty operands found contiguous
_CONTIGUOUS: set = set()


def _remember(known: set, key) -> bool:
    """Add ``key`` to ``known`` (a per-layout memo of a check that passed); True."""
    if len(known) > 1024:
        known.clear()
    known.add(key)
    return True


def _binary(name: str, x, y, B: int | None):
    fn = name
    if B is not None:
        B = _v.tile_size(fn, "B", B)
    if _v.alike(x, y, _v.NUMERIC):
        # the common call: every check below passes (one shape, one dtype, one device)
        plan = _planned((name, B, x.shape, x.strides, y.strides, x.dtype.name))
        if plan is not None:
            return plan.op((x, y), user_site(2))
        key = (x.shape, x.strides, y.strides)
        if key in _CONTIGUOUS or (x.size and x.is_contiguous and y.is_contiguous and
                                  _remember(_CONTIGUOUS, key)):
            return _binary_launch(name, x, y, x.shape, B,
                                  (name, B, x.shape, x.strides, y.strides, x.dtype.name))
    elif isinstance(y, numbers.Number) and not isinstance(y, bool):
        [x] = _tensors(fn, ("x", 0, x))
        _v.dtype_in(fn, ("x", 0), x, _v.NUMERIC)
        y = _scalar_operand(y, x)
    else:
        x, y = _tensors(fn, ("x", 0, x), ("y", 1, y))
        _v.dtype_in(fn, ("x", 0), x, _v.NUMERIC)
        _v.same_dtype(fn, (("x", 0), x), (("y", 1), y))
    shape = _v.broadcast_shape(fn, (("x", 0), x), (("y", 1), y))
    if math.prod(shape) and x.shape == y.shape == shape and x.is_contiguous and \
            y.is_contiguous:
        return _binary_launch(name, x, y, shape, B)
    z = empty(shape, x.dtype)
    if z.size == 0:
        return value(z)
    return _broadcast_launch(name, z, x, y, B)


def _binary_launch(name: str, x, y, shape, B: int | None, key=None):
    """``x (op) y`` of two contiguous tensors of ``shape``: one launch into a new output
    (``key``: the common call's, whose plan is kept; ``_planned``)."""
    dt = x.dtype.name
    kernel, cfg = _selected("add", None, (name, dt), lambda cfg: _elementwise.BINARY.kernel(
        dt=dt, hints=hints_text(cfg), name=name, op=_elementwise.OPERATORS[name]))
    if len(shape) == 1:
        if key is not None:
            return _launch_planned(key, kernel, shape, x.dtype, B or cfg["B"], x, y)
        return launch_into(kernel, shape, x.dtype, B or cfg["B"], x, y)
    flat = (math.prod(shape),)
    return launch_into(kernel, flat, x.dtype, B or cfg["B"], x.reshape(flat),
                       y.reshape(flat)).then(lambda z: z.reshape(shape))


def _broadcast_launch(name: str, z, x, y, B: int | None):
    """``z = x (op) y`` with broadcasting: dimensions merged where x, y and z all allow it, at
    most three per launch (launches over the outer ones if more remain)."""
    n = z.ndim
    xs = (1,) * (n - x.ndim) + tuple(x.shape), (0,) * (n - x.ndim) + tuple(x.strides)
    ys = (1,) * (n - y.ndim) + tuple(y.shape), (0,) * (n - y.ndim) + tuple(y.strides)
    # group the output's dimensions (size-1 ones dropped) into runs that merge for every operand
    groups: list[list[int]] = []
    for d in range(n):
        if z.shape[d] == 1:
            continue
        if groups:
            p = groups[-1][-1]
            ok = all((sh[d] == 1) == (sh[p] == 1) and (sh[d] == 1 or st[p] == st[d] * sh[d])
                     for sh, st in (xs, ys)) and z.strides[p] == z.strides[d] * z.shape[d]
            if ok:
                groups[-1].append(d)
                continue
        groups.append([d])

    def canon(shape, strides):
        dims = [(math.prod(shape[d] for d in g), strides[g[-1]]) for g in groups]
        return [n for n, _ in dims], [s for _, s in dims]

    zc, xc, yc = canon(z.shape, z.strides), canon(*xs), canon(*ys)
    outer = max(0, len(groups) - 3)
    inner = len(groups) - outer
    pad = 3 - inner

    def piece(t, c, idx):
        shape, strides = c
        offset = t.offset + sum(i * s for i, s, n in zip(idx, strides, shape[:outer]) if n != 1)
        sh = [1] * pad + shape[outer:]
        st = [0] * pad + strides[outer:]
        return _view(t, sh, st, offset)

    full_x = tuple([False] * pad + [n != 1 for n in xc[0][outer:]])
    full_y = tuple([False] * pad + [n != 1 for n in yc[0][outer:]])
    kernel = _elementwise.BINARY_BROADCAST.kernel(
        dt=z.dtype.name, name=name, op=_elementwise.OPERATORS[name],
        **_elementwise.broadcast_substitutions(full_x, full_y))
    zshape = [1] * pad + zc[0][outer:]
    budget = B or 2048
    tile = []
    for size in reversed(zshape):
        t = min(_pow2(size), max(1, budget))
        tile.insert(0, t)
        budget //= t
    ops = []
    for idx in _outer_index(zc[0][:outer]):
        zp, xp, yp = piece(z, zc, idx), piece(x, xc, idx), piece(y, yc, idx)
        ops.append(lambda zp=zp, xp=xp, yp=yp: kernel(zp.partition_mut(tuple(tile)), xp, yp))
    return _chain(ops, z)


def add(x, y, *, B: int | None = None):
    """``x + y`` element-wise, with PyTorch's broadcasting (``y`` may be a Python number)."""
    return _binary("add", x, y, B)


def mul(x, y, *, B: int | None = None):
    """``x * y`` element-wise, with PyTorch's broadcasting (``y`` may be a Python number)."""
    return _binary("mul", x, y, B)


def saxpy(alpha: float, x, y, *, B: int | None = None):
    """``alpha * x + y`` element-wise (tensors of one shape), computed in f32."""
    fn = "saxpy"
    B = _v.tile_size(fn, "B", B)
    x, y = _tensors(fn, ("x", 1, x), ("y", 2, y))
    _v.dtype_in(fn, ("x", 1), x, _v.FLOATS)
    _v.same_dtype(fn, (("x", 1), x), (("y", 2), y))
    if tuple(x.shape) != tuple(y.shape):
        _v.shape_mismatch(fn, ("y", 2), y, f"`y` {_v.shape_text(y.shape)} must have the shape "
                          f"of `x` {_v.shape_text(x.shape)}",
                          "pass tensors of one shape (saxpy does not broadcast)")
    try:
        alpha = float(alpha)
    except (TypeError, ValueError):
        _v.refuse("TL155", f"`saxpy`: alpha={alpha!r} is not a number", arg=("alpha", 0),
                  label="this", help="pass a Python float")
    shape = tuple(x.shape)
    if x.size == 0:
        return value(empty(shape, x.dtype))
    x, y = _contiguous_flat(x), _contiguous_flat(y)
    dt = x.dtype.name
    kernel, cfg = _selected("saxpy", None, dt,
                            lambda cfg: _elementwise.SAXPY.kernel(dt=dt, hints=hints_text(cfg)))
    op = launch_into(kernel, (x.size,), x.dtype, B or cfg["B"], x, y, alpha)
    return op if len(shape) == 1 else op.then(lambda z: z.reshape(shape))


def _contiguous_flat(t):
    """``t`` as a 1-D view, or a contiguous 1-D copy of it (made by the broadcasting kernel)."""
    if t.is_contiguous:
        return t.reshape((t.size,))
    copy = empty(t.shape, t.dtype)
    _broadcast_launch("add", copy, t, _scalar_operand(0, t), None).sync()
    return copy.reshape((t.size,))


# --- row-wise: softmax and the norms, over one dimension ---------------------------------------

def _rows(x, dim: int):
    """(pieces, out, result): ``x`` seen as 2-D (rows, n) views with ``dim`` last, one piece per
    launch (one, unless the leading dimensions cannot be folded into one), the output allocated
    in that order, and the output seen in ``x``'s order."""
    nd = max(x.ndim, 1)
    shape = tuple(x.shape) or (1,)
    strides = tuple(x.strides) or (1,)
    perm = [i for i in range(nd) if i != dim] + [dim]
    pshape = [shape[i] for i in perm]
    pstrides = [strides[i] for i in perm]
    out = empty(pshape, x.dtype)
    inverse = [perm.index(i) for i in range(nd)]
    result = out._view(tuple(out.shape[i] for i in inverse)[:x.ndim] if x.ndim else (),
                       tuple(out.strides[i] for i in inverse)[:x.ndim] if x.ndim else (),
                       out.offset)
    n, col_stride = pshape[-1], pstrides[-1]
    lead, lead_strides = _merge(pshape[:-1], pstrides[:-1])
    outer, row_n = lead[:-1], (lead[-1] if lead else 1)
    row_stride = lead_strides[-1] if lead else n * max(col_stride, 1)
    pieces = []
    for idx in _outer_index(outer):
        off = sum(i * s for i, s in zip(idx, lead_strides[:-1]))
        # the output is contiguous: its rows of this outer index start at this flat row
        out_rows = sum(i * math.prod(lead[k + 1:]) for k, i in enumerate(idx))
        xv = _view(x, (row_n, n), (row_stride, col_stride), x.offset + off)
        ov = _view(out, (row_n, n), (n, 1), out.offset + out_rows * n)
        pieces.append((ov, xv))
    return pieces, out, result


# (function, shape, strides, dtype, dim) of calls found to be the common case (whole rows of a
# contiguous tensor in one tile, the library's tile size): every check below passed for them
_WHOLE_ROWS: set = set()


def _rowwise_call(fn: str, family: str, x, dim, extra: tuple, BR):
    """Checks, then one launch (or chain) per piece of ``_rows``: whole rows in one tile where
    they fit, else the two launches of ``_long_rows``."""
    key = (fn, x.shape, x.strides, x.dtype.name, dim) if BR is None and type(dim) is int \
        else None
    if key is not None:
        plan = _planned(key)
        if plan is not None:
            return plan.op((x, *extra), user_site(2))
    if key is None or key not in _WHOLE_ROWS:
        _v.dtype_in(fn, ("x", 0), x, _v.FLOATS)
        d = _v.dim_index(fn, dim, x.ndim)
        BR = _v.tile_size(fn, "BR", BR)
        if not (x.ndim >= 1 and d == x.ndim - 1 and x.size and x.is_contiguous and
                _rowwise.fits_one_tile(x.shape[-1], x.dtype.itemsize)):
            return _rowwise_pieces(family, x, d, extra, BR)
        if key is not None:
            _remember(_WHOLE_ROWS, key)
    # the common case: whole rows of a contiguous tensor, one launch into a new output
    shape, n = x.shape, x.shape[-1]
    if len(shape) == 2:
        return _whole_rows(family, None, x, extra, BR, key)
    op = _whole_rows(family, None, x.reshape((x.size // n, n)), extra, BR)
    return op.then(lambda o: o.reshape(shape))


def _rowwise_pieces(family: str, x, d: int, extra: tuple, BR):
    """``_rowwise_call`` of all but the common case: one launch (or chain) per piece."""
    pieces, out, result = _rows(x, d)
    n = pieces[0][1].shape[1] if pieces else 0
    if x.size == 0:
        return value(result)
    if _rowwise.fits_one_tile(n, x.dtype.itemsize):
        build = [lambda o=o, xv=xv: _whole_rows(family, o, xv, extra, BR) for o, xv in pieces]
    else:
        build = [lambda o=o, xv=xv: _long_rows(family, o, xv, extra, BR) for o, xv in pieces]
    if len(build) == 1:
        return build[0]().then(lambda _: result)
    return _chain(build, result)


def _whole_rows(family: str, out, x, extra, BR, key=None):
    """Whole rows of ``x`` in one tile each: into ``out`` (borrowed), or a new output (``key``:
    the common call's, whose plan is kept; ``_planned``)."""
    rows, cols = x.shape
    dt = x.dtype.name

    def build(cfg):
        template = {"softmax": _rowwise.SOFTMAX, "layernorm": _rowwise.LAYERNORM,
                    "rmsnorm": _rowwise.RMSNORM}[family]
        return template.kernel(**_rowwise.substitutions(family, dt, cols, hints_text(cfg)))
    kernel, cfg = _selected(family, str(cols), dt, build)
    tile = (BR or cfg["BR"], _pow2(cols))
    if out is None and key is not None:
        return _launch_planned(key, kernel, (rows, cols), x.dtype, tile, x, *extra)
    if out is None:                    # a new output, allocated when the launch runs
        return launch_into(kernel, (rows, cols), x.dtype, tile, x, *extra)
    return kernel(out.partition_mut(tile), x, *extra)


def _long_rows(family: str, out, x, extra, BR):
    """A row longer than one tile: per block of rows, the statistics launch, then the apply
    launch (``long_rows_launches``)."""
    rows, cols = x.shape
    plan = _rowwise.long_row_plan(family, x.dtype.name, rows, cols, _sm_count(), BR,
                                  itemsize=x.dtype.itemsize)
    # (rows, G) views of (rows, G_tile) tensors: rows start 16-byte aligned for the apply loads
    stats = [empty((rows, plan.G_tile), "f32")[:, :plan.G] for _ in range(plan.n_stats)]
    return long_rows_launches(family, plan, out, x, extra, stats)


def long_rows_launches(family: str, plan, out, x, extra, stats):
    """The launches of ``plan`` (``rowwise.long_row_plan``) as one chain: ``out`` and the
    statistics tensors ``stats`` ((rows, G) f32 each) are borrowed and written in place. Also
    what ``benchmarks/bench_rowwise.py --long-rows`` times."""
    rows, cols = x.shape
    scalars = (cols,) if family in ("softmax", "layernorm") else ()
    weights, tail = extra[:-2], extra[-2:]           # (w, b | w), then (n, eps)
    ops = []
    for r0 in range(0, rows, plan.block_rows):
        r1 = min(rows, r0 + plan.block_rows)
        xb, ob, sb = x[r0:r1], out[r0:r1], [t[r0:r1] for t in stats]

        def block(xb=xb, ob=ob, sb=sb):
            first = plan.stats(*[t.partition_mut((plan.BR, 1)) for t in sb], xb, *scalars,
                               plan.nch, plan.G, BN=plan.BN_stats)
            args = (xb, *weights, *sb, *tail) if family != "softmax" else (xb, *sb)
            return first.then(lambda _: plan.apply(ob.partition_mut((plan.BR, plan.BN_apply)),
                                                   *args, G=plan.G_tile))
        ops.append(block)
    return ops[0]() if len(ops) == 1 else _chain(ops, None)


def softmax(x, dim: int = -1, *, BR: int | None = None):
    """Softmax over dimension ``dim`` (the last by default) of a tensor of any rank, statistics
    in f32; rows of any length."""
    fn = "softmax"
    x = _v.tensor(x, ("x", 0), fn)
    return _rowwise_call(fn, "softmax", x, dim, (), BR)


def _norm_weight(fn: str, arg, t, n: int, like, fill: float):
    """A norm's weight or bias: ``None`` (ones / zeros, as PyTorch's default) or a tensor of the
    row's length and the input's dtype."""
    if t is None:
        return full((n,), fill, like.dtype).sync()
    if type(t) is Tensor and t.dtype is like.dtype and t.shape == (n,) and t.strides == (1,) \
            and t.storage.backend == like.storage.backend:
        return t                      # the common call: every check below passes
    [t] = _tensors(fn, (*arg, t))
    _v.same_dtype(fn, (("x", 0), like), (arg, t))
    if t.ndim != 1 or t.shape[0] != n:
        _v.shape_mismatch(fn, arg, t, f"`{arg[0]}` has shape {_v.shape_text(t.shape)}, but the "
                          f"rows of `x` have {n} elements",
                          f"pass a 1-D `{arg[0]}` of {n} elements (one per column)")
    if not t.is_contiguous:
        t = _contiguous_flat(t)
    return t


def layernorm(x, weight=None, bias=None, eps: float = 1e-5, *, BR: int | None = None):
    """Layer normalisation over the last dimension of a tensor of any rank, with ``weight`` and
    ``bias`` of the row's length (``None``: ones / zeros); rows of any length."""
    fn = "layernorm"
    x = _v.tensor(x, ("x", 0), fn)
    _v.dtype_in(fn, ("x", 0), x, _v.FLOATS)
    n = x.shape[-1] if x.ndim else 1
    w = _norm_weight(fn, ("weight", 1), weight, n, x, 1.0)
    b = _norm_weight(fn, ("bias", 2), bias, n, x, 0.0)
    eps = _v.positive_number(fn, "eps", eps)
    return _rowwise_call(fn, "layernorm", x, -1, (w, b, n, eps), BR)


def rmsnorm(x, weight=None, eps: float = 1e-6, *, BR: int | None = None):
    """RMS normalisation over the last dimension of a tensor of any rank, with ``weight`` of the
    row's length (``None``: ones); rows of any length."""
    fn = "rmsnorm"
    x = _v.tensor(x, ("x", 0), fn)
    _v.dtype_in(fn, ("x", 0), x, _v.FLOATS)
    n = x.shape[-1] if x.ndim else 1
    w = _norm_weight(fn, ("weight", 1), weight, n, x, 1.0)
    eps = _v.positive_number(fn, "eps", eps)
    return _rowwise_call(fn, "rmsnorm", x, -1, (w, n, eps), BR)
