"""The decode kernels (``cutile_lab.kernels.decode``) alone on the simulator, against float64
NumPy, on ragged shapes: N not a multiple of BM, K not a multiple of BK, a batch of two, the
attention combine over several loads of blocks, argmax ties."""
import numpy as np

from cutile_lab.kernels import decode as D
from cutile_lab.simulation import simulate

RNG = np.random.default_rng()
N, K, BM, BK, B = 100, 200, 8, 64, 2


def _rms(x, w, eps=1e-6):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _grid(n, bm):
    return (B, -(-n // bm), 1)


def test_gemv_residual_ragged():
    x, w, r = (RNG.standard_normal(s).astype(np.float32) for s in ((B, K), (N, K), (B, N)))
    y = np.full((B, N), np.nan, np.float32)
    res = simulate(D.GEMV_RESIDUAL.kernel(dt="f32"), [y, x, w, r], _grid(N, BM),
                   {"BM": BM, "BK": BK})
    assert res.ok, res.summary()
    np.testing.assert_allclose(y, x.astype(np.float64) @ w.T + r, rtol=1e-4, atol=1e-4)


def test_rms_gemv_and_swiglu_ragged():
    x = RNG.standard_normal((B, K)).astype(np.float32)
    nw = (1 + 0.1 * RNG.standard_normal(K)).astype(np.float32)
    w, wu = (RNG.standard_normal((N, K)).astype(np.float32) for _ in range(2))
    xn = _rms(x.astype(np.float64), nw)
    y = np.full((B, N), np.nan, np.float32)
    res = simulate(D.RMS_GEMV.kernel(dt="f32"), [y, x, nw, w, K, 1e-6], _grid(N, BM),
                   {"BM": BM, "BK": BK})
    assert res.ok, res.summary()
    np.testing.assert_allclose(y, xn @ w.T, rtol=1e-4, atol=1e-3)
    res = simulate(D.RMS_GEMV_SWIGLU.kernel(dt="f32"), [y, x, nw, w, wu, K, 1e-6],
                   _grid(N, BM), {"BM": BM, "BK": BK})
    assert res.ok, res.summary()
    g, u = xn @ w.T, xn @ wu.T
    np.testing.assert_allclose(y, g / (1 + np.exp(-g)) * u, rtol=1e-4, atol=1e-3)


def test_lm_head_tile_maxima_then_argmax_with_ties():
    x = RNG.standard_normal((B, K)).astype(np.float32)
    nw = np.ones(K, np.float32)
    w = RNG.standard_normal((N, K)).astype(np.float32)
    w[77] = w[13]                        # a tie for the maximum in two different tiles
    x[1] = 0.0
    x[1, :2] = 1.0                       # row 1: logits w[:, 0] + w[:, 1] (scaled): tie-prone
    tiles = -(-N // BM)
    logits = np.zeros((B, N), np.float32)
    best = np.zeros((B, tiles), np.float32)
    at = np.zeros((B, tiles), np.int32)
    res = simulate(D.RMS_GEMV_ARGMAX.kernel(dt="f32"), [logits, best, at, x, nw, w, K, 1e-6, N],
                   _grid(N, BM), {"BM": BM, "BK": BK})
    assert res.ok, res.summary()
    ref = _rms(x.astype(np.float64), nw) @ w.T
    np.testing.assert_allclose(logits, ref, rtol=1e-4, atol=1e-3)
    token = np.zeros((2, 1), np.int32)
    pos = np.array([[5]], np.int32)
    res = simulate(D.ARGMAX.kernel(), [token, pos, best, at], (1, 1, 1), {"BB": 2, "BC": 4})
    assert res.ok, res.summary()
    assert token[:, 0].tolist() == [int(np.argmax(logits[0])), int(np.argmax(logits[1]))]
    assert pos[0, 0] == 6
    # every logit equal: the first index wins, across tiles
    best[:] = 1.0
    at[:] = np.arange(tiles)[None, :] * BM
    simulate(D.ARGMAX.kernel(), [token, pos, best, at], (1, 1, 1), {"BB": 2, "BC": 4})
    assert token[:, 0].tolist() == [0, 0]


def test_attention_combine_over_several_loads():
    """Blocks' partial results (unnormalised sums, base-2 maxima, sums of weights) merged in
    chunks of BS blocks: 10 blocks of 4 positions, loads of 4 blocks, position 37."""
    bg, G, Dh, CH, BS, ns, p = 3, 2, 16, 4, 4, 10, 37
    mx = RNG.standard_normal((bg, ns, G, 1)).astype(np.float32) * 3
    used = p // CH + 1
    mx[:, used:] = -1.0e29                           # blocks past the position: empty
    sm = np.abs(RNG.standard_normal((bg, ns, G, 1))).astype(np.float32) + 0.5
    sm[:, used:] = 0.0
    part = RNG.standard_normal((bg, ns, G, Dh)).astype(np.float32)
    part[:, used:] = 0.0
    out = np.full((bg, G, Dh), np.nan, np.float32)
    res = simulate(D.ATTENTION_COMBINE.kernel(dt="f32"),
                   [out, part, mx, sm, np.array([[p]], np.int32)], (bg, 1, 1),
                   {"G": G, "D": Dh, "CH": CH, "BS": BS})
    assert res.ok, res.summary()
    m = mx.astype(np.float64)
    scale = np.exp2(m - m.max(axis=1, keepdims=True))
    ref = (scale * part).sum(1) / (scale * sm).sum(1)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
