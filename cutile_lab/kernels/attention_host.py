"""The host function of flash attention (``K.attention``): the checks of q, k, v and the mask
(``TL15x`` at the caller's line), the views each launch gets — one launch over all (batch, head)
pairs where they fold into one dimension, else one per batch — and the mask's indexing in the
kernel (``flash_attention.mask_substitutions``). Shared helpers (tensors, views, chains, the
tuning target) are ``host``'s; the kernel template is ``flash_attention``'s.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from cutile_lab.kernels import flash_attention as _attention
from cutile_lab.kernels import validate as _v
from cutile_lab.kernels.host import _arch, _chain, _merge, _pow2, _tensors, _view
from cutile_lab.kernels.tuning import config, hints_text
from cutile_lab.runtime import empty, full, value

_LAYOUT = "(batch, heads, seq, head_dim) or (batch·heads, seq, head_dim)"


class _Dims(NamedTuple):
    four: bool         # (batch, heads, seq, dim) rather than (batch·heads, seq, dim)
    B: int
    H: int
    Sq: int
    D: int
    Hkv: int
    Skv: int


def _scale(fn: str, scale) -> float:
    """``scale=`` as a finite float (TL155 for anything else; was float()'s ValueError)."""
    try:
        v = float(scale)
    except (TypeError, ValueError):
        v = float("nan")
    if not math.isfinite(v):
        _v.refuse("TL155", f"`{fn}`: scale={scale!r} is not a finite number",
                  arg=("scale", None), label="this",
                  help="pass a float, or leave scale out for 1/sqrt(head_dim)")
    return v


def attention(q, k, v, *, causal: bool = False, scale: float | None = None, mask=None,
              BQ: int | None = None, BKV: int | None = None):
    """Flash-attention forward, ``F.scaled_dot_product_attention``'s layout: (batch, heads, seq,
    head_dim), or (batch·heads, seq, head_dim). K and V may have fewer heads than Q when they
    divide it (grouped-query attention) and another sequence length; ``mask`` (boolean, True
    keeps a score, or a float added to the scaled scores) broadcasts to (batch, heads, q seq,
    k seq); ``causal`` aligns the diagonal at the top left, as PyTorch does."""
    fn = "attention"
    BQ, BKV = _v.tile_size(fn, "BQ", BQ), _v.tile_size(fn, "BKV", BKV)
    named = [("q", 0, q), ("k", 1, k), ("v", 2, v)] + ([("mask", None, mask)]
                                                        if mask is not None else [])
    ts = _tensors(fn, *named)
    q, k, v = ts[:3]
    mt = ts[3] if mask is not None else None
    d = _check_qkv(fn, q, k, v)
    if causal and mask is not None:
        _v.refuse("TL155", "`attention`: pass either causal=True or a mask, not both",
                  arg=("mask", None), label="a mask with causal=True",
                  help="fold the causal mask into `mask`, or drop one of them (as PyTorch's "
                       "scaled_dot_product_attention requires)")
    if not isinstance(causal, (bool, np.bool_)):
        _v.refuse("TL155", f"`attention`: causal={causal!r} is not True or False",
                  arg=("causal", None), label="this", help="pass causal=True or causal=False")
    scale = _scale(fn, scale) if scale is not None else 1.0 / math.sqrt(max(d.D, 1))
    if mt is not None:
        _check_mask(fn, q, mt, d)
    out = empty((d.B * d.H, d.Sq, d.D) if d.four else (d.H, d.Sq, d.D), q.dtype)
    result = out.reshape(q.shape[:-1] + (d.D,)) if d.four else out
    if out.size == 0:
        return value(result)
    if d.Skv == 0:                      # a softmax over no keys: NaN, as PyTorch gives
        return full(result.shape, float("nan"), q.dtype)
    cfg = config("attention", _arch(), variant="causal" if causal else "non-causal")
    DP = max(16, _pow2(d.D))
    # the tuned blocks are for head_dim 64; a (BQ, 256) block past 64 rows outgrows shared memory
    BQ, BKV = BQ or (cfg["BQ"] if DP <= 128 else min(cfg["BQ"], 64)), BKV or cfg["BKV"]
    pieces, subs, mask_args = _launch_pieces(out, q, k, v, mt, d, scale)
    kernel = _attention.ATTENTION.kernel(dt=q.dtype.name, hints=hints_text(cfg), **subs)
    rep = d.H // d.Hkv

    def launch(o, qv, kv, vv, b):
        more = (mask_args[0](b), mask_args[1]) if mask_args else ()
        return kernel(o.partition_mut((1, BQ, DP)), qv, kv, vv, scale * math.log2(math.e),
                      *more, BKV=BKV, CAUSAL=int(bool(causal)), REP=rep, HEADS=d.H)
    if len(pieces) == 1:
        return launch(*pieces[0]).then(lambda _: result)
    return _chain([lambda p=p: launch(*p) for p in pieces], result)


def _check_qkv(fn: str, q, k, v) -> _Dims:
    """dtypes, ranks and shapes of q, k, v against each other (TL151 / TL152 / TL153)."""
    _v.dtype_in(fn, ("q", 0), q, _v.FLOATS)
    _v.same_dtype(fn, (("q", 0), q), (("k", 1), k), (("v", 2), v))
    _v.rank_in(fn, ("q", 0), q, (3, 4), _LAYOUT)
    for arg, t in ((("k", 1), k), (("v", 2), v)):
        if t.ndim != q.ndim:
            _v.rank_in(fn, arg, t, (q.ndim,), f"the rank of `q`: {_LAYOUT}")
    four = q.ndim == 4
    B = q.shape[0] if four else 1
    H, Sq, D = q.shape[-3], q.shape[-2], q.shape[-1]
    Hkv, Skv = k.shape[-3], k.shape[-2]
    if four and (k.shape[0] != B or v.shape[0] != B):
        bad = ("k", 1, k) if k.shape[0] != B else ("v", 2, v)
        _v.shape_mismatch(fn, bad[:2], bad[2], f"`{bad[0]}` has batch {bad[2].shape[0]} but `q` "
                          f"has {B}", "pass q, k and v with one batch size")
    if k.shape[-1] != D:
        _v.shape_mismatch(fn, ("k", 1), k, f"`k` has head_dim {k.shape[-1]} but `q` has {D}",
                          "queries and keys need one head_dim")
    if tuple(v.shape[-3:-1]) != (Hkv, Skv):
        _v.shape_mismatch(fn, ("v", 2), v, f"`v` {_v.shape_text(v.shape)} must have the heads and "
                          f"sequence length of `k` {_v.shape_text(k.shape)}",
                          "pass values with one row per key")
    if v.shape[-1] != D:
        _v.shape_mismatch(fn, ("v", 2), v, f"`v` has head_dim {v.shape[-1]} but `q` has {D}: "
                          "the kernel takes one head_dim for all three",
                          "pad `v`'s last dimension to the head_dim of `q`")
    if Hkv == 0 or H % Hkv:
        _v.shape_mismatch(fn, ("k", 1), k, f"`k` has {Hkv} heads, which does not divide the {H} "
                          "heads of `q`", "grouped-query attention needs the query heads to be "
                          "a multiple of the key/value heads")
    if D > 256:
        _v.shape_mismatch(fn, ("q", 0), q, f"head_dim {D} is larger than the kernel's 256",
                          "split the heads, or use head_dim <= 256")
    return _Dims(four, B, H, Sq, D, Hkv, Skv)


def _check_mask(fn: str, q, mt, d: _Dims) -> None:
    """The mask's dtype (bool, or q's) and its broadcast to (batch, heads, q seq, k seq)."""
    if mt.dtype.name != "bool":
        _v.same_dtype(fn, (("q", 0), q), (("mask", None), mt))
    if mt.ndim > 4:
        _v.rank_in(fn, ("mask", None), mt, (1, 2, 3, 4),
                   "broadcastable to (batch, heads, q seq, k seq)")
    full_shape = (d.B, d.H, d.Sq, d.Skv)
    mshape = (1,) * (4 - mt.ndim) + tuple(mt.shape)
    for want, got in zip(full_shape, mshape):
        if got not in (1, want):
            _v.shape_mismatch(fn, ("mask", None), mt, f"`mask` {_v.shape_text(mt.shape)} "
                              f"does not broadcast to (batch, heads, q seq, k seq) = "
                              f"{_v.shape_text(full_shape)}",
                              "each mask dimension must be 1 or the matching size")


def _folds(shape, strides) -> bool:
    """Do the first two dimensions fold into one (a view of the same memory)?"""
    return len(_merge(shape[:2], strides[:2])[0]) <= 1


def _launch_pieces(out, q, k, v, mt, d: _Dims, scale: float):
    """([(out, q, k, v, batch | None)] one per launch, the kernel's mask substitutions,
    (mask view of a batch, 1 / scale) or ()): one launch for all batches where (batch, heads)
    fold into one dimension for every operand, else one per batch."""
    four, B, H, Sq, D = d.four, d.B, d.H, d.Sq, d.D
    if mt is not None:
        # (batch, heads, q seq, k seq), a dimension of stride 0 (expanded) read as broadcast
        mstrides = (0,) * (4 - mt.ndim) + tuple(mt.strides)
        mshape = tuple(1 if st == 0 else n for n, st in
                       zip((1,) * (4 - mt.ndim) + tuple(mt.shape), mstrides))
        has_b, has_h = mshape[0] != 1, mshape[1] != 1
    per_batch = four and not (all(_folds(t.shape, t.strides) for t in (q, k, v)) and
                              (mt is None or not (has_b and has_h) or
                               _folds(mshape, mstrides)))
    if four and not per_batch:
        def flat(t):
            s = _merge(t.shape[:2], t.strides[:2])[1]
            return _view(t, (t.shape[0] * t.shape[1], *t.shape[2:]),
                         (s[0] if s else 1, *t.strides[2:]))
        pieces = [(_view(out, out.shape, out.strides), flat(q), flat(k), flat(v), None)]
    else:
        def heads3(t, b):
            """(heads, seq, dim) of batch ``b`` as a 3-D view."""
            if not four:
                return t
            return _view(t, t.shape[1:], t.strides[1:], t.offset + b * t.strides[0])
        pieces = [(_view(out, (H, Sq, D), (Sq * D, D, 1), out.offset + b * H * Sq * D),
                   heads3(q, b), heads3(k, b), heads3(v, b), b) for b in range(B)]
    if mt is None:
        return pieces, {}, ()
    # the mask as (index, q seq | 1, k seq | 1), and how the kernel indexes it from bh
    if per_batch or not four:
        index, lead = ("bh", 1) if has_h else ("0", None)
    else:
        index, lead = {(False, False): ("0", None), (True, False): ("bh // HEADS", 0),
                       (False, True): ("bh % HEADS", 1), (True, True): ("bh", "bh")}[
            (has_b, has_h)]
    subs = _attention.mask_substitutions(mt.dtype.name, index, mshape[2] != 1, mshape[3] != 1)

    def mask_view(b):
        off = mt.offset + (b * mstrides[0] if b is not None and has_b else 0)
        if lead == "bh":
            n, st = B * H, _merge(mshape[:2], mstrides[:2])[1][0]
        elif lead is None:
            n, st = 1, 1
        else:
            n, st = mshape[lead], mstrides[lead]
        return _view(mt, (n, mshape[2], mshape[3]), (st, mstrides[2], mstrides[3]), off)
    return pieces, subs, (mask_view, 1.0 / scale)


__all__ = ["attention"]
