"""The library refuses what it cannot do with a TL15x error at the caller's line (the cases of
issue 22), and takes the shapes PyTorch takes: any rank and ``dim=``, rows longer than one tile,
batched matmul, broadcasting, attention with grouped-query heads and masks. On the simulator, on
fresh random data, against float64 NumPy."""
import math
import sys

import numpy as np
import pytest

import cutile_lab as cl
import cutile_lab.kernels as K
from cutile_lab.errors import KernelDiagnosticsError
from cutile_lab.kernels import rowwise

RNG = np.random.default_rng()


@pytest.fixture(autouse=True)
def sim():
    cl.set_backend("sim")
    yield
    cl.set_backend(None)


def _refused(code, call, arg_text=None):
    """``call()`` raises ``code`` whose span is this test file's line (the caller's) and whose
    label sits under ``arg_text`` on that line."""
    line = sys._getframe(1).f_lineno
    with pytest.raises(KernelDiagnosticsError) as e:
        call()
    [d] = e.value.diagnostics
    assert d.code == code, (d.code, d.message)
    assert d.span.filename == __file__ and d.span.line == line, d.span
    if arg_text is not None:
        [label] = d.labels
        src = open(__file__).read().splitlines()[label.span.line - 1]
        assert src[label.span.col:label.span.end_col] == arg_text
    assert f"[{code}]" in str(e.value)            # rendered with its code
    return d


def _softmax(x, d=-1):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(d, keepdims=True))
    return e / e.sum(d, keepdims=True)


# --- the cases of the issue ---------------------------------------------------------------------

def test_gemm_inner_dimensions_that_disagree_are_refused():
    a = RNG.standard_normal((64, 32)).astype(np.float16)
    b = RNG.standard_normal((64, 32)).astype(np.float16)
    d = _refused("TL152", lambda: K.gemm(a, b), "b")
    assert "32 columns" in d.message and "64 rows" in d.message
    a2 = RNG.standard_normal((512, 384)).astype(np.float16)
    b2 = RNG.standard_normal((512, 256)).astype(np.float16)
    _refused("TL152", lambda: K.gemm(a2, b2), "b2")


def test_add_of_different_lengths_is_refused_not_padded():
    x = RNG.standard_normal(100).astype(np.float32)
    y = RNG.standard_normal(50).astype(np.float32)
    d = _refused("TL152", lambda: K.add(x, y), "y")
    assert "do not broadcast" in d.message and "100" in d.message and "50" in d.message


def test_layernorm_weight_of_the_wrong_length_is_refused():
    x = RNG.standard_normal((8, 64)).astype(np.float16)
    w, b = RNG.standard_normal(32).astype(np.float16), RNG.standard_normal(64).astype(np.float16)
    d = _refused("TL152", lambda: K.layernorm(x, w, b), "w")
    assert "weight" in d.message and "64" in d.message
    _refused("TL152", lambda: K.rmsnorm(x, weight=w), "weight=w")


def test_softmax_of_a_1d_tensor_works():
    x = RNG.standard_normal(77).astype(np.float32)
    np.testing.assert_allclose(K.softmax(x).sync().to_numpy(), _softmax(x), atol=1e-6)


@pytest.mark.parametrize("call,code,arg", [
    (lambda x: K.softmax("not a tensor"), "TL150", '"not a tensor"'),
    (lambda x: K.softmax(None), "TL150", "None"),
    (lambda x: K.softmax(x.astype(np.int32)), "TL153", "x.astype(np.int32)"),
    (lambda x: K.layernorm(x, x[0].astype(np.float32), x[0]), "TL153", "x[0].astype(np.float32)"),
    (lambda x: K.softmax(x, dim=2), "TL155", "dim=2"),
    (lambda x: K.softmax(x, BR=3), "TL155", "BR=3"),
    (lambda x: K.layernorm(x, eps=-1.0), "TL155", "eps=-1.0"),
    (lambda x: K.gemm(x, x.T, BK=0), "TL155", "BK=0"),
    (lambda x: K.gemm(x.reshape(1, 1, 1, *x.shape), x.T), "TL151", "x.reshape(1, 1, 1, *x.shape)"),
    (lambda x: K.gemm(x, x.T.astype(np.float32)), "TL153", "x.T.astype(np.float32)"),
    (lambda x: K.saxpy(2.0, x, x[:, :8]), "TL152", "x[:, :8]"),
])
def test_bad_arguments_get_their_code_at_the_callers_line(call, code, arg):
    x = RNG.standard_normal((4, 16)).astype(np.float16)
    line = call.__code__.co_firstlineno
    with pytest.raises(KernelDiagnosticsError) as e:
        call(x)
    [d] = e.value.diagnostics
    assert d.code == code, (d.code, d.message)
    assert (d.span.filename, d.span.line) == (__file__, line)
    [label] = d.labels
    src = open(__file__).read().splitlines()[label.span.line - 1]
    assert src[label.span.col:label.span.end_col] == arg


def test_a_tensor_of_another_backend_is_refused():
    """A GPU tensor handed to the library while it runs on the simulator (its memory is never
    touched: the check comes first)."""
    from cutile_lab.runtime.dtypes import as_dtype
    from cutile_lab.runtime.memory import DeviceStorage
    from cutile_lab.runtime.tensor import Tensor
    t = Tensor(DeviceStorage(0x7F00_0000_0000, 4 * 8 * 4, None, 0), as_dtype("f32"), (4, 8))
    assert t.backend == "gpu"
    d = _refused("TL154", lambda: K.softmax(t), "t")
    assert "simulator" in d.message


def test_attention_shapes_are_checked():
    q = RNG.standard_normal((2, 6, 32, 16)).astype(np.float16)
    k = RNG.standard_normal((2, 4, 32, 16)).astype(np.float16)
    _refused("TL152", lambda: K.attention(q, k, k), "k")                 # 4 does not divide 6
    k8 = RNG.standard_normal((2, 3, 32, 8)).astype(np.float16)
    _refused("TL152", lambda: K.attention(q, k8, k8), "k8")              # head dims
    _refused("TL151", lambda: K.attention(q[0, 0], q[0, 0], q[0, 0]), "q[0, 0]")
    m = np.ones((5, 32), bool)
    _refused("TL152", lambda: K.attention(q, q, q, mask=m), "mask=m")
    m2 = np.ones((32, 32), bool)
    _refused("TL155", lambda: K.attention(q, q, q, mask=m2, causal=True), "mask=m2")
    # were float()'s ValueError inside attention_host.py, and a string taken as causal=True
    d = _refused("TL155", lambda: K.attention(q, q, q, scale="x"), 'scale="x"')
    assert "scale='x' is not a finite number" in d.message
    _refused("TL155", lambda: K.attention(q, q, q, scale=float("inf")), 'scale=float("inf")')
    d = _refused("TL155", lambda: K.attention(q, q, q, causal="yes"), 'causal="yes"')
    assert "is not True or False" in d.message


# --- what works: any rank, dim=, long rows ------------------------------------------------------

@pytest.mark.parametrize("shape,dim", [((3, 5, 40), -1), ((3, 5, 40), 1), ((6, 33), 0),
                                       ((2, 3, 4, 9), 2), ((), -1), ((0, 7), -1)])
def test_softmax_any_rank_and_dim(shape, dim):
    x = RNG.standard_normal(shape).astype(np.float32)
    y = K.softmax(x, dim=dim).sync().to_numpy()
    assert y.shape == x.shape
    np.testing.assert_allclose(y, _softmax(x, dim) if x.size else x, atol=1e-6)


def test_norms_any_rank_and_default_weights():
    x = RNG.standard_normal((2, 3, 48)).astype(np.float32)
    w, b = RNG.standard_normal(48).astype(np.float32), RNG.standard_normal(48).astype(np.float32)
    xd = x.astype(np.float64)
    ln = (xd - xd.mean(-1, keepdims=True)) / np.sqrt(xd.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(K.layernorm(x, w, b).sync().to_numpy(), ln * w + b, atol=1e-4)
    np.testing.assert_allclose(K.layernorm(x).sync().to_numpy(), ln, atol=1e-4)
    rms = xd / np.sqrt((xd * xd).mean(-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(K.rmsnorm(x, w).sync().to_numpy(), rms * w, atol=1e-4)


def test_strided_views_fold_or_launch_per_outer_index():
    """A 3-D view whose leading dimensions do not fold into one row index (every other matrix of
    a batch, transposed) runs one launch per matrix."""
    base = RNG.standard_normal((4, 24, 10)).astype(np.float32)
    x = np.swapaxes(base[::2], 1, 2)          # (2, 10, 24), rows strided, columns strided
    np.testing.assert_allclose(K.softmax(x).sync().to_numpy(), _softmax(x), atol=1e-6)


@pytest.mark.parametrize("family", ["softmax", "layernorm", "rmsnorm"])
def test_long_rows_take_the_chunked_kernels(family, monkeypatch):
    """Rows longer than one tile (here: a 256-byte tile limit, so that the simulator stays fast)
    are done by the statistics and apply launches, block of rows by block, ragged last chunk and
    several groups per row included, and match the reference."""
    monkeypatch.setattr(rowwise, "MAX_ROW_TILE_BYTES", 256)
    monkeypatch.setitem(rowwise.LONG_ROWS, "stats", {"BN": 64})
    monkeypatch.setitem(rowwise.LONG_ROWS, "apply", {"BN": 128})
    monkeypatch.setitem(rowwise.LONG_ROWS, "block_bytes", 4000)     # blocks of 2 rows, 2 + 1
    rows, cols = 3, 1000
    assert rowwise.long_row_plan(family, "f16", rows, cols, 8).block_rows == 2
    assert not rowwise.fits_one_tile(cols, 2)
    x = (RNG.standard_normal((rows, cols)) * 2 + 3).astype(np.float16)
    w = RNG.standard_normal(cols).astype(np.float16)
    b = RNG.standard_normal(cols).astype(np.float16)
    xd = x.astype(np.float64)
    if family == "softmax":
        got, ref, tol = K.softmax(x), _softmax(x), 2e-4
    elif family == "layernorm":
        got = K.layernorm(x, w, b)
        ref = (xd - xd.mean(1, keepdims=True)) / np.sqrt(xd.var(1, keepdims=True) + 1e-5) * w + b
        tol = 2e-2
    else:
        got, ref, tol = K.rmsnorm(x, w), xd / np.sqrt((xd * xd).mean(1, keepdims=True) + 1e-6) * w, 2e-2
    np.testing.assert_allclose(got.sync().to_numpy().astype(np.float64), ref, atol=tol)


def test_long_row_groups_split_every_row_without_empty_groups():
    for rows, cols in [(1, 10 ** 6), (128, 10 ** 6), (1024, 10 ** 5), (3, 5000), (1, 4097)]:
        G = rowwise.long_row_groups(rows, cols, 1, 4096, 528)
        chunks = -(-cols // 4096)
        assert 1 <= G <= min(chunks, rowwise.LONG_ROWS["MAX_GROUPS"])
        assert all((g + 1) * chunks // G > g * chunks // G for g in range(G))


def test_the_library_never_chooses_a_whole_row_tile_past_the_limit():
    """The compile that hung at 100,000 columns: rows past 64 KiB go to the chunked kernels,
    whose tiles are the same few KiB whatever the row length."""
    for cols, itemsize in [(100_000, 2), (1_000_000, 2), (32_768, 2), (32_769, 2), (16_385, 4)]:
        fits = rowwise.fits_one_tile(cols, itemsize)
        assert fits == ((1 << (cols - 1).bit_length()) * itemsize <= 65536)
    assert all(rowwise.LONG_ROWS[k]["BN"] * 4 <= 65536 for k in ("stats", "apply"))


@pytest.mark.skipif(__import__("cutile_lab.compiling.toolchain", fromlist=["x"])
                    .toolchain_or_none() is None, reason="no tileiras")
def test_the_long_row_kernels_the_library_chooses_compile_for_an_h100():
    """Rows of 1,000,000 f16 columns: what the host launches compiles for sm_90 (the whole-row
    tile of the old path, 2^20 wide, did not finish compiling)."""
    for family in ("softmax", "layernorm", "rmsnorm"):
        plan = rowwise.long_row_plan(family, "f16", 128, 1_000_000, sm_count=132)
        assert plan.G > 1 and plan.BN_stats * 2 <= rowwise.MAX_ROW_TILE_BYTES
        plan.stats.compile("sm_90", BR=plan.BR, BN=plan.BN_stats)
        plan.apply.compile("sm_90", BR=plan.BR, BN=plan.BN_apply, G=plan.G_tile)


# --- gemm, add/mul, attention shape families ---------------------------------------------------

@pytest.mark.parametrize("sa,sb", [((3, 40, 24), (3, 24, 20)), ((3, 40, 24), (24, 20)),
                                   ((40, 24), (3, 24, 20)), ((1, 40, 24), (3, 24, 20)),
                                   ((40, 24), (24,)), ((24,), (24, 20)), ((70, 33), (33, 100))])
def test_gemm_matmul_semantics(sa, sb):
    a = RNG.standard_normal(sa).astype(np.float16)
    b = RNG.standard_normal(sb).astype(np.float16)
    ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
    got = K.gemm(a, b, BM=32, BN=32, BK=32).sync().to_numpy()
    assert got.shape == ref.shape
    np.testing.assert_allclose(got.astype(np.float64), ref, atol=0.05, rtol=1e-2)


@pytest.mark.parametrize("sx,sy", [((4, 1, 6), (5, 1)), ((3, 7), (7,)), ((2, 3, 4, 5), (3, 1, 5)),
                                   ((6,), ()), ((2, 1, 3, 1, 4), (1, 5, 1, 6, 1)), ((9, 9), (9, 9))])
@pytest.mark.parametrize("op", ["add", "mul"])
def test_add_mul_broadcast(sx, sy, op):
    x = RNG.standard_normal(sx).astype(np.float32)
    y = np.asarray(RNG.standard_normal(sy), np.float32)
    got = getattr(K, op)(x, y).sync().to_numpy()
    ref = x + y if op == "add" else x * y
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    np.testing.assert_allclose(getattr(K, op)(x, 1.5).sync().to_numpy(),
                               x + 1.5 if op == "add" else x * 1.5, rtol=1e-6)


def _sdpa(q, k, v, causal=False, mask=None):
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    rep = q.shape[-3] // k.shape[-3]
    k, v = np.repeat(k, rep, -3), np.repeat(v, rep, -3)
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("case", ["gqa", "bool mask", "float key mask", "causal", "strided q",
                                  "head dim 24", "3-d", "full mask", "head mask",
                                  "expanded mask", "strided q, full mask", "3-d mask"])
def test_attention_layouts(case):
    B, H, Hkv, S, Skv, D = 2, 4, 2, 40, 72, 32
    f = np.float16

    def r(*s):
        return RNG.standard_normal(s).astype(f)
    q, k, v, mask, causal = r(B, H, S, D), r(B, Hkv, Skv, D), r(B, Hkv, Skv, D), None, False
    if case == "bool mask":
        mask = RNG.random((B, 1, S, Skv)) > 0.3
    elif case == "float key mask":
        mask = r(Skv)
    elif case == "causal":
        k, v, causal = r(B, Hkv, S, D), r(B, Hkv, S, D), True
    elif case == "strided q":
        q = np.swapaxes(r(B, S, H, D), 1, 2)
    elif case == "head dim 24":
        q, k, v = r(B, H, S, 24), r(B, Hkv, Skv, 24), r(B, Hkv, Skv, 24)
    elif case in ("3-d", "3-d mask"):
        q, k, v = q.reshape(B * H, S, D), r(B * Hkv, Skv, D), r(B * Hkv, Skv, D)
        if case == "3-d mask":
            mask = RNG.random((B * H, S, Skv)) > 0.3
    elif case == "full mask":
        mask = r(B, H, S, Skv)
    elif case == "head mask":
        mask = RNG.random((H, 1, Skv)) > 0.3
    elif case == "expanded mask":
        mask = np.broadcast_to(RNG.random((1, 1, S, Skv)) > 0.3, (B, H, S, Skv))
    elif case == "strided q, full mask":
        q, mask = np.swapaxes(r(B, S, H, D), 1, 2), RNG.random((B, H, S, Skv)) > 0.5
    got = K.attention(q, k, v, causal=causal, mask=mask, BQ=32, BKV=32).sync().to_numpy()
    if case in ("3-d", "3-d mask"):
        ref = _sdpa(q.reshape(B, H, S, D), k.reshape(B, Hkv, Skv, D), v.reshape(B, Hkv, Skv, D),
                    mask=None if mask is None else mask.reshape(B, H, S, Skv)
                    ).reshape(B * H, S, D)
    else:
        ref = _sdpa(q, k, v, causal, mask)
    np.testing.assert_allclose(got.astype(np.float64), ref, atol=5e-3, rtol=1e-2)


def test_new_library_kernels_check_clean():
    from cutile_lab.kernels import elementwise as E, flash_attention as A, matmul as M
    kernels = [t.kernel(**rowwise.long_substitutions(f, "f16", c, 128))
               for t, f in [(rowwise.SOFTMAX_STATS, "softmax"), (rowwise.SOFTMAX_APPLY, "softmax"),
                            (rowwise.LAYERNORM_STATS, "layernorm"),
                            (rowwise.LAYERNORM_APPLY, "layernorm"),
                            (rowwise.RMSNORM_STATS, "rmsnorm"), (rowwise.RMSNORM_APPLY, "rmsnorm")]
               for c in (1000, 1024)]
    kernels += [E.BINARY.kernel(dt="f32", name="mul", op="*"),
                E.BINARY_BROADCAST.kernel(dt="f16", **E.broadcast_substitutions(
                    (True, False, True), (False, True, True))),
                M.BATCHED_GEMM.kernel(dt="f16", ab="0"), A.ATTENTION.kernel(dt="f16"),
                A.ATTENTION.kernel(dt="f16", **A.mask_substitutions("bool", "bh // HEADS", True,
                                                                     False))]
    for kernel in kernels:
        assert kernel.check() == [], kernel.name
