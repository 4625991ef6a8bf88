"""The host function of GEMM (``K.gemm``): ``torch.matmul``'s semantics for 1-D to 3-D f16 /
bf16 / f32 tensors — the checks (``TL15x`` at the caller's line), vectors as matrices, batches
folded into one matrix where the strides allow it, else the batched kernel — and the common call
(two matrices, the tuned tiles) as one launch into a new output whose plan is kept per shape.
Shared helpers (tensors, views, the tuning target, kept plans) are ``host``'s; the kernel
templates are ``matmul``'s.
"""
from __future__ import annotations

from cutile_lab.kernels import matmul as _gemm
from cutile_lab.kernels import validate as _v
from cutile_lab.kernels.host import (_arch, _launch_planned, _merge, _planned, _pow2, _selected,
                                     _tensors, _view)
from cutile_lab.kernels.tuning import config, hints_text
from cutile_lab.runtime import empty, value, zeros
from cutile_lab.runtime.callsite import user_site
from cutile_lab.runtime.launch import launch_into


# --- GEMM: matmul up to 3-D ---------------------------------------------------------------------

def gemm(a, b, *, BM: int | None = None, BN: int | None = None, BK: int | None = None,
         schedule: str | None = None):
    """``a @ b`` with ``torch.matmul``'s semantics for 1-D to 3-D f16/bf16/f32 tensors (f32
    accumulation): 2-D in grouped tile order (``schedule="persistent"``: one instance per SM
    looping over its tiles); a 3-D operand is a batch (a 2-D one, or a batch of 1, is shared by
    every batch); a 1-D operand is a vector."""
    fn = "gemm"
    if BM is None and BN is None and BK is None and schedule is None and \
            _v.alike(a, b, _v.FLOATS, same_shape=False) and len(a.shape) == 2 == len(b.shape) \
            and a.shape[1] == b.shape[0] and a.shape[0] * b.shape[1] and a.shape[1]:
        # the common call: two matrices that multiply, the tuned tiles; every check passes
        key = ("gemm", a.shape, b.shape, a.dtype.name)
        plan = _planned(key)
        if plan is not None:
            return plan.op((a, b), user_site(2))
        return _gemm2d(None, a, b, None, None, None, None, key)
    BM, BN, BK = (_v.tile_size(fn, k, v) for k, v in (("BM", BM), ("BN", BN), ("BK", BK)))
    if schedule is not None and schedule not in ("tiles", "persistent"):
        _v.refuse("TL155", f"`gemm`: schedule={schedule!r} is not a schedule",
                  arg=("schedule", None), label="this",
                  help="use schedule=\"tiles\" or schedule=\"persistent\"")
    a, b = _tensors(fn, ("a", 0, a), ("b", 1, b))
    _v.dtype_in(fn, ("a", 0), a, _v.FLOATS)
    _v.same_dtype(fn, (("a", 0), a), (("b", 1), b))
    for arg, t in ((("a", 0), a), (("b", 1), b)):
        _v.rank_in(fn, arg, t, (1, 2, 3), "(K,), (M, K) or (batch, M, K)" if arg[0] == "a"
                   else "(K,), (K, N) or (batch, K, N)")
    # vectors as matrices (dropped from the result again, as matmul does)
    a2 = _view(a, (1, a.shape[0]), (0, a.strides[0])) if a.ndim == 1 else a
    b2 = _view(b, (b.shape[0], 1), (b.strides[0], 0)) if b.ndim == 1 else b
    ka, kb = a2.shape[-1], b2.shape[-2]
    if ka != kb:
        _v.shape_mismatch(fn, ("b", 1), b, f"`a` {_v.shape_text(a.shape)} has {ka} columns but "
                          f"`b` {_v.shape_text(b.shape)} has {kb} rows",
                          f"the inner dimensions must agree: `b` needs {ka} rows (did you mean "
                          "to transpose one of them?)")
    if a2.ndim == 3 and b2.ndim == 3 and 1 not in (a2.shape[0], b2.shape[0]) and \
            a2.shape[0] != b2.shape[0]:
        _v.shape_mismatch(fn, ("b", 1), b, f"the batches of `a` ({a2.shape[0]}) and `b` "
                          f"({b2.shape[0]}) differ", "pass batches of one size (or 1)")
    batch = max(a2.shape[0] if a2.ndim == 3 else 1, b2.shape[0] if b2.ndim == 3 else 1)
    M, N = a2.shape[-2], b2.shape[-1]
    if a2.ndim == 3 or b2.ndim == 3:
        out_shape = (batch, M, N)
    else:
        out_shape = (M, N)
    final = tuple(out_shape[:-2]) + ((M,) if a.ndim != 1 else ()) + ((N,) if b.ndim != 1 else ())
    if a.ndim == b.ndim == 2 and M * N > 0 and ka > 0:
        return _gemm2d(None, a, b, BM, BN, BK, schedule)
    c = empty(out_shape, a.dtype)
    result = c.reshape(final)
    if c.size == 0:
        return value(result)
    if ka == 0:
        return zeros(final, a.dtype)
    if a2.ndim == 3 and b2.ndim == 2 and a2.shape[0] > 1:
        folded = _merge(a2.shape[:-1], a2.strides[:-1])
        if len(folded[0]) <= 1:                    # (batch, M, K) rows fold into one matrix
            a2 = _view(a2, (batch * M, ka), (folded[1][0] if folded[1] else ka, a2.strides[-1]))
            return _gemm2d(c.reshape((batch * M, N)), a2, b2, BM, BN, BK, schedule) \
                .then(lambda _: result)
    if c.ndim == 2:
        return _gemm2d(_view(c, c.shape, c.strides), a2, b2, BM, BN, BK, schedule) \
            .then(lambda _: result)
    return _gemm_batched(_view(c, c.shape, c.strides), a2, b2, BM, BN, BK) \
        .then(lambda _: result)


def _gemm2d(c, a, b, BM, BN, BK, schedule, key=None):
    """``a @ b`` of two matrices: into ``c`` (borrowed), or a new output (``key``: the common
    call's, whose plan is kept; ``_planned``)."""
    dt = a.dtype.name
    if schedule is None:              # the tuned kernel, built once per device and dtype
        kernel, cfg = _selected("gemm", dt, dt, lambda cfg: _gemm.GEMM.kernel(
            dt=dt, hints=hints_text(cfg)))
    else:
        cfg = config("gemm", _arch(), variant=dt)
        cfg["schedule"] = schedule
        kernel = _gemm.GEMM.kernel(dt=dt, hints=hints_text(cfg))
    BM, BN, BK = BM or cfg["BM"], BN or cfg["BN"], BK or cfg["BK"]
    if c is None and key is not None:
        return _launch_planned(key, kernel, (a.shape[0], b.shape[1]), a.dtype, (BM, BN), a, b,
                               BK=BK)
    if c is None:                      # a new output, allocated when the launch runs
        return launch_into(kernel, (a.shape[0], b.shape[1]), a.dtype, (BM, BN), a, b, BK=BK)
    return kernel(c.partition_mut((BM, BN)), a, b, BK=BK)


def _gemm_batched(c, a, b, BM, BN, BK):
    """Tiles of 128 (or the matrix rounded up to a power of two, if smaller) by default."""
    M, N = c.shape[1], c.shape[2]
    BM = BM or min(128, max(16, _pow2(M)))
    BN = BN or min(128, max(16, _pow2(N)))
    BK = BK or 64
    a3 = a if a.ndim == 3 else _view(a, (1, *a.shape), (0, *a.strides))
    b3 = b if b.ndim == 3 else _view(b, (1, *b.shape), (0, *b.strides))
    kernel = _gemm.BATCHED_GEMM.kernel(dt=a.dtype.name,
                                       ab="tile_id(0)" if a3.shape[0] > 1 else "0",
                                       bb="tile_id(0)" if b3.shape[0] > 1 else "0")
    return kernel(c.partition_mut((1, BM, BN)), a3, b3, BK=BK)


__all__ = ["gemm"]
