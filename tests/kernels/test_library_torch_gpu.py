"""The kernel library called as PyTorch is (issue 22), on the GPU against PyTorch, on fresh random
data: refused calls give their code at this file's line; good ones match ``torch``."""
import math
import sys

import pytest

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def torch():
    import cutile_lab as cl
    if not cl.gpu_available():
        pytest.skip("no GPU found")
    torch = pytest.importorskip("torch")
    cl.set_backend("gpu")
    torch.manual_seed(int.from_bytes(__import__("os").urandom(4), "little"))
    yield torch
    cl.set_backend(None)


def _t(torch, result):
    """The library's result tensor as a torch tensor (zero-copy)."""
    return torch.from_dlpack(result)


def _refused(code, call):
    from cutile_lab.errors import KernelDiagnosticsError
    line = sys._getframe(1).f_lineno
    with pytest.raises(KernelDiagnosticsError) as e:
        call()
    [d] = e.value.diagnostics
    assert d.code == code, (d.code, d.message)
    assert (d.span.filename, d.span.line) == (__file__, line)
    return d


def _close(got, ref, tol):
    err = ((got.double() - ref.double()).norm() / ref.double().norm()).item()
    assert err < tol, err


def test_bad_inputs_are_refused_before_any_launch(torch):
    import cutile_lab.kernels as K
    f16 = dict(device="cuda", dtype=torch.float16)
    a, b = torch.randn(64, 32, **f16), torch.randn(64, 32, **f16)
    _refused("TL152", lambda: K.gemm(a, b))
    a2, b2 = torch.randn(512, 384, **f16), torch.randn(512, 256, **f16)
    _refused("TL152", lambda: K.gemm(a2, b2))
    x, y = torch.randn(100, device="cuda"), torch.randn(50, device="cuda")
    _refused("TL152", lambda: K.add(x, y))
    r, w = torch.randn(8, 64, **f16), torch.randn(32, **f16)
    _refused("TL152", lambda: K.layernorm(r, w, torch.randn(64, **f16)))
    _refused("TL153", lambda: K.softmax(torch.randint(0, 9, (4, 8), device="cuda")))
    _refused("TL153", lambda: K.gemm(a, b.T.float()))
    _refused("TL155", lambda: K.softmax(r, dim=3))
    q = torch.randn(2, 6, 64, 64, **f16)
    _refused("TL152", lambda: K.attention(q, q[:, :4], q[:, :4]))


@pytest.mark.parametrize("shape,dim,dtype", [((77,), -1, "float32"), ((4, 6, 300), -1, "float16"),
                                             ((4, 6, 300), 1, "float32"), ((33, 777), -1,
                                                                           "bfloat16"),
                                             ((8, 5), 0, "float16")])
def test_softmax_any_rank_and_dim_matches_torch(torch, shape, dim, dtype):
    import cutile_lab.kernels as K
    x = torch.randn(shape, device="cuda", dtype=getattr(torch, dtype)) * 3
    got = _t(torch, K.softmax(x, dim=dim).sync())
    assert got.shape == x.shape
    _close(got, torch.softmax(x.double(), dim), 1e-2 if dtype == "bfloat16" else 3e-3)


@pytest.mark.parametrize("cols", [100_000, 1_000_000, 40_000])
def test_long_rows_match_torch(torch, cols):
    """Rows past one tile: the chunked kernels, f16, against PyTorch in float64."""
    import cutile_lab.kernels as K
    rows = 6 if cols >= 1_000_000 else 33
    f16 = dict(device="cuda", dtype=torch.float16)
    x = torch.randn(rows, cols, **f16) * 2 + 1
    w, b = torch.randn(cols, **f16), torch.randn(cols, **f16)
    xd = x.double()
    _close(_t(torch, K.softmax(x).sync()), torch.softmax(xd, -1), 3e-3)
    _close(_t(torch, K.layernorm(x, w, b).sync()),
           torch.nn.functional.layer_norm(xd, (cols,), w.double(), b.double(), 1e-5), 3e-3)
    ref = xd * torch.rsqrt((xd * xd).mean(-1, keepdim=True) + 1e-6) * w.double()
    _close(_t(torch, K.rmsnorm(x, w).sync()), ref, 3e-3)


def test_norms_of_3d_tensors_and_default_weights(torch):
    import cutile_lab.kernels as K
    x = torch.randn(3, 17, 512, device="cuda", dtype=torch.float16)
    ref = torch.nn.functional.layer_norm(x.double(), (512,), eps=1e-5)
    _close(_t(torch, K.layernorm(x).sync()), ref, 3e-3)


@pytest.mark.parametrize("sa,sb,dtype", [((4, 200, 96), (4, 96, 136), "float16"),
                                         ((4, 200, 96), (96, 136), "float16"),
                                         ((200, 96), (4, 96, 136), "float16"),
                                         ((200, 96), (96,), "float16"),
                                         ((100, 70), (70, 33), "float16"),
                                         ((100, 70), (70, 33), "float32")])
def test_batched_gemm_matches_torch_matmul(torch, sa, sb, dtype):
    import cutile_lab.kernels as K
    a = torch.randn(sa, device="cuda", dtype=getattr(torch, dtype))
    b = torch.randn(sb, device="cuda", dtype=getattr(torch, dtype))
    got = _t(torch, K.gemm(a, b).sync())
    ref = torch.matmul(a.double(), b.double())
    assert got.shape == ref.shape
    _close(got, ref, 3e-3)


@pytest.mark.parametrize("sx,sy", [((64, 1, 300), (7, 1)), ((33, 1000), (1000,)),
                                   ((5, 6, 7), ()), (((1 << 20) + 3,), ((1 << 20) + 3,))])
def test_broadcasting_add_mul_match_torch(torch, sx, sy):
    import cutile_lab.kernels as K
    x = torch.randn(sx, device="cuda")
    y = torch.randn(sy, device="cuda")
    for fn, ref in ((K.add, x + y), (K.mul, x * y)):
        got = _t(torch, fn(x, y).sync())
        assert got.shape == ref.shape
        torch.testing.assert_close(got, ref)


@pytest.mark.parametrize("case", ["gqa", "bool mask", "float mask", "causal", "transposed layout",
                                  "ragged", "bf16", "head dim 80"])
def test_attention_matches_sdpa(torch, case):
    import cutile_lab.kernels as K
    F = torch.nn.functional
    B, H, Hkv, S, D = 2, 8, 2, 512, 64
    dt = torch.bfloat16 if case == "bf16" else torch.float16
    q = torch.randn(B, H, S, D, device="cuda", dtype=dt)
    k = torch.randn(B, Hkv, S, D, device="cuda", dtype=dt)
    v = torch.randn(B, Hkv, S, D, device="cuda", dtype=dt)
    mask, causal = None, False
    if case == "bool mask":
        mask = torch.rand(B, 1, S, S, device="cuda") > 0.2
    elif case == "float mask":
        mask = torch.randn(S, device="cuda", dtype=dt)
    elif case == "causal":
        causal = True
    elif case == "transposed layout":
        q = torch.randn(B, S, H, D, device="cuda", dtype=dt).transpose(1, 2)
    elif case == "head dim 80":
        q, k, v = (torch.randn(*t.shape[:-1], 80, device="cuda", dtype=dt) for t in (q, k, v))
    elif case == "ragged":
        q, k, v = q[:, :, :300], k[:, :, :333].contiguous(), v[:, :, :333].contiguous()
    got = _t(torch, K.attention(q, k, v, causal=causal, mask=mask).sync())
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask if
                                         mask is None or mask.dtype == torch.bool else
                                         mask.float(), is_causal=causal, enable_gqa=True)
    _close(got, ref, 2e-2 if case == "bf16" else 5e-3)


def test_what_already_worked_still_works(torch):
    """Empty tensors, odd sizes, a CPU tensor mixed with a GPU one, strided views."""
    import cutile_lab.kernels as K
    e = torch.empty(0, 16, device="cuda")
    assert _t(torch, K.softmax(e).sync()).shape == (0, 16)
    x = torch.randn(7, device="cuda")
    torch.testing.assert_close(_t(torch, K.add(x, x.cpu()).sync()), x + x)
    s = torch.randn(64, 512, device="cuda", dtype=torch.float16)[::2, ::2]
    _close(_t(torch, K.softmax(s).sync()), torch.softmax(s.double(), -1), 3e-3)
    assert math.isfinite(_t(torch, K.softmax(torch.randn(1, device="cuda")).sync()).item())
