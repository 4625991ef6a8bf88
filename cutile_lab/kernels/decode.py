"""Decode-step kernels: what one token of a transformer decoder costs at batch 1 (or a small
batch), where every weight is read once per token and the step is bound by HBM bandwidth.

- GEMV (``y = W x``, W row-major (N, K)): each instance owns ``BM`` outputs of one batch row and
  streams its (BM, K) slice of W in (BM, BK) tiles, multiplying by the (1, BK) slice of x and
  accumulating element-wise in an f32 (BM, BK) register tile, reduced once at the end (no
  reduction inside the loop). The variants fuse what would otherwise be a pass of its own:
  ``RMS_GEMV`` normalises x (RMSNorm, computed by every instance from x itself: x is a few
  KiB, W is MiBs) in the same pass as the product: ``W (g * x)`` is accumulated while the sum of
  squares is, and the row sums are scaled by ``rsqrt(mean(x²) + eps)`` at the end, so the first
  weight loads wait for nothing (the normalised x is not rounded to the storage dtype before
  the product, as in a reference that normalises first: bf16 results differ in rounding only), ``RMS_GEMV_SWIGLU`` computes ``silu(Wg xn) * (Wu xn)`` from two weights in one
  pass, ``GEMV_RESIDUAL`` adds the residual stream in its epilogue, ``RMS_GEMV_ARGMAX`` (the LM
  head) also writes its tile's maximum and where it is, so that the greedy token costs one small
  reduction over tiles (``ARGMAX``, one load of up to 16384 tile maxima: Qwen3's 151936-token
  vocabulary in 16-row tiles is 9496) instead of a pass over the logits.
- ``ATTENTION_DECODE``: one query row per (batch, KV head) against the KV cache, split along the
  sequence into ``CH``-row blocks so that a short batch fills the GPU (the block is loaded
  first, so that its loads overlap the position -> RoPE table -> q/k chain); each instance applies the
  q/k RMSNorm and the rotary embedding to its group's query heads and the new key itself, and
  writes the step's key/value row into the cache. The cache is partitioned into the blocks the
  instances own (``Mut``): the instance whose block holds the position merges the new row into
  it, and every instance stores its block back (a store on every path: the safe language's
  rule). With ``MMA=1`` (16-bit storage) the scores and P·V run on the tensor cores: the group's
  G query rows, padded with zero rows to ``MQ`` (16), are the B operand of ``K · qᵀ`` (the cache
  block is the A operand as loaded: no transpose of the block), and ``Pᵀ`` (rounded to the
  storage dtype, as a reference that multiplies bf16 probabilities by V does) the A operand of
  ``P · V``; the small loads of that kernel (position, tables, q/k/v rows, norm weights) are
  plain loads (``allow_tma=False``): 11.1 against 12.0 us with TMA on an H100. ``MMA=0`` (f32
  storage) keeps the broadcast products in f32, where the tensor cores may round to TF32.
  ``ATTENTION_DECODE_UNSAFE`` owns the same blocks but stores only the new row, from the
  one instance whose block holds it, in a justified ``unsafe`` block (a partial store at a
  device-held index); the benchmark measures one against the other.
  ``ATTENTION_COMBINE`` merges the blocks' partial results (log-sum-exp in base 2), in one
  pass over the blocks that hold positions (``BS`` blocks a load: one load for up to
  ``BS * CH`` positions). Its output tile is (1, G, D) of the (batch x KV heads, G, D) result:
  ``G = 1`` gives one instance per query head (4x the instances of one per KV group, a quarter
  of the bytes each: 17.0 -> 7.7 us a launch on an H100 at 69 blocks of 16 rows).
- ``EMBED`` gathers the token's embedding row; ``ARGMAX`` reduces the LM head's tile maxima to
  the greedy token and advances the position.

The position of the step is a device tensor (``pos``, shape (1, 1)) that the kernels read and
``ARGMAX`` advances, so one captured CUDA graph serves every step: nothing of a launch changes
from one token to the next. Indices loaded from device memory only ever index loads (a load out
of bounds reads padding) — the stores of the safe kernels all go to their own tiles.
"""
from cutile_lab.kernels.library import template

GEMV_RESIDUAL = template('''
@kernel(opt_level=3{hints})
def gemv_residual_{dt}(y: Mut[Tensor[{dt}, "1, BM"]], x: Tensor[{dt}, "?, ?"],
                       w: Tensor[{dt}, "?, ?"], r: Tensor[{dt}, "?, ?"], BK: Const[int] = 512):
    acc = full((BM, BK), 0.0, dtype=f32)
    for k in range(num_tiles(w, 1, (BM, BK))):
        tx = load_tile(x, (tile_id(0), k), (1, BK)).astype(f32)
        acc = acc + load_tile(w, (tile_id(1), k), (BM, BK){lat}).astype(f32) * tx
    out = reshape(sum(acc, axis=1), (1, BM)).astype({dt}).astype(f32)
    y.store((out + load_tile_like(r, y).astype(f32)).astype({dt}))
''', lat="")

RMS_GEMV = template('''
@kernel(opt_level=3{hints})
def rms_gemv_{dt}(y: Mut[Tensor[{dt}, "1, BM"]], x: Tensor[{dt}, "?, ?"],
                  nw: Tensor[{dt}, "?"], w: Tensor[{dt}, "?, ?"], n: i32, eps: f32,
                  BK: Const[int] = 512):
    ss = full((1, BK), 0.0, dtype=f32)
    acc = full((BM, BK), 0.0, dtype=f32)
    for k in range(num_tiles(x, 1, (1, BK))):
        t = load_tile(x, (tile_id(0), k), (1, BK)).astype(f32)
        g = reshape(load_tile(nw, (k,), (BK,)), (1, BK)).astype(f32)
        ss = ss + t * t
        acc = acc + load_tile(w, (tile_id(1), k), (BM, BK){lat}).astype(f32) * (t * g)
    rstd = rsqrt(sum(ss, axis=1, keepdims=True) / n + eps)
    y.store((reshape(sum(acc, axis=1), (1, BM)) * rstd).astype({dt}))
''', lat="")

RMS_GEMV_SWIGLU = template('''
@kernel(opt_level=3{hints})
def rms_gemv_swiglu_{dt}(y: Mut[Tensor[{dt}, "1, BM"]], x: Tensor[{dt}, "?, ?"],
                         nw: Tensor[{dt}, "?"], wg: Tensor[{dt}, "?, ?"],
                         wu: Tensor[{dt}, "?, ?"], n: i32, eps: f32, BK: Const[int] = 256):
    ss = full((1, BK), 0.0, dtype=f32)
    ag = full((BM, BK), 0.0, dtype=f32)
    au = full((BM, BK), 0.0, dtype=f32)
    for k in range(num_tiles(x, 1, (1, BK))):
        t = load_tile(x, (tile_id(0), k), (1, BK)).astype(f32)
        g = reshape(load_tile(nw, (k,), (BK,)), (1, BK)).astype(f32)
        ss = ss + t * t
        xg = t * g
        ag = ag + load_tile(wg, (tile_id(1), k), (BM, BK){lat}).astype(f32) * xg
        au = au + load_tile(wu, (tile_id(1), k), (BM, BK){lat}).astype(f32) * xg
    rstd = rsqrt(sum(ss, axis=1, keepdims=True) / n + eps)
    gate = (reshape(sum(ag, axis=1), (1, BM)) * rstd).astype({dt}).astype(f32)
    up = (reshape(sum(au, axis=1), (1, BM)) * rstd).astype({dt}).astype(f32)
    act = (gate * (1.0 / (1.0 + exp(0.0 - gate)))).astype({dt}).astype(f32)
    y.store((act * up).astype({dt}))
''', lat="")

RMS_GEMV_ARGMAX = template('''
@kernel(opt_level=3{hints})
def rms_gemv_argmax_{dt}(y: Mut[Tensor[f32, "1, BM"]], best: Mut[Tensor[f32, "1, 1"]],
                         where_best: Mut[Tensor[i32, "1, 1"]], x: Tensor[{dt}, "?, ?"],
                         nw: Tensor[{dt}, "?"], w: Tensor[{dt}, "?, ?"], n: i32, eps: f32,
                         rows: i32, BK: Const[int] = 512):
    ss = full((1, BK), 0.0, dtype=f32)
    acc = full((BM, BK), 0.0, dtype=f32)
    for k in range(num_tiles(x, 1, (1, BK))):
        t = load_tile(x, (tile_id(0), k), (1, BK)).astype(f32)
        g = reshape(load_tile(nw, (k,), (BK,)), (1, BK)).astype(f32)
        ss = ss + t * t
        acc = acc + load_tile(w, (tile_id(1), k), (BM, BK){lat}).astype(f32) * (t * g)
    rstd = rsqrt(sum(ss, axis=1, keepdims=True) / n + eps)
    logits = (reshape(sum(acc, axis=1), (1, BM)) * rstd).astype({dt}).astype(f32)
    index = reshape(arange(BM, dtype=i32), (1, BM)) + tile_id(1) * BM
    inside = where(index < rows, logits, -3.0e38)
    top = max(inside, axis=1, keepdims=True)
    y.store(logits)
    best.store(top)
    where_best.store(min(where(inside == top, index, 2147483647), axis=1, keepdims=True))
''', lat="")

ARGMAX = template('''
@kernel(opt_level=3{hints})
def argmax_step(token: Mut[Tensor[i32, "BB, 1"]], pos: Mut[Tensor[i32, "1, 1"]],
                best: Tensor[f32, "?, ?"], where_best: Tensor[i32, "?, ?"],
                BC: Const[int] = 1024):
    top = full((BB, 1), -3.4e38, dtype=f32)
    at = full((BB, 1), 0, dtype=i32)
    for c in range(num_tiles(best, 1, (BB, BC))):
        v = load_tile(best, (0, c), (BB, BC), padding="neg_inf")
        i = load_tile(where_best, (0, c), (BB, BC))
        cm = max(v, axis=1, keepdims=True)
        ci = min(where(v == cm, i, 2147483647), axis=1, keepdims=True)
        at = where(cm > top, ci, at)
        top = maximum(cm, top)
    token.store(at)
    pos.store(pos.load() + 1)
''')

EMBED = template('''
@kernel(opt_level=3{hints})
def embed_{dt}(x: Mut[Tensor[{dt}, "1, BH"]], table: Tensor[{dt}, "?, ?"],
               ids: Tensor[i32, "?, ?"], token: Tensor[i32, "?, ?"],
               pos: Tensor[i32, "?, ?"], prompt_len: Tensor[i32, "?, ?"]):
    p = reshape(load_tile(pos, (0, 0), (1, 1)), ())
    from_prompt = load_tile(ids, (tile_id(0), p), (1, 1))
    generated = load_tile(token, (tile_id(0), 0), (1, 1))
    t = where(load_tile(prompt_len, (0, 0), (1, 1)) > p, from_prompt, generated)
    x.store(load_tile(table, (reshape(t, ()), 0), (1, BH)))
''')

COPY = template('''
@kernel(opt_level=3{hints})
def copy_{dt}(z: Mut[Tensor[{dt}, "BR, BN"]], x: Tensor[{dt}, "?, ?"]):
    z.store(load_tile_like(x, z))
''')

# the scores, the softmax's running max and sum, and P·V of one block: on the tensor cores (MMA,
# 16-bit storage; the group's query rows padded to MQ) or as f32 products; shared by the safe
# and the unsafe decode attention
_ATTENTION_BLOCK = '''
    if MMA:
        lead = reshape(arange(MQ // G, dtype=i32), (MQ // G, 1, 1)) == 0
        qt = transpose(reshape(where(lead, q, 0.0).astype({dt}), (MQ, D)))
        st = mma(reshape(kb, (CH, D)), qt, full((CH, MQ), 0.0, dtype=f32))
        valid = reshape(arange(CH, dtype=i32), (CH, 1)) + blk * CH <= p
        st = where(valid, st, -1.0e30)
        m = max(st, axis=0, keepdims=True)
        pt = where(valid, exp2((st - m) * qk_scale), 0.0)
        o = mma(transpose(pt.astype({dt})), reshape(vb, (CH, D)), full((MQ, D), 0.0, dtype=f32))
        part.store(reshape(sum(where(lead, reshape(o, (MQ // G, G, D)), 0.0), axis=0),
                           (1, G, D)))
        mx.store(reshape(sum(where(lead, reshape(m * qk_scale, (MQ // G, G, 1)), 0.0), axis=0),
                         (1, G, 1)))
        sm.store(reshape(sum(where(lead, reshape(sum(pt, axis=0, keepdims=True),
                                                 (MQ // G, G, 1)), 0.0), axis=0), (1, G, 1)))
    else:
        valid = reshape(arange(CH, dtype=i32), (1, CH)) + blk * CH <= p
        s = where(valid, sum(reshape(q, (G, 1, D)) * kb.astype(f32), axis=2), -1.0e30)
        m = max(s, axis=1, keepdims=True)
        pr = where(valid, exp2((s - m) * qk_scale), 0.0)
        part.store(reshape(sum(reshape(pr, (G, CH, 1)) * vb.astype(f32), axis=1), (1, G, D)))
        mx.store(reshape(m * qk_scale, (1, G, 1)))
        sm.store(reshape(sum(pr, axis=1, keepdims=True), (1, G, 1)))
'''

ATTENTION_DECODE = template('''
@kernel(opt_level=3{hints})
def attention_decode_{dt}(kc: Mut[Tensor[{dt}, "1, CH, D"]], vc: Mut[Tensor[{dt}, "1, CH, D"]],
                          part: Mut[Tensor[f32, "1, G, D"]], mx: Mut[Tensor[f32, "1, G, 1"]],
                          sm: Mut[Tensor[f32, "1, G, 1"]], qkv: Tensor[{dt}, "?, ?, ?"],
                          qn: Tensor[{dt}, "?, ?"], kn: Tensor[{dt}, "?, ?"],
                          cos: Tensor[f32, "?, ?"], sin: Tensor[f32, "?, ?"],
                          pos: Tensor[i32, "?, ?"], kv_heads: i32, eps: f32, qk_scale: f32,
                          HD: Const[int] = 64, MMA: Const[int] = 0, MQ: Const[int] = 16):
    bg = tile_id(0)
    blk = tile_id(1)
    b = bg // kv_heads
    g = bg - b * kv_heads
    kold = kc.load()
    vold = vc.load()
    p = reshape(load_tile(pos, (0, 0), (1, 1){small}), ())
    row0 = b * kv_heads * (G + 2)
    cs = reshape(load_tile(cos, (p, 0), (1, HD){small}), (1, 1, HD))
    sn = reshape(load_tile(sin, (p, 0), (1, HD){small}), (1, 1, HD))
    first = reshape(arange(2, dtype=i32), (1, 2, 1)) == 0
    tq = load_tile(qkv, (row0 // G + g, 0, 0), (G, 2, HD){small}).astype(f32)
    rq = rsqrt(sum(sum(tq * tq, axis=2, keepdims=True), axis=1, keepdims=True) / D + eps)
    wq = reshape(load_tile(qn, (0, 0), (2, HD){small}), (1, 2, HD)).astype(f32)
    tq = ((tq * rq).astype({dt}).astype(f32) * wq).astype({dt}).astype(f32)
    q1 = sum(where(first, tq, 0.0), axis=1, keepdims=True)
    q2 = sum(where(first, 0.0, tq), axis=1, keepdims=True)
    tq = tq * cs + where(first, 0.0 - q2, q1) * sn
    q = reshape(tq.astype({dt}).astype(f32), (1, G, D))
    tk = load_tile(qkv, (row0 + kv_heads * G + g, 0, 0), (1, 2, HD){small}).astype(f32)
    rk = rsqrt(sum(sum(tk * tk, axis=2, keepdims=True), axis=1, keepdims=True) / D + eps)
    wk = reshape(load_tile(kn, (0, 0), (2, HD){small}), (1, 2, HD)).astype(f32)
    tk = ((tk * rk).astype({dt}).astype(f32) * wk).astype({dt}).astype(f32)
    k1 = sum(where(first, tk, 0.0), axis=1, keepdims=True)
    k2 = sum(where(first, 0.0, tk), axis=1, keepdims=True)
    tk = tk * cs + where(first, 0.0 - k2, k1) * sn
    knew = reshape(tk.astype({dt}), (1, 1, D))
    vnew = reshape(load_tile(qkv, (row0 + kv_heads * (G + 1) + g, 0, 0), (1, 2, HD){small}),
                   (1, 1, D))
    at = reshape(arange(CH, dtype=i32), (1, CH, 1)) + blk * CH
    kb = where(at == p, knew, kold)
    vb = where(at == p, vnew, vold)
    kc.store(kb)
    vc.store(vb)
''' + _ATTENTION_BLOCK, small="")

ATTENTION_DECODE_UNSAFE = template('''
@kernel(opt_level=3{hints})
def attention_decode_unsafe_{dt}(kc: Mut[Tensor[{dt}, "1, CH, D"]],
                                 vc: Mut[Tensor[{dt}, "1, CH, D"]],
                                 part: Mut[Tensor[f32, "1, G, D"]],
                                 mx: Mut[Tensor[f32, "1, G, 1"]],
                                 sm: Mut[Tensor[f32, "1, G, 1"]], qkv: Tensor[{dt}, "?, ?, ?"],
                                 qn: Tensor[{dt}, "?, ?"], kn: Tensor[{dt}, "?, ?"],
                                 cos: Tensor[f32, "?, ?"], sin: Tensor[f32, "?, ?"],
                                 pos: Tensor[i32, "?, ?"], kv_heads: i32, eps: f32,
                                 qk_scale: f32, HD: Const[int] = 64, MMA: Const[int] = 0,
                                 MQ: Const[int] = 16):
    bg = tile_id(0)
    blk = tile_id(1)
    b = bg // kv_heads
    g = bg - b * kv_heads
    kold = kc.load()
    vold = vc.load()
    p = reshape(load_tile(pos, (0, 0), (1, 1){small}), ())
    row0 = b * kv_heads * (G + 2)
    cs = reshape(load_tile(cos, (p, 0), (1, HD){small}), (1, 1, HD))
    sn = reshape(load_tile(sin, (p, 0), (1, HD){small}), (1, 1, HD))
    first = reshape(arange(2, dtype=i32), (1, 2, 1)) == 0
    tq = load_tile(qkv, (row0 // G + g, 0, 0), (G, 2, HD){small}).astype(f32)
    rq = rsqrt(sum(sum(tq * tq, axis=2, keepdims=True), axis=1, keepdims=True) / D + eps)
    wq = reshape(load_tile(qn, (0, 0), (2, HD){small}), (1, 2, HD)).astype(f32)
    tq = ((tq * rq).astype({dt}).astype(f32) * wq).astype({dt}).astype(f32)
    q1 = sum(where(first, tq, 0.0), axis=1, keepdims=True)
    q2 = sum(where(first, 0.0, tq), axis=1, keepdims=True)
    tq = tq * cs + where(first, 0.0 - q2, q1) * sn
    q = reshape(tq.astype({dt}).astype(f32), (1, G, D))
    tk = load_tile(qkv, (row0 + kv_heads * G + g, 0, 0), (1, 2, HD){small}).astype(f32)
    rk = rsqrt(sum(sum(tk * tk, axis=2, keepdims=True), axis=1, keepdims=True) / D + eps)
    wk = reshape(load_tile(kn, (0, 0), (2, HD){small}), (1, 2, HD)).astype(f32)
    tk = ((tk * rk).astype({dt}).astype(f32) * wk).astype({dt}).astype(f32)
    k1 = sum(where(first, tk, 0.0), axis=1, keepdims=True)
    k2 = sum(where(first, 0.0, tk), axis=1, keepdims=True)
    tk = tk * cs + where(first, 0.0 - k2, k1) * sn
    knew = reshape(tk.astype({dt}), (1, 1, D))
    vnew = reshape(load_tile(qkv, (row0 + kv_heads * (G + 1) + g, 0, 0), (1, 2, HD){small}),
                   (1, 1, D))
    at = reshape(arange(CH, dtype=i32), (1, CH, 1)) + blk * CH
    kb = where(at == p, knew, kold)
    vb = where(at == p, vnew, vold)
    # Unchecked: only the one row `p` of the cache is written, by the instance whose own block
    # holds it (row p of block p // CH: inside this instance's `kc`/`vc` tile, so no other
    # instance touches it); the other instances store nothing to their blocks. The checker
    # cannot prove the row inside the own tile (its index is a device value, the step's
    # position, which is what lets one CUDA graph serve every step) nor accept an own tile
    # stored on some paths only. The safe kernel (ATTENTION_DECODE) stores every block back
    # whole instead: this variant saves that write (the cache's bytes once per step), measured
    # against it in benchmarks/bench_qwen3.py.
    with unsafe():
        if p // CH == blk:
            store(kc, index=(bg, p, 0), tile=knew)
            store(vc, index=(bg, p, 0), tile=vnew)
''' + _ATTENTION_BLOCK, small="")

ATTENTION_COMBINE = template('''
@kernel(opt_level=3{hints})
def attention_combine_{dt}(out: Mut[Tensor[{dt}, "1, G, D"]], part: Tensor[f32, "?, ?, ?, ?"],
                           mx: Tensor[f32, "?, ?, ?, ?"], sm: Tensor[f32, "?, ?, ?, ?"],
                           pos: Tensor[i32, "?, ?"], CH: Const[int] = 64,
                           BS: Const[int] = 16):
    bg = tile_id(0)
    hd = tile_id(1)
    p = reshape(load_tile(pos, (0, 0), (1, 1)), ())
    top = full((1, G, 1), -1.0e30, dtype=f32)
    total = full((1, G, 1), 0.0, dtype=f32)
    acc = full((1, G, D), 0.0, dtype=f32)
    for c in range(p // (BS * CH) + 1):
        m = load_tile(mx, (bg, c, hd, 0), (1, BS, G, 1), padding="neg_inf")
        new_top = maximum(top, max(m, axis=1))
        scale = exp2(m - reshape(new_top, (1, 1, G, 1)))
        rescale = exp2(top - new_top)
        total = total * rescale + sum(scale * load_tile(sm, (bg, c, hd, 0), (1, BS, G, 1)),
                                      axis=1)
        acc = acc * rescale + sum(scale * load_tile(part, (bg, c, hd, 0), (1, BS, G, D)), axis=1)
        top = new_top
    out.store((acc * (1.0 / total)).astype({dt}))
''')
