"""The corpus of plain cuTile Python kernels (``kernels/``), one ``Case`` per kernel: how to
compile it from the command line (``--arg``), fresh random inputs, its grid and constants, a
NumPy reference, a PyTorch reference (for the GPU tests) and the race verdict the checker must
give. The kernels are written for this project in the idioms of cuTile Python's samples."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

KERNELS = Path(__file__).with_name("kernels")


@dataclass
class Case:
    file: str
    kernel: str
    cli: list[str]                        # --arg values for `cutile-lab compile`
    make: Callable                        # rng -> {param: array or scalar} in kernel order
    grid: Callable                        # inputs -> grid
    consts: dict
    outputs: list[str]
    ref: Callable                         # inputs (NumPy) -> {output: expected}
    torch_ref: Callable | None = None     # (torch, inputs as CUDA tensors) -> {output: expected}
    tol: tuple = (1e-5, 1e-5)             # rtol, atol
    verdict: str = "proven"               # "proven" | "racy" | "unchecked"
    verdict_line: str | None = None       # a piece of the line the verdict points at
    id: str = ""

    @property
    def path(self) -> Path:
        return KERNELS / self.file


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def f16(rng, *shape):
    return rng.standard_normal(shape).astype(np.float16)


def cdiv(a, b):
    return -(-a // b)


def _ln_ref(x, w, b, eps):
    x = x.astype(np.float32)
    mu = x.mean(1)
    var = ((x - mu[:, None]) ** 2).mean(1)
    r = 1 / np.sqrt(var + eps)
    return (x - mu[:, None]) * r[:, None] * w + b, mu, r


def _ln_bwd(dy, x, w, mean, rstd):
    xhat = (x - mean[:, None]) * rstd[:, None]
    g = dy * w
    n = x.shape[1]
    dx = (g - xhat * (xhat * g).sum(1, keepdims=True) / n - g.sum(1, keepdims=True) / n) \
        * rstd[:, None]
    return dx, dy * xhat


def _rms_bwd(dy, x, w, eps):
    n = x.shape[1]
    r = 1 / np.sqrt((x * x).sum(1, keepdims=True) / n + eps)
    g = dy * w
    dx = (g - x * (g * x).sum(1, keepdims=True) * r * r / n) * r
    return dx, (dy * x * r).sum(0)


def _attention(q, k, v, scale, causal):
    s = np.einsum("bqd,bkd->bqk", q.astype(np.float32), k.astype(np.float32)) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[1:], bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("bqk,bkd->bqd", p, v.astype(np.float32))


def _hash32(x):
    x = x.astype(np.uint32)
    x ^= x >> np.uint32(16)
    x *= np.uint32(0x7FEB352D)
    x ^= x >> np.uint32(15)
    x *= np.uint32(0x846CA68B)
    return x ^ (x >> np.uint32(16))


def _dropout_ref(x, seed, p):
    i = np.arange(x.size, dtype=np.uint32)
    keep = (_hash32(i ^ np.uint32(seed)) >> np.uint32(8)).astype(np.float32) \
        * np.float32(1 / 16777216) >= np.float32(p)
    return np.where(keep, x * np.float32(1 / (1 - p)), 0).astype(np.float32)


def _mm_inputs(rng, locks=False):
    d = {"A": f16(rng, 70, 96), "B": f16(rng, 96, 40), "C": np.zeros((70, 40), np.float32)}
    if locks:
        d["locks"] = np.zeros(3 * 3, np.int32)
    return d


def _mm_ref(i):
    return {"C": i["A"].astype(np.float32) @ i["B"].astype(np.float32)}


def _mm_torch(torch, i):
    return {"C": i["A"].float() @ i["B"].float()}


MM_CLI = ["A=f16[?,?]", "B=f16[?,?]", "C=f32[?,?]", "TM=32", "TN=16", "TK=32"]

CASES: list[Case] = [
    # --- elementwise.py ---------------------------------------------------------------------
    Case("elementwise.py", "vector_add", ["a=f32[?]", "b=f32[?]", "c=f32[?]", "TILE=256"],
         lambda r: {"a": f32(r, 1000), "b": f32(r, 1000), "c": np.zeros(1000, np.float32)},
         lambda i: (cdiv(1000, 256),), {"TILE": 256}, ["c"],
         lambda i: {"c": i["a"] + i["b"]}, lambda torch, i: {"c": i["a"] + i["b"]}),
    Case("elementwise.py", "saxpy", ["x=f32[?]", "y=f32[?]", "out=f32[?]", "alpha=f32",
                                     "TILE=128"],
         lambda r: {"x": f32(r, 777), "y": f32(r, 777), "out": np.zeros(777, np.float32),
                    "alpha": np.float32(r.standard_normal())},
         lambda i: (cdiv(777, 128),), {"TILE": 128}, ["out"],
         lambda i: {"out": i["alpha"] * i["x"] + i["y"]},
         lambda torch, i: {"out": float(i["alpha"]) * i["x"] + i["y"]}),
    Case("elementwise.py", "gelu_2d", ["x=f16[?,?]", "out=f16[?,?]", "TM=32", "TN=64"],
         lambda r: {"x": f16(r, 50, 100), "out": np.zeros((50, 100), np.float16)},
         lambda i: (2, 2), {"TM": 32, "TN": 64}, ["out"],
         lambda i: {"out": (0.5 * i["x"].astype(np.float32) * (1 + np.tanh(
             math.sqrt(2 / math.pi) * (i["x"].astype(np.float32) + 0.044715 *
                                       i["x"].astype(np.float32) ** 3)))).astype(np.float16)},
         lambda torch, i: {"out": torch.nn.functional.gelu(i["x"].float(), approximate="tanh")
                           .half()}, tol=(2e-3, 2e-3)),
    Case("elementwise.py", "clamp_scale", ["x=f32[?]", "out=f32[?]", "lo=-0.5", "hi=0.75",
                                           "TILE=64"],
         lambda r: {"x": f32(r, 300), "out": np.zeros(300, np.float32)},
         lambda i: (cdiv(300, 64),), {"TILE": 64, "lo": -0.5, "hi": 0.75}, ["out"],
         lambda i: {"out": np.clip(i["x"], -0.5, 0.75)},
         lambda torch, i: {"out": torch.clamp(i["x"], -0.5, 0.75)}),
    Case("elementwise.py", "relu_to_half", ["x=f32[?]", "out=f16[?]", "TILE=128"],
         lambda r: {"x": f32(r, 500), "out": np.zeros(500, np.float16)},
         lambda i: (cdiv(500, 128),), {"TILE": 128}, ["out"],
         lambda i: {"out": np.maximum(i["x"], 0).astype(np.float16)},
         lambda torch, i: {"out": torch.relu(i["x"]).half()}, tol=(0, 0)),
    # --- rowwise.py -------------------------------------------------------------------------
    Case("rowwise.py", "softmax_rows", ["x=f32[?,?]", "out=f32[?,?]", "BLOCK_N=128"],
         lambda r: {"x": f32(r, 37, 100), "out": np.zeros((37, 100), np.float32)},
         lambda i: (37,), {"BLOCK_N": 128}, ["out"],
         lambda i: {"out": np.exp(i["x"] - i["x"].max(1, keepdims=True))
                    / np.exp(i["x"] - i["x"].max(1, keepdims=True)).sum(1, keepdims=True)},
         lambda torch, i: {"out": torch.softmax(i["x"], dim=1)}, tol=(1e-5, 1e-6)),
    Case("rowwise.py", "layernorm_fwd",
         ["x=f32[?,?]", "w=f32[?]", "b=f32[?]", "out=f32[?,?]", "mean=f32[?]", "rstd=f32[?]",
          "N=i32", "eps=1e-5", "BLOCK_N=128"],
         lambda r: {"x": f32(r, 20, 90), "w": f32(r, 90), "b": f32(r, 90),
                    "out": np.zeros((20, 90), np.float32), "mean": np.zeros(20, np.float32),
                    "rstd": np.zeros(20, np.float32), "N": 90},
         lambda i: (20,), {"eps": 1e-5, "BLOCK_N": 128}, ["out", "mean", "rstd"],
         lambda i: dict(zip(("out", "mean", "rstd"), _ln_ref(i["x"], i["w"], i["b"], 1e-5))),
         lambda torch, i: {"out": torch.nn.functional.layer_norm(i["x"], (90,), i["w"], i["b"],
                                                                 1e-5),
                           "mean": i["x"].mean(1),
                           "rstd": torch.rsqrt(i["x"].var(1, unbiased=False) + 1e-5)},
         tol=(1e-4, 1e-5)),
    Case("rowwise.py", "layernorm_bwd_dx",
         ["dy=f32[?,?]", "x=f32[?,?]", "w=f32[?]", "mean=f32[?]", "rstd=f32[?]", "dx=f32[?,?]",
          "dw_partial=f32[?,?]", "db_partial=f32[?,?]", "N=i32", "BLOCK_N=64"],
         lambda r: (lambda x: {"dy": f32(r, 16, 50), "x": x, "w": f32(r, 50),
                               "mean": x.mean(1), "rstd": 1 / np.sqrt(x.var(1) + 1e-5),
                               "dx": np.zeros((16, 50), np.float32),
                               "dw_partial": np.zeros((16, 50), np.float32),
                               "db_partial": np.zeros((16, 50), np.float32), "N": 50})(
             f32(r, 16, 50)),
         lambda i: (16,), {"BLOCK_N": 64}, ["dx", "dw_partial", "db_partial"],
         lambda i: dict(zip(("dx", "dw_partial"), _ln_bwd(i["dy"], i["x"], i["w"], i["mean"],
                                                           i["rstd"])), db_partial=i["dy"]),
         None, tol=(1e-4, 1e-5)),
    Case("rowwise.py", "rmsnorm_fwd",
         ["x=f16[?,?]", "w=f16[?]", "out=f16[?,?]", "N=i32", "eps=1e-6", "BLOCK_N=256"],
         lambda r: {"x": f16(r, 24, 200), "w": f16(r, 200),
                    "out": np.zeros((24, 200), np.float16), "N": 200},
         lambda i: (24,), {"eps": 1e-6, "BLOCK_N": 256}, ["out"],
         lambda i: {"out": (i["x"].astype(np.float32) / np.sqrt(
             (i["x"].astype(np.float32) ** 2).mean(1, keepdims=True) + 1e-6)
             * i["w"].astype(np.float32)).astype(np.float16)},
         lambda torch, i: {"out": (i["x"].float() * torch.rsqrt(
             i["x"].float().pow(2).mean(1, keepdim=True) + 1e-6) * i["w"].float()).half()},
         tol=(2e-3, 2e-3)),
    Case("rowwise.py", "rmsnorm_bwd",
         ["dy=f32[?,?]", "x=f32[?,?]", "w=f32[?]", "dx=f32[?,?]", "dw=f32[?]", "N=i32",
          "eps=1e-6", "BLOCK_N=64"],
         lambda r: {"dy": f32(r, 12, 64), "x": f32(r, 12, 64), "w": f32(r, 64),
                    "dx": np.zeros((12, 64), np.float32), "dw": np.zeros(64, np.float32),
                    "N": 64},
         lambda i: (12,), {"eps": 1e-6, "BLOCK_N": 64}, ["dx", "dw"],
         lambda i: dict(zip(("dx", "dw"), _rms_bwd(i["dy"], i["x"], i["w"], 1e-6))),
         None, tol=(1e-4, 1e-5)),
    # --- gemm.py ----------------------------------------------------------------------------
    Case("gemm.py", "matmul", MM_CLI, _mm_inputs, lambda i: (3, 3),
         {"TM": 32, "TN": 16, "TK": 32}, ["C"], _mm_ref, _mm_torch, tol=(1e-3, 1e-3)),
    # the tile a block stores is computed: a grouped order is beyond the checker, so the store
    # must be reported, not passed; a persistent loop over range(bid, n, num_blocks) split
    # into (tile // n, tile % n) is a bijection the checker proves
    Case("gemm.py", "matmul_grouped", MM_CLI + ["GROUP=2"], _mm_inputs, lambda i: (9,),
         {"TM": 32, "TN": 16, "TK": 32, "GROUP": 2}, ["C"], _mm_ref, _mm_torch,
         tol=(1e-3, 1e-3), verdict="unchecked", verdict_line="ct.store(C"),
    Case("gemm.py", "matmul_persistent", MM_CLI, _mm_inputs, lambda i: (4,),
         {"TM": 32, "TN": 16, "TK": 32}, ["C"], _mm_ref, _mm_torch, tol=(1e-3, 1e-3)),
    Case("gemm.py", "matmul_splitk_lock", MM_CLI[:5] + ["TK=16", "locks=i32[?]", "SPLIT=2"],
         lambda r: _mm_inputs(r, locks=True), lambda i: (3, 3, 2),
         {"TM": 32, "TN": 16, "TK": 16, "SPLIT": 2}, ["C"], _mm_ref, _mm_torch,
         tol=(1e-3, 1e-3), verdict="unchecked", verdict_line="ct.store(C"),
    Case("gemm.py", "matmul_splitk_atomic", MM_CLI[:5] + ["TK=16", "SPLIT=2"], _mm_inputs,
         lambda i: (3, 3, 2), {"TM": 32, "TN": 16, "TK": 16, "SPLIT": 2}, ["C"], _mm_ref,
         _mm_torch, tol=(1e-3, 1e-3), verdict="proven"),
    # --- attention.py -----------------------------------------------------------------------
    Case("attention.py", "attention_fwd",
         ["Q=f16[?,?,?]", "K=f16[?,?,?]", "V=f16[?,?,?]", "Out=f32[?,?,?]", "scale=0.125",
          "D=64", "BM=32", "BN=32", "CAUSAL=true"],
         lambda r: {"Q": f16(r, 3, 80, 64), "K": f16(r, 3, 80, 64), "V": f16(r, 3, 80, 64),
                    "Out": np.zeros((3, 80, 64), np.float32)},
         lambda i: (3, 3), {"scale": 0.125, "D": 64, "BM": 32, "BN": 32, "CAUSAL": True},
         ["Out"], lambda i: {"Out": _attention(i["Q"], i["K"], i["V"], 0.125, True)},
         lambda torch, i: {"Out": torch.nn.functional.scaled_dot_product_attention(
             i["Q"].float(), i["K"].float(), i["V"].float(), is_causal=True, scale=0.125)},
         tol=(1e-2, 1e-2)),
    # --- memory_ops.py ----------------------------------------------------------------------
    Case("memory_ops.py", "embedding_gather",
         ["table=f32[?,?]", "ids=i32[?]", "out=f32[?,?]", "D=32", "BT=16"],
         lambda r: {"table": f32(r, 50, 32),
                    "ids": np.where(r.random(40) < 0.2, -1, r.integers(0, 50, 40)).astype(
                        np.int32), "out": np.zeros((48, 32), np.float32)},
         lambda i: (3,), {"D": 32, "BT": 16}, ["out"],
         lambda i: {"out": np.concatenate([np.where((i["ids"] >= 0)[:, None],
                                                    i["table"][i["ids"]], 0),
                                           np.zeros((8, 32), np.float32)])},
         lambda torch, i: {"out": torch.cat([torch.where((i["ids"] >= 0)[:, None],
                                                         i["table"][i["ids"].clamp(min=0).long()],
                                                         0.0),
                                             torch.zeros(8, 32, device="cuda")])}),
    Case("memory_ops.py", "permute_scatter", ["x=f32[?]", "perm=i32[?]", "out=f32[?]",
                                              "TILE=64"],
         lambda r: {"x": f32(r, 200), "perm": r.permutation(200).astype(np.int32),
                    "out": np.zeros(200, np.float32)},
         lambda i: (4,), {"TILE": 64}, ["out"],
         lambda i: {"out": _scatter_ref(i["x"], i["perm"])},
         lambda torch, i: {"out": torch.zeros_like(i["x"]).index_copy_(0, i["perm"].long(),
                                                                        i["x"])},
         verdict="unchecked", verdict_line="ct.scatter"),
    Case("memory_ops.py", "histogram", ["values=i32[?]", "counts=i32[?]", "TILE=128"],
         lambda r: {"values": r.integers(0, 16, 1000).astype(np.int32),
                    "counts": np.zeros(16, np.int32)},
         lambda i: (cdiv(1000, 128),), {"TILE": 128}, ["counts"],
         lambda i: {"counts": np.bincount(i["values"], minlength=16).astype(np.int32)},
         lambda torch, i: {"counts": torch.bincount(i["values"].long(), minlength=16).int()},
         tol=(0, 0)),
    Case("memory_ops.py", "raw_copy_scaled", ["src=f32[?]", "dst=f32[?]", "factor=1.5",
                                              "TILE=128"],
         lambda r: {"src": f32(r, 300), "dst": np.zeros(300, np.float32)},
         lambda i: (3,), {"factor": 1.5, "TILE": 128}, ["dst"],
         lambda i: {"dst": i["src"] * np.float32(1.5)},
         lambda torch, i: {"dst": i["src"] * 1.5},
         verdict="unchecked", verdict_line="store_offset"),
    Case("memory_ops.py", "raw_count_positive", ["x=f32[?]", "total=i32[?]", "TILE=64"],
         lambda r: {"x": f32(r, 250), "total": np.zeros(1, np.int32)},
         lambda i: (4,), {"TILE": 64}, ["total"],
         lambda i: {"total": np.array([(i["x"] > 0).sum()], np.int32)},
         lambda torch, i: {"total": (i["x"] > 0).sum().reshape(1).int()}, tol=(0, 0),
         verdict="unchecked", verdict_line="atomic_add_offset"),
    Case("memory_ops.py", "transpose", ["x=f32[?,?]", "out=f32[?,?]", "TM=32", "TN=16"],
         lambda r: {"x": f32(r, 64, 48), "out": np.zeros((48, 64), np.float32)},
         lambda i: (2, 3), {"TM": 32, "TN": 16}, ["out"],
         lambda i: {"out": i["x"].T}, lambda torch, i: {"out": i["x"].T}, tol=(0, 0)),
    # --- random_ops.py ----------------------------------------------------------------------
    Case("random_ops.py", "dropout", ["x=f32[?]", "out=f32[?]", "seed=u32", "p=0.25",
                                      "TILE=256"],
         lambda r: {"x": f32(r, 1000), "out": np.zeros(1000, np.float32),
                    "seed": np.uint32(r.integers(0, 2**31))},
         lambda i: (4,), {"p": 0.25, "TILE": 256}, ["out"],
         lambda i: {"out": _dropout_ref(i["x"], i["seed"], 0.25)}, None, tol=(1e-6, 0)),
    # --- reductions.py ----------------------------------------------------------------------
    Case("reductions.py", "row_sums", ["x=f16[?,?]", "out=f32[?]", "BM=16", "BN=64"],
         lambda r: {"x": f16(r, 40, 150), "out": np.zeros(40, np.float32)},
         lambda i: (3,), {"BM": 16, "BN": 64}, ["out"],
         lambda i: {"out": i["x"].astype(np.float32).sum(1)},
         lambda torch, i: {"out": i["x"].float().sum(1)}, tol=(1e-4, 1e-3)),
    Case("reductions.py", "prefix_sum_rows", ["x=i32[?,?]", "out=i32[?,?]", "BN=64"],
         lambda r: {"x": r.integers(-50, 50, (10, 60)).astype(np.int32),
                    "out": np.zeros((10, 60), np.int32)},
         lambda i: (10,), {"BN": 64}, ["out"],
         lambda i: {"out": np.cumsum(i["x"], 1).astype(np.int32)},
         lambda torch, i: {"out": torch.cumsum(i["x"], 1).int()}, tol=(0, 0)),
    Case("reductions.py", "argmax_rows", ["x=f32[?,?]", "out=i32[?]", "BN=128"],
         lambda r: {"x": f32(r, 30, 100), "out": np.zeros(30, np.int32)},
         lambda i: (30,), {"BN": 128}, ["out"],
         lambda i: {"out": i["x"].argmax(1).astype(np.int32)},
         lambda torch, i: {"out": i["x"].argmax(1).int()}, tol=(0, 0)),
    Case("reductions.py", "total_racy", ["x=f32[?]", "out=f32[?]", "TILE=64"],
         lambda r: {"x": f32(r, 256), "out": np.zeros(1, np.float32)},
         lambda i: (4,), {"TILE": 64}, ["out"], None, None,
         verdict="racy", verdict_line="ct.store(out, index=(0,)"),
]


def _scatter_ref(x, perm):
    out = np.zeros_like(x)
    out[perm] = x
    return out


for _c in CASES:
    _c.id = f"{_c.file[:-3]}.{_c.kernel}"
