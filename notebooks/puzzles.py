"""Tile puzzles: statements, NumPy references, hints and checks for ``07-puzzles.ipynb``.

Each puzzle asks for one tile kernel. ``check_<name>(kernel)`` (or ``check("<name>", kernel)``)
launches it on fresh random inputs -- two cases of different sizes, one with ragged edges -- on
the CPU simulator, and on the GPU too when there is one, and says what is wrong in plain words.
Every report names the case (its launch and the shapes of all its tensors) and the seed of its
inputs, so ``check_<name>(kernel, seed=N)`` replays it exactly:

* the kernel is not a tile kernel, its ``%%tilekernel`` cell failed, or its signature does not
  fit the puzzle;
* the launch was refused (the lab's diagnostic is quoted);
* the kernel crashed in the simulator (at your line);
* a race: two tiles wrote the same element (with the ownership picture);
* an access out of bounds;
* elements that no tile wrote (with the ownership picture);
* wrong values: how many, the first one (expected versus got), a picture of the wrong elements
  over the tile grid, the pattern they make ("only the ragged edge", "one tile row", "above
  the diagonal"...) and, where the result is what a known mistake computes, that mistake.

``hint("<name>")`` gives a nudge. The checks never raise: whatever happens inside the lab
becomes a message. The result is a ``CheckResult`` (true when the kernel is right); the last one
of each puzzle is kept in ``RESULTS``.
"""
from __future__ import annotations

import base64
import inspect
import secrets
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["PUZZLES", "EXERCISES", "RESULTS", "HISTORY", "CheckResult", "check", "hint", "progress",
           "reference_source", "statement"]


# --- the puzzles ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Param:
    """One parameter the puzzle's kernel must declare, in order."""

    name: str
    role: str            # "mut" | "shared" | "scalar"
    dtype: str           # the tile-language dtype: f32, f16, u8
    ndim: int = 0


@dataclass
class Case:
    """One launch of a check: inputs in parameter order (after the output), the output's shape
    and dtype, the partition's tile shape, and keywords for the launch (``grid=`` or const
    generics)."""

    inputs: list
    out_shape: tuple
    out_dtype: str
    tile: tuple
    launch: dict = field(default_factory=dict)

    def describe(self, name: str, params) -> str:
        """``copy(z.partition((64,)), x) with x: f32[1000], z: f32[1000]``."""
        out, ins = params[0].name, params[1:]
        args, shapes = [f"{out}.partition({self.tile})"], []
        for p, a in zip(ins, self.inputs):
            if isinstance(a, np.ndarray):
                args.append(p.name)
                shapes.append(f"{p.name}: {_dt(a.dtype)}{list(a.shape)}")
            else:
                args.append(f"{p.name}={_fmt(a)}")
        args += [f"{k}={v}" for k, v in self.launch.items()]
        shapes.append(f"{out}: {self.out_dtype}{list(self.out_shape)}")
        return f"{name}({', '.join(args)}) with {', '.join(shapes)}"


def _dt(np_dtype) -> str:
    return {"float32": "f32", "float16": "f16", "float64": "f64",
            "uint8": "u8"}.get(str(np_dtype), str(np_dtype))


@dataclass
class Mistake:
    """A wrong answer that learners often give: what it computes from a case, and what to say
    when a kernel's result is that."""

    computes: Callable[[Case], np.ndarray]
    says: str


@dataclass
class Puzzle:
    name: str
    title: str
    params: tuple[Param, ...]
    cases: Callable[[np.random.Generator], list[Case]]
    reference: Callable
    rtol: float = 1e-5
    atol: float = 1e-5
    hint: str = ""
    mistakes: tuple[Mistake, ...] = ()
    requires: Callable | None = None    # kernel -> a complaint, or None when it is satisfied


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _f16(rng, *shape):
    return rng.standard_normal(shape).astype(np.float16)


def _negative(rng, *shape):
    # every value below zero: a zero that sneaks into a maximum shows up at once
    return (-np.abs(rng.standard_normal(shape)) - 0.25).astype(np.float32)


def _f(a):
    return np.asarray(a, dtype=np.float32)


# Tile sizes the stubs and solutions declare as `Const[int]` defaults (the mistakes use them).
ROW_BN = 64          # long_row_sum, outer_grad_x
COL_BM = 32          # outer_grad_y
MM_BK = 32           # the matrix products
SPLIT_BK = 16        # split_k
KV_BLOCK = 32        # flash_attention


# --- references: what each kernel must compute, from the same inputs ---------------------------

def ref_scale(x, alpha):
    return x * np.float32(alpha)


def ref_add_row(x, row):
    return x + row[None, :]


def ref_outer(x, y):
    return x[:, None] * y[None, :]


def ref_transpose2d(x):
    return x.T.copy()


def ref_causal_mask(x):
    return np.tril(x)          # keep x[i, j] where j <= i, zero above the diagonal


def ref_row_max(x):
    return x.max(axis=1, keepdims=True)


def ref_long_row_sum(x):
    return x.sum(axis=1, keepdims=True)


def ref_outer_grad_x(dz, y):
    return dz @ y              # z = outer(x, y)  =>  dL/dx[i] = sum_j dz[i, j] * y[j]


def ref_outer_grad_y(dz, x):
    return dz.T @ x            # dL/dy[j] = sum_i dz[i, j] * x[i]


def ref_online_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def ref_conv2d(x, k):
    # "same" 2-D convolution (cross-correlation, as in deep learning), zero outside x:
    # z[i, j] = sum over a, b of x[i + a - 1, j + b - 1] * k[a, b], for a 3x3 k
    xp = np.pad(x, 1)
    h, w = x.shape
    return sum(xp[a:a + h, b:b + w] * k[a, b] for a in range(3) for b in range(3))


def ref_batched_matmul(a, b):
    return np.matmul(a, b)


def ref_matmul_kloop(a, b):
    return a @ b


def ref_matmul_mma(a, bt):
    return a.astype(np.float32) @ bt.astype(np.float32).T     # bt is (N, K): c = a @ btᵀ


def ref_matmul_grouped(a, b, bias):
    return np.maximum(a.astype(np.float32) @ b.astype(np.float32) + bias[None, :], 0)


def ref_split_k(a, b):
    return a @ b


def unpack_int4(w):
    # w[r, n] holds two 4-bit weights: the low nibble is row r of W, the high nibble row
    # r + K/2; each is stored as the weight plus 8 (so -8..7 becomes 0..15)
    lo = (w & 0x0F).astype(np.float32) - 8
    hi = (w >> 4).astype(np.float32) - 8
    return np.concatenate([lo, hi], axis=0)


def ref_dequant_matmul(a, w, scale):
    return a.astype(np.float32) @ (unpack_int4(w) * scale[None, :])


def ref_flash_attention(q, k, v, scale):
    s = (q.astype(np.float32) @ k.astype(np.float32).T) * scale
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float32)


# --- cases: two launches each, one of them ragged ------------------------------------------

def _cases_scale(rng):
    return [Case([_f32(rng, 1000), float(rng.choice([2.5, 3.0, -1.5]))], (1000,), "f32", (64,)),
            Case([_f32(rng, 3000), -0.75], (3000,), "f32", (512,))]


def _cases_add_row(rng):
    return [Case([_f32(rng, 100, 200), _f32(rng, 200)], (100, 200), "f32", (32, 64)),
            Case([_f32(rng, 64, 256), _f32(rng, 256)], (64, 256), "f32", (16, 128))]


def _cases_outer(rng):
    return [Case([_f32(rng, 64), _f32(rng, 96)], (64, 96), "f32", (32, 32)),
            Case([_f32(rng, 50), _f32(rng, 70)], (50, 70), "f32", (16, 16))]


def _cases_transpose2d(rng):
    return [Case([_f32(rng, 100, 200)], (200, 100), "f32", (32, 64)),
            Case([_f32(rng, 128, 64)], (64, 128), "f32", (16, 32))]


def _cases_causal_mask(rng):
    return [Case([_f32(rng, 96, 96)], (96, 96), "f32", (32, 32)),
            Case([_f32(rng, 100, 100)], (100, 100), "f32", (16, 16))]


def _cases_row_max(rng):
    return [Case([_negative(rng, 100, 200)], (100, 1), "f32", (16, 1)),
            Case([_f32(rng, 48, 256)], (48, 1), "f32", (16, 1))]


def _cases_long_row_sum(rng):
    return [Case([_f32(rng, 40, 300)], (40, 1), "f32", (8, 1)),
            Case([_f32(rng, 24, 129)], (24, 1), "f32", (8, 1))]


def _cases_outer_grad_x(rng):
    return [Case([_f32(rng, 100, 150), _f32(rng, 150)], (100,), "f32", (32,)),
            Case([_f32(rng, 64, 64), _f32(rng, 64)], (64,), "f32", (16,))]


def _cases_outer_grad_y(rng):
    return [Case([_f32(rng, 150, 100), _f32(rng, 150)], (100,), "f32", (32,)),
            Case([_f32(rng, 64, 48), _f32(rng, 64)], (48,), "f32", (16,))]


def _cases_online_softmax(rng):
    return [Case([_f32(rng, 16, 300) * 3], (16, 300), "f32", (8, 64)),
            Case([_f32(rng, 12, 130) * 3], (12, 130), "f32", (4, 32))]


def _cases_conv2d(rng):
    return [Case([_f32(rng, 40, 50), _f32(rng, 3, 3)], (40, 50), "f32", (16, 16)),
            Case([_f32(rng, 33, 20), _f32(rng, 3, 3)], (33, 20), "f32", (8, 16))]


def _cases_batched_matmul(rng):
    return [Case([_f32(rng, 3, 40, 64), _f32(rng, 3, 64, 24)], (3, 40, 24), "f32", (1, 16, 16)),
            Case([_f32(rng, 2, 32, 70), _f32(rng, 2, 70, 20)], (2, 32, 20), "f32", (1, 16, 16))]


def _cases_matmul_kloop(rng):
    return [Case([_f32(rng, 48, 100), _f32(rng, 100, 40)], (48, 40), "f32", (16, 16)),
            Case([_f32(rng, 32, 64), _f32(rng, 64, 32)], (32, 32), "f32", (16, 16))]


def _cases_matmul_mma(rng):
    return [Case([_f16(rng, 100, 72), _f16(rng, 80, 72)], (100, 80), "f32", (32, 32)),
            Case([_f16(rng, 64, 128), _f16(rng, 96, 128)], (64, 96), "f32", (32, 32))]


def _cases_matmul_grouped(rng):
    return [Case([_f16(rng, 128, 64), _f16(rng, 64, 128), _f32(rng, 128)], (128, 128), "f32",
                 (32, 32)),
            Case([_f16(rng, 80, 96), _f16(rng, 96, 72), _f32(rng, 72)], (80, 72), "f32",
                 (16, 32))]


def _split_grid(m, n, k, tile):
    return (-(-m // tile[0]), -(-n // tile[1]), -(-k // SPLIT_BK))


def _cases_split_k(rng):
    return [Case([_f32(rng, 40, 64), _f32(rng, 64, 24)], (40, 24), "f32", (16, 16),
                 {"grid": _split_grid(40, 24, 64, (16, 16))}),
            Case([_f32(rng, 32, 96), _f32(rng, 96, 32)], (32, 32), "f32", (16, 32),
                 {"grid": _split_grid(32, 32, 96, (16, 32))})]


def _int4(rng, k2, n):
    return rng.integers(0, 256, size=(k2, n), dtype=np.uint8)


def _cases_dequant_matmul(rng):
    def scale(n):
        return (rng.random(n) * 0.1 + 0.01).astype(np.float32)
    return [Case([_f16(rng, 48, 128), _int4(rng, 64, 64), scale(64)], (48, 64), "f32", (16, 32)),
            Case([_f16(rng, 40, 64), _int4(rng, 32, 40), scale(40)], (40, 40), "f32", (16, 16))]


def _cases_flash_attention(rng):
    def qkv(s, d):
        return _f16(rng, s, d), _f16(rng, s, d), _f16(rng, s, d)
    q, k, v = qkv(96, 32)
    q2, k2, v2 = qkv(64, 16)
    return [Case([q, k, v, 1 / np.sqrt(32)], (96, 32), "f32", (32, 32)),
            Case([q2, k2, v2, 1 / np.sqrt(16)], (64, 16), "f32", (16, 16))]


# --- known mistakes ------------------------------------------------------------------------------

def _first_tile_sum(case):
    x = case.inputs[0]
    return x[:, :ROW_BN].sum(axis=1, keepdims=True)


def _grad_x_without_y(case):
    dz, _y = case.inputs
    return dz.sum(axis=1)


def _softmax_per_tile(case):
    x = case.inputs[0]
    out = np.empty_like(x)
    bn = case.tile[1]
    for j in range(0, x.shape[1], bn):
        out[:, j:j + bn] = ref_online_softmax(x[:, j:j + bn])
    return out


def _softmax_sum_not_rescaled(case):
    x = case.inputs[0].astype(np.float64)
    bn = case.tile[1]
    m = np.full((x.shape[0], 1), -np.inf)
    l = np.zeros((x.shape[0], 1))
    for j in range(0, x.shape[1], bn):
        t = x[:, j:j + bn]
        m = np.maximum(m, t.max(axis=1, keepdims=True))
        l = l + np.exp(t - m).sum(axis=1, keepdims=True)      # the old sum kept its old scale
    return np.exp(x - m) / l


def _first_k_tile(case):
    a, b = case.inputs
    return _f(a[..., :MM_BK]) @ _f(b[..., :MM_BK, :])


def _last_k_tile(case):
    a, bt = case.inputs
    k = a.shape[1]
    last = (k - 1) // MM_BK * MM_BK
    return _f(a[:, last:]) @ _f(bt[:, last:]).T


def _without_relu(case):
    a, b, bias = case.inputs
    return _f(a) @ _f(b) + bias[None, :]


def _product_alone(case):
    a, b, _bias = case.inputs
    return _f(a) @ _f(b)


def _conv_window_not_centred(case):
    x, k = case.inputs       # the window not centred: x[i + a, j + b] instead of x[i + a - 1, ...]
    xp = np.pad(x, ((0, 2), (0, 2)))
    h, w = x.shape
    return sum(xp[a:a + h, b:b + w] * k[a, b] for a in range(3) for b in range(3))


def _dequant_without_offset(case):
    a, w, scale = case.inputs
    lo, hi = (w & 0x0F).astype(np.float32), (w >> 4).astype(np.float32)
    return _f(a) @ (np.concatenate([lo, hi], axis=0) * scale[None, :])


def _dequant_low_only(case):
    a, w, scale = case.inputs
    lo = (w & 0x0F).astype(np.float32) - 8
    return _f(a[:, :w.shape[0]]) @ (lo * scale[None, :])


def _attention_without_rescale(case):
    q, k, v, scale = case.inputs
    s_all = (_f(q) @ _f(k).T) * scale
    m = np.full((q.shape[0], 1), -1e30, np.float32)
    l = np.zeros((q.shape[0], 1), np.float32)
    acc = np.zeros((q.shape[0], v.shape[1]), np.float32)
    for j in range(0, k.shape[0], KV_BLOCK):
        s = s_all[:, j:j + KV_BLOCK]
        m_new = np.maximum(m, s.max(axis=1, keepdims=True))
        p = np.exp(s - m_new)
        l = l * np.exp(m - m_new) + p.sum(axis=1, keepdims=True)
        acc = acc + p @ _f(v[j:j + KV_BLOCK])       # acc not rescaled by exp(m - m_new)
        m = m_new
    return acc / l


def _grouped_order(kernel):
    from cutile_lab.compiling.lowering import tile_order
    if tile_order(kernel.definition) is None:
        return ("the kernel runs its tiles in row order (tile (0, 0), (0, 1), (0, 2)...); this "
                "puzzle asks for grouped order: decorate it with "
                "`@kernel(tile_order=\"grouped\", group_size=2)` on the line above `def`.")
    return None


PUZZLES: dict[str, Puzzle] = {p.name: p for p in [
    # -- element-wise and broadcasting
    Puzzle("scale", "Scale by a scalar",
           (Param("z", "mut", "f32", 1), Param("x", "shared", "f32", 1),
            Param("alpha", "scalar", "f32")),
           _cases_scale, ref_scale,
           hint="A scalar parameter combines with a tile directly: `t * alpha` multiplies every "
                "element."),
    Puzzle("add_row", "Add a row vector to every row (broadcast)",
           (Param("z", "mut", "f32", 2), Param("x", "shared", "f32", 2),
            Param("row", "shared", "f32", 1)),
           _cases_add_row, ref_add_row,
           hint="`tile_id(0)` counts tile rows, `tile_id(1)` tile columns. The piece of `row` a "
                "tile needs depends on its columns only."),
    Puzzle("outer", "Outer product of two vectors",
           (Param("z", "mut", "f32", 2), Param("x", "shared", "f32", 1),
            Param("y", "shared", "f32", 1)),
           _cases_outer, ref_outer,
           hint="Load the BM values of `x` for your rows and the BN values of `y` for your "
                "columns, reshape them to (BM, 1) and (1, BN): their product broadcasts to "
                "(BM, BN)."),
    # -- 2-D tiles, indices and masks
    Puzzle("transpose2d", "Transpose a matrix",
           (Param("z", "mut", "f32", 2), Param("x", "shared", "f32", 2)),
           _cases_transpose2d, ref_transpose2d, 0, 0,
           hint="The tile of `z` at (i, j) is the transpose of the tile of `x` at (j, i). "
                "`z.store` always writes your own tile: no index needed, no race possible."),
    Puzzle("causal_mask", "Causal mask: keep the lower triangle",
           (Param("z", "mut", "f32", 2), Param("x", "shared", "f32", 2)),
           _cases_causal_mask, ref_causal_mask, 0, 0,
           hint="The global row of element (r, c) of your tile is `tile_id(0) * B + r`; build "
                "all of them at once with `reshape(arange(B, dtype=i32), (B, 1))`, the columns "
                "likewise as (1, B), and choose with `where(cols <= rows, t, 0.0)`."),
    # -- reductions: one tile, then longer than one tile
    Puzzle("row_max", "Maximum of every row (rows shorter than the tile)",
           (Param("z", "mut", "f32", 2), Param("x", "shared", "f32", 2)),
           _cases_row_max, ref_row_max, 0, 0,
           hint="A load past the edge of the data pads with zeros; for a maximum of negative "
                "numbers, a zero wins. `load_tile(..., padding=\"neg_inf\")` pads with -inf."),
    Puzzle("long_row_sum", "Sum of every row, rows longer than a tile (a loop)",
           (Param("z", "mut", "f32", 2), Param("x", "shared", "f32", 2)),
           _cases_long_row_sum, ref_long_row_sum, 1e-5, 1e-4,
           mistakes=(Mistake(_first_tile_sum, f"z is the sum of the first {ROW_BN} columns "
                             "only: the other column tiles were never added. Loop over "
                             "them."),),
           hint="`for j in range(num_tiles(x, 1, (BR, BN))):` visits every column tile of "
                "your rows; keep a (BR, 1) running sum in a variable."),
    Puzzle("outer_grad_x", "Backward of the outer product: the gradient of x",
           (Param("dx", "mut", "f32", 1), Param("dz", "shared", "f32", 2),
            Param("y", "shared", "f32", 1)),
           _cases_outer_grad_x, ref_outer_grad_x, 1e-4, 1e-4,
           mistakes=(Mistake(_grad_x_without_y, "dx is the plain row sum of dz: each "
                             "dz[i, j] must be multiplied by y[j] (the chain rule through "
                             "z = x * y)."),),
           hint="z[i, j] = x[i] * y[j], so dx[i] = sum over j of dz[i, j] * y[j]: a row "
                "reduction of dz times y, looped over the column tiles."),
    Puzzle("outer_grad_y", "Backward of the outer product: the gradient of y",
           (Param("dy", "mut", "f32", 1), Param("dz", "shared", "f32", 2),
            Param("x", "shared", "f32", 1)),
           _cases_outer_grad_y, ref_outer_grad_y, 1e-4, 1e-4,
           hint="dy[j] = sum over i of dz[i, j] * x[i]: now the reduction runs down the "
                "columns (axis 0), looped over the row tiles, and x broadcasts as (BM, 1)."),
    Puzzle("online_softmax", "Softmax of rows longer than a tile (online)",
           (Param("z", "mut", "f32", 2), Param("x", "shared", "f32", 2)),
           _cases_online_softmax, ref_online_softmax, 1e-5, 1e-6,
           mistakes=(Mistake(_softmax_per_tile, "each tile was normalised on its own, so "
                             "every tile of a row sums to 1 instead of the whole row: the "
                             "maximum and the sum must come from all of the row's tiles."),
                     Mistake(_softmax_sum_not_rescaled, "the running sum l was not rescaled "
                             "when the running maximum grew: its terms are exp(x - m) with the "
                             "old m. Multiply l by exp(m - m_new) before adding the new "
                             "tile's sum.")),
           hint="First a loop over all column tiles of your rows keeping a running maximum m "
                "and a running sum l; when the maximum grows to m_new, the old sum is worth "
                "l * exp(m - m_new). Then your own tile is exp(t - m) / l."),
    # -- convolution and batches
    Puzzle("conv2d", "2-D convolution, 3x3, zero padding",
           (Param("z", "mut", "f32", 2), Param("x", "shared", "f32", 2),
            Param("k", "shared", "f32", 2)),
           _cases_conv2d, ref_conv2d, 1e-5, 1e-4,
           mistakes=(Mistake(_conv_window_not_centred, "z is the convolution with the "
                             "window starting at (i, j) instead of centred on it: element "
                             "(a, b) of k multiplies x[i + a - 1, j + b - 1]."),),
           hint="A window shifted by one element is not a tile of x, so it is read with "
                "`gather(x, (rows, cols))`, a raw read inside `with unsafe():`. Keep gather's "
                "bounds check: past the edge it reads 0, which is the zero padding."),
    Puzzle("batched_matmul", "Batched matrix product",
           (Param("c", "mut", "f32", 3), Param("a", "shared", "f32", 3),
            Param("b", "shared", "f32", 3)),
           _cases_batched_matmul, ref_batched_matmul, 1e-4, 1e-4,
           hint="The output tile is (1, BM, BN): tile_id(0) is the batch, tile_id(1) and "
                "tile_id(2) the tile row and column. Load 3-D tiles and `reshape` them to 2-D."),
    # -- matrix products, step by step
    Puzzle("matmul_kloop", "Matrix product with a loop over K",
           (Param("c", "mut", "f32", 2), Param("a", "shared", "f32", 2),
            Param("b", "shared", "f32", 2)),
           _cases_matmul_kloop, ref_matmul_kloop, 1e-4, 1e-4,
           mistakes=(Mistake(_first_k_tile, f"c is a[:, :{MM_BK}] @ b[:{MM_BK}, :]: only the "
                             "first K tile was multiplied. Loop k over "
                             "`num_tiles(a, 1, (BM, BK))` and add up the products."),),
           hint="`acc = acc + matmul(ta, tb)` for every k; the K tiles past the edge of the "
                "data are padded with zeros, which add nothing to a product."),
    Puzzle("matmul_mma", "a @ bᵀ on tensor cores (mma)",
           (Param("c", "mut", "f32", 2), Param("a", "shared", "f16", 2),
            Param("bt", "shared", "f16", 2)),
           _cases_matmul_mma, ref_matmul_mma, 1e-3, 1e-2,
           mistakes=(Mistake(_last_k_tile, "c is the product of the last K tile only: each "
                             "`mma` started again from zeros. Pass the running accumulator: "
                             "`acc = mma(ta, tb, acc)`."),),
           hint="Tile (j, k) of bt, shape (BN, BK), transposed is the (BK, BN) tile of b you "
                "need: `transpose(load_tile(bt, (tile_id(1), k), (BN, BK)))`. `mma(ta, tb, "
                "acc)` returns acc + ta @ tb: the accumulator carries the sum over K tiles."),
    Puzzle("matmul_grouped", "relu(a @ b + bias) in grouped tile order",
           (Param("c", "mut", "f32", 2), Param("a", "shared", "f16", 2),
            Param("b", "shared", "f16", 2), Param("bias", "shared", "f32", 1)),
           _cases_matmul_grouped, ref_matmul_grouped, 1e-3, 1e-2,
           requires=_grouped_order,
           mistakes=(Mistake(_without_relu, "c is a @ b + bias without the ReLU: apply "
                             "`maximum(..., 0.0)` to the accumulator before the store."),
                     Mistake(_product_alone, "c is a @ b alone: the epilogue is missing. Add "
                             "the bias (a (1, BN) row for your columns) to the accumulator, "
                             "then the ReLU, before the store.")),
           hint="Grouped order is a schedule, not a change of the body: "
                "`@kernel(tile_order=\"grouped\", group_size=2)` above the `def`. The "
                "epilogue (bias, ReLU) runs on the f32 accumulator, once, before the store."),
    Puzzle("split_k", "Split-K: partial products added atomically",
           (Param("c", "mut", "f32", 2), Param("a", "shared", "f32", 2),
            Param("b", "shared", "f32", 2)),
           _cases_split_k, ref_split_k, 1e-4, 1e-4,
           hint="Several instances (tile_id(2) = the K slice) add into the same tile of c, so "
                "no one owns it: the addition must be atomic, `atomic_add(c, (rows, cols), "
                "part)` inside `with unsafe():`, with rows and cols the tile's global indices."),
    # -- quantized weights, attention
    Puzzle("dequant_matmul", "int4 weights: dequantize and multiply",
           (Param("c", "mut", "f32", 2), Param("a", "shared", "f16", 2),
            Param("w", "shared", "u8", 2), Param("scale", "shared", "f32", 1)),
           _cases_dequant_matmul, ref_dequant_matmul, 1e-3, 1e-2,
           mistakes=(Mistake(_dequant_without_offset, "c is what the nibbles give without "
                             "their offset: a nibble holds the weight plus 8, so subtract 8 "
                             "after unpacking."),
                     Mistake(_dequant_low_only, "c is the product of the first half of K only "
                             "(the low nibbles): the high nibble of w[r, n] is row r + K/2 of "
                             "W, multiplied by the columns of a from K/2 on.")),
           hint="Per K tile of w (BK rows of bytes): `lo = bitwise_and(t, 15)`, `hi = "
                "bitwise_rshift(t, 4)`, each `.astype(f16) - 8.0`; lo multiplies a's K tile k, "
                "hi a's K tile k + num_tiles(w, 0, (BK, BN)). Scale the columns at the end."),
    Puzzle("flash_attention", "Flash attention, forward",
           (Param("out", "mut", "f32", 2), Param("q", "shared", "f16", 2),
            Param("k", "shared", "f16", 2), Param("v", "shared", "f16", 2),
            Param("scale", "scalar", "f32")),
           _cases_flash_attention, ref_flash_attention, 2e-3, 2e-3,
           mistakes=(Mistake(_attention_without_rescale, "the output is what attention gives "
                             "when the accumulator is not rescaled: when the running maximum "
                             "grows, multiply acc (like l) by exp(m - m_new) before adding "
                             "p @ v."),),
           hint="The online softmax of `online_softmax`, with p @ v accumulated on the way: "
                "`acc = mma(p.astype(f16), tv, acc * alpha)` where alpha = exp(m - m_new)."),
]}


# Small exercises of notebook 02 (one per idea: 2-D tiles, tile_id, load_tile, a reduction, a
# mask), checked the same way as the puzzles.

def ref_clip2d(x):
    return np.clip(x, -1.0, 1.0)


def ref_row_index(x):
    return x * np.arange(x.shape[0], dtype=np.float32)[:, None]


def ref_tile_flip(x, tile=(16, 32)):
    # the tiles of each tile row in reverse order (the check's shapes are whole tiles)
    n = x.shape[1] // tile[1]
    return np.concatenate([x[:, j * tile[1]:(j + 1) * tile[1]] for j in reversed(range(n))],
                          axis=1)


def ref_col_sum(x):
    return x.sum(axis=0, keepdims=True)


def ref_third_cols(x):
    z = np.zeros_like(x)
    z[:, ::3] = x[:, ::3]      # columns 0, 3, 6, ... kept
    return z


def _cases_2d(rng, shape=(100, 200), tile=(32, 64)):
    return [Case([_f32(rng, *shape) * 2], shape, "f32", tile),
            Case([_f32(rng, 64, 64) * 2], (64, 64), "f32", (16, 16))]


def _cases_tile_flip(rng):
    return [Case([_f32(rng, 48, 128)], (48, 128), "f32", (16, 32)),
            Case([_f32(rng, 32, 96)], (32, 96), "f32", (16, 32))]


def _cases_col_sum(rng):
    return [Case([_f32(rng, 64, 200)], (1, 200), "f32", (1, 64)),
            Case([_f32(rng, 128, 50)], (1, 50), "f32", (1, 16))]


_MAT = (Param("z", "mut", "f32", 2), Param("x", "shared", "f32", 2))

EXERCISES: dict[str, Puzzle] = {p.name: p for p in [
    Puzzle("clip2d", "Clip a matrix to [-1, 1]", _MAT, _cases_2d, ref_clip2d,
           hint="`minimum(maximum(t, -1.0), 1.0)` on the tile `load_tile_like(x, z)`."),
    Puzzle("row_index", "Multiply every row by its row number", _MAT, _cases_2d, ref_row_index,
           hint="Row r of your tile is row `tile_id(0) * BM + r` of the matrix: "
                "`reshape(arange(BM, dtype=i32), (BM, 1)) + tile_id(0) * BM`, then "
                "`.astype(f32)`."),
    Puzzle("tile_flip", "Reverse the order of the tiles in each tile row", _MAT,
           _cases_tile_flip, ref_tile_flip, 0, 0,
           mistakes=(Mistake(lambda case: case.inputs[0], "z is x unchanged: each tile read "
                             "the tile of x at its own place."),),
           hint="`num_tiles(x, 1, (BM, BN))` tiles per row: yours reads tile "
                "`(tile_id(0), n - 1 - tile_id(1))` of x with `load_tile`."),
    Puzzle("col_sum", "Sum of every column", _MAT, _cases_col_sum, ref_col_sum, 1e-5, 1e-4,
           hint="Own a (1, BN) tile of the (1, N) output, load all M rows of your columns "
                "(`x: Tensor[f32, \"M, ?\"]` names M) and sum over axis 0, keeping the dims."),
    Puzzle("third_cols", "Keep every third column, zero the others", _MAT, _cases_2d,
           ref_third_cols, 0, 0,
           hint="Global column indices as a (1, BN) tile, then "
                "`where(cols % 3 == 0, t, 0.0)`."),
]}

# The last result of each puzzle's check (for a progress overview), and every result in order.
RESULTS: dict[str, "CheckResult"] = {}
HISTORY: list["CheckResult"] = []


def _puzzle(name: str) -> Puzzle:
    if name in PUZZLES:
        return PUZZLES[name]
    if name in EXERCISES:
        return EXERCISES[name]
    raise KeyError(f"no puzzle or exercise named {name!r} (puzzles: {', '.join(PUZZLES)}; "
                   f"exercises: {', '.join(EXERCISES)})")


def reference_source(name: str) -> str:
    """The NumPy reference of a puzzle, as source text."""
    p = _puzzle(name)
    return inspect.getsource(p.reference)


def statement(name: str) -> str:
    """How the check launches the kernel of a puzzle (from its first case)."""
    p = _puzzle(name)
    case = p.cases(np.random.default_rng(0))[0]
    return case.describe(name, p.params)


def hint(name: str) -> None:
    """Print the hint of a puzzle."""
    p = _puzzle(name)
    print(f"hint for {name} ({p.title}): {p.hint}")


# --- the result ------------------------------------------------------------------------------

@dataclass
class CheckResult:
    """What a check found. True when the kernel is right; displays as plain text, and as a
    picture when there was a race, unwritten elements or wrong values."""

    puzzle: str
    ok: bool
    kind: str                    # ok | not_a_kernel | stale | signature | requirement |
                                 # launch | crash | race | out_of_bounds | unwritten |
                                 # mismatch | lab_error
    message: str
    picture: bytes | None = None  # PNG: the ownership map, or the wrong elements
    seed: int | None = None
    pattern: list[str] = field(default_factory=list)   # the pattern sentences of a mismatch

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return self.message

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(self.message)

    def _ipython_display_(self) -> None:
        from IPython.display import publish_display_data
        publish_display_data({"text/plain": self.message})
        if self.picture is not None:
            what = "wrong elements" if self.kind == "mismatch" else "ownership map"
            publish_display_data({"image/png": base64.b64encode(self.picture).decode("ascii"),
                                  "text/plain": f"<{what} of the output of `{self.puzzle}`>"})


class _Failed(Exception):
    """A check's finding (raised inside the check, turned into a CheckResult)."""

    def __init__(self, kind: str, lines: list[str], picture: bytes | None = None,
                 pattern: list[str] | None = None):
        super().__init__(kind)
        self.kind = kind
        self.lines = lines
        self.picture = picture
        self.pattern = pattern or []


# --- checking ----------------------------------------------------------------------------------

def _fmt(v) -> str:
    v = float(v)
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == int(v) and abs(v) < 1e6:
        return f"{v:.1f}"
    return f"{v:.6g}"


def _index(ix) -> str:
    return "[" + ", ".join(str(int(i)) for i in ix) + "]"


def _signature_of(kernel) -> str:
    parts = []
    for p in kernel.definition.params:
        if p.role == "mut":
            parts.append(f"{p.name}: Mut[Tensor[{p.dtype}, ...]]")
        elif p.role == "shared":
            parts.append(f"{p.name}: Tensor[{p.dtype}, ...]")
        elif p.role == "const":
            parts.append(f"{p.name}: Const[int]")
        else:
            parts.append(f"{p.name}: {p.dtype}")
    return f"{kernel.name}({', '.join(parts)})"


def _expected_signature(puzzle: Puzzle) -> str:
    parts = []
    for p in puzzle.params:
        if p.role == "mut":
            parts.append(f"{p.name}: Mut[Tensor[{p.dtype}, ...]] ({p.ndim}-D output)")
        elif p.role == "shared":
            parts.append(f"{p.name}: Tensor[{p.dtype}, ...] ({p.ndim}-D input)")
        else:
            parts.append(f"{p.name}: {p.dtype} (a number)")
    return f"{puzzle.name}({', '.join(parts)})"


def _check_kernel_object(puzzle: Puzzle, kernel) -> None:
    if kernel is None:
        raise _Failed("not_a_kernel", [
            "there is no kernel to check (None): run the puzzle's %%tilekernel cell first; if "
            "it reported errors, the kernel was not defined"])
    if type(kernel).__name__ == "FailedKernel":
        raise _Failed("stale", [kernel.message, "  (the check does not run an older version "
                                "of the kernel: it would pass or fail for code you no longer "
                                "have)"])
    if not hasattr(kernel, "definition") or not hasattr(kernel, "compile"):
        what = type(kernel).__name__
        extra = ""
        if inspect.isfunction(kernel):
            extra = (": it is a plain Python function. Put `%%tilekernel` on the first line of "
                     "its cell, so that the lab checks it and defines it as a tile kernel")
        raise _Failed("not_a_kernel", [f"this is not a tile kernel (a {what}){extra}"])


def _check_signature(puzzle: Puzzle, kernel) -> None:
    params = [p for p in kernel.definition.params
              if not (p.role == "const" and p.default is not None)]
    want = puzzle.params
    problems = []
    if len(params) != len(want):
        problems.append(f"it takes {len(params)} parameter(s) but the puzzle passes "
                        f"{len(want)}")
    else:
        for got, exp in zip(params, want):
            role_words = {"mut": "a `Mut` output", "shared": "a shared input `Tensor`",
                          "scalar": "a scalar", "const": "a `Const[int]`"}
            if got.role != exp.role:
                problems.append(f"`{got.name}` is {role_words.get(got.role, got.role)}, but "
                                f"the puzzle passes {role_words[exp.role]} there")
                continue
            if exp.role in ("mut", "shared"):
                dt = got.dtype.name if got.dtype is not None else "?"
                if dt != exp.dtype:
                    problems.append(f"`{got.name}` is declared with dtype {dt}, but the "
                                    f"puzzle's `{exp.name}` holds {exp.dtype}")
                if len(got.shape) != exp.ndim:
                    problems.append(f"`{got.name}` is declared with {len(got.shape)} "
                                    f"dimension(s), but the puzzle's `{exp.name}` has "
                                    f"{exp.ndim}")
            elif exp.role == "scalar":
                dt = got.dtype.name if got.dtype is not None else "?"
                if dt != exp.dtype:
                    problems.append(f"`{got.name}` is declared {dt}, but the puzzle passes "
                                    f"an {exp.dtype} number")
    if problems:
        raise _Failed("signature", [
            "the kernel's signature does not fit the puzzle: " + "; ".join(problems) + ".",
            f"  expected: {_expected_signature(puzzle)}",
            f"  yours:    {_signature_of(kernel)}"])


class _Backend:
    """Run the body with ``backend`` chosen for new tensors and launches, then restore."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        import cutile_lab as cl
        self._prev = _backend_module()._explicit
        cl.set_backend(self.name)

    def __exit__(self, *exc):
        _backend_module()._explicit = self._prev


def _backend_module():
    # the module (``cutile_lab.runtime.backend`` the attribute is its function of that name)
    import importlib
    return importlib.import_module("cutile_lab.runtime.backend")


def _render(diags) -> str:
    from cutile_lab.diagnostics import render_text
    return render_text(list(diags))


def _indent(text: str, by: str = "    ") -> str:
    return "\n".join(by + line if line else line for line in text.splitlines())


def _params_as(case: Case, kernel) -> list:
    """The kernel's own parameters, for describing a launch in its names."""
    return [Param(p.name, p.role, "") for p in kernel.definition.params
            if not (p.role == "const" and p.default is not None)][:len(case.inputs) + 1]


def _case_line(where: str, i: int, n: int, case: Case, kernel) -> str:
    return f"{where}, case {i} of {n}: `{case.describe(kernel.name, _params_as(case, kernel))}`"


def _launch(kernel, case: Case, backend: str, where: str):
    """Launch ``kernel`` on ``case``; return (output as NumPy, the launch op)."""
    import cutile_lab as cl
    from cutile_lab.errors import (CutileLabError, KernelDiagnosticsError, LaunchError,
                                   SimulationError)
    from cutile_lab.language.dtypes import dtype_by_name
    from cutile_lab.runtime.dtypes import numpy_dtype
    np_out = numpy_dtype(dtype_by_name(case.out_dtype))
    from cutile_lab.simulation import on_error, set_on_error
    before = on_error()
    # the check reads the simulator's findings from op.sim_result itself (with the picture)
    set_on_error("ignore")
    with _Backend(backend):
        try:
            out = cl.from_numpy(np.zeros(case.out_shape, dtype=np_out)).sync()
            args = [cl.from_numpy(a).sync() if isinstance(a, np.ndarray) else a
                    for a in case.inputs]
            op = kernel(out.partition(case.tile), *args, **case.launch)
            result = op.sync()
        except KernelDiagnosticsError as e:
            errors = [d for d in e.diagnostics if d.is_error]
            raise _Failed("launch", [f"the launch was refused ({where}):",
                                     _indent(_render(errors or e.diagnostics))]) from None
        except SimulationError as e:
            at = f" at {e.span}" if e.span else ""
            lines = [f"your kernel failed while running{at} ({where}): {e.message}"]
            if e.help:
                lines.append(f"  help: {e.help}")
            raise _Failed("crash", lines) from None
        except LaunchError as e:
            lines = [f"the launch was refused ({where}): {e.message}"]
            if e.help:
                lines.append(f"  help: {e.help}")
            raise _Failed("launch", lines) from None
        except CutileLabError as e:
            lines = [f"{type(e).__name__} ({where}): {e.message}"]
            if e.help:
                lines.append(f"  help: {e.help}")
            raise _Failed("crash", lines) from None
        finally:
            set_on_error(before)
        z = result[0]
        z = z.unpartition() if hasattr(z, "unpartition") else z
        return z.to_numpy(), op


_RACE = ("SIM010", "SIM011")
_BOUNDS = ("SIM001", "SIM002", "SIM003", "SIM005")


def _png(fig) -> bytes | None:
    try:
        from cutile_lab.performance import figure_png
        return figure_png(fig, dpi=80)
    except Exception:
        return None


def _ownership_png(sim, name: str) -> bytes | None:
    try:
        return _png(sim.ownership_figure(name, width=6.0))
    except Exception:
        return None


def _simulator_findings(sim, out_name: str, where: str) -> None:
    diags = list(getattr(sim, "diagnostics", []) or [])
    races = [d for d in diags if d.code in _RACE and d.is_error]
    if races:
        d = races[0]
        kind = "write" if d.code == "SIM010" else "read-write"
        n = int(sim.conflicts[out_name].sum()) if out_name in sim.conflicts else None
        lines = [f"a {kind} race ({where}): {d.message}"
                 + (f" ({n} element(s) of `{out_name}` are written by more than one tile)"
                    if n else ""),
                 "  Each element must have exactly one owner. The simulator saw two tiles "
                 "write the same place; on a GPU the result would depend on timing.",
                 _indent(_render([d]))]
        raise _Failed("race", lines, _ownership_png(sim, out_name))
    bounds = [d for d in diags if d.code in _BOUNDS and d.is_error]
    if bounds:
        d = bounds[0]
        raise _Failed("out_of_bounds", [
            f"an access out of bounds ({where}): {d.message}",
            "  On a GPU this is undefined behaviour; the simulator caught it.",
            _indent(_render([d]))])
    other = [d for d in diags if d.is_error]
    if other:
        d = other[0]
        raise _Failed("crash", [f"the simulator reported an error ({where}): {d.message}",
                                _indent(_render([d]))])
    own = getattr(sim, "ownership", {}).get(out_name)
    if own is not None:
        unwritten = own == -1
        if unwritten.any():
            from cutile_lab.simulation.memory import SHARED_ATOMIC
            first = np.argwhere(unwritten)[0]
            why = ("  Every element of the output belongs to one tile, and that tile must "
                   "store it.")
            if (own == SHARED_ATOMIC).any():
                why = ("  The atomic updates landed on some elements only: are their indices "
                       "the tile's global rows and columns (offset by tile_id * the tile "
                       "size)?")
            raise _Failed("unwritten", [
                f"{int(unwritten.sum())} of {own.size} elements of `{out_name}` were never "
                f"written ({where}); the first is {out_name}{_index(first)}.", why],
                _ownership_png(sim, out_name))


# --- what a mismatch looks like ---------------------------------------------------------------

def _tile_grid(shape, tile) -> tuple[int, ...]:
    return tuple(-(-s // t) for s, t in zip(shape, tile))


def _tiles_with(wrong: np.ndarray, tile) -> np.ndarray:
    """A bool per tile of the output's partition: does it hold a wrong element?"""
    grid = _tile_grid(wrong.shape, tile)
    out = np.zeros(grid, dtype=bool)
    for ix in np.ndindex(*grid):
        sl = tuple(slice(i * t, (i + 1) * t) for i, t in zip(ix, tile))
        out[ix] = wrong[sl].any()
    return out


def _span(axis_word: str, i: int, t: int, n: int) -> str:
    return f"{axis_word} {i * t}–{min((i + 1) * t, n) - 1}"


def patterns(wrong: np.ndarray, tile: tuple) -> list[str]:
    """Sentences that say where the wrong elements of an output are, over its tile grid."""
    shape = wrong.shape
    if wrong.all():
        return ["every element is wrong: the mistake is not confined to an edge, a tile row "
                "or a diagonal."]
    out: list[str] = []
    # the last tiles of an axis that stick out past the edge of the data
    edge = np.zeros(shape, dtype=bool)
    for axis, (n, t) in enumerate(zip(shape, tile)):
        if n % t:
            sl = [slice(None)] * len(shape)
            sl[axis] = slice(n - n % t, n)
            edge[tuple(sl)] = True
    if edge.any() and not edge.all() and not (wrong & ~edge).any():
        out.append("only the ragged edge: every wrong element is in the last tiles, those "
                   "that stick out past the end of the data. What do your loads read there "
                   "(padding), and does it take part in a reduction?")
    tiles = _tiles_with(wrong, tile)
    if wrong.ndim == 3 and shape[0] > 1:
        per_batch = wrong.reshape(shape[0], -1).any(axis=1)
        if not per_batch[0] and per_batch[1:].all():
            out.append("only batch 0 is right, every other batch is wrong: does every "
                       "instance read batch 0? The batch of your tile is tile_id(0).")
        elif per_batch.sum() == 1:
            out.append(f"only batch {int(np.argmax(per_batch))} is wrong.")
    if wrong.ndim == 2:
        i = np.arange(shape[0])[:, None]
        j = np.arange(shape[1])[None, :]
        for region, words in (((j > i), "above the diagonal (column > row)"),
                              ((j < i), "below the diagonal (column < row)"),
                              ((j == i), "on the diagonal")):
            if region.any() and (wrong == region).all():
                off_by_one = (" A comparison of row and column off by one (`<` where `<=` "
                              "belongs, or the other way round)?" if words == "on the diagonal"
                              else "")
                out.append(f"exactly the elements {words} are wrong, and all of "
                           f"them.{off_by_one}")
                break
            if region.any() and not (wrong & ~region).any():
                out.append(f"only elements {words} are wrong.")
                break
        g = tiles.shape
        if g[0] > 1 and g[1] > 1:
            diag = np.eye(g[0], g[1], dtype=bool)
            if not tiles[diag].any() and tiles[~diag].all():
                out.append("only the tiles on the diagonal of the tile grid (tile row = tile "
                           "column) are right: is tile_id(0) used where tile_id(1) belongs, "
                           "or the other way round?")
    if wrong.ndim >= 2:
        rows, cols = tiles.shape[-2], tiles.shape[-1]
        t2 = tiles.reshape(-1, rows, cols).any(axis=0)
        bad_rows, bad_cols = t2.any(axis=1), t2.any(axis=0)
        tr, tc = tile[-2], tile[-1]
        if rows > 1 and bad_rows.sum() == 1:
            r = int(np.argmax(bad_rows))
            out.append(f"one tile row: only tile row {r} ({_span('rows', r, tr, shape[-2])}) "
                       "is wrong.")
        elif rows > 1 and not bad_rows[0] and bad_rows[1:].all():
            out.append("only the first tile row is right: does something use the tile row 0 "
                       "for every tile (a missing or wrong tile_id(0))?")
        if cols > 1 and bad_cols.sum() == 1:
            c = int(np.argmax(bad_cols))
            out.append(f"one tile column: only tile column {c} "
                       f"({_span('columns', c, tc, shape[-1])}) is wrong.")
        elif cols > 1 and not bad_cols[0] and bad_cols[1:].all():
            out.append("only the first tile column is right: does something use the tile "
                       "column 0 for every tile (a missing or wrong tile_id(1))?")
    elif wrong.ndim == 1 and tiles.size > 1:
        if tiles.sum() == 1:
            t = int(np.argmax(tiles))
            out.append(f"one tile: only tile {t} ({_span('elements', t, tile[0], shape[0])}) "
                       "is wrong.")
        elif not tiles[0] and tiles[1:].all():
            out.append("only the first tile is right: is tile 0's data used for every tile?")
    # the same positions inside every whole tile
    whole = tuple(n // t * t for n, t in zip(shape, tile))
    if all(whole) and len(tiles.ravel()) > 1 and not out:
        blocks = wrong[tuple(slice(0, w) for w in whole)]
        split = blocks.reshape(sum(((n // t, t) for n, t in zip(whole, tile)), ()))
        axes = tuple(range(0, split.ndim, 2))
        within = split.transpose(axes + tuple(range(1, split.ndim, 2)))
        within = within.reshape((-1,) + tuple(tile))
        if within.shape[0] > 1 and within[0].any() and not within[0].all() \
                and (within == within[0]).all():
            out.append("the same positions are wrong inside every tile: an index within the "
                       "tile, not the tile's place in the grid.")
    n_tiles, n_bad = tiles.size, int(tiles.sum())
    if n_tiles > 1 and not out:
        out.append(f"{n_bad} of {n_tiles} tiles hold wrong elements (see the picture).")
    return out


def _value_hints(puzzle: Puzzle, got, exp, wrong, out_name: str) -> list[str]:
    hints = []
    if np.isnan(got[wrong]).any() and not np.isnan(exp).any():
        hints.append("some results are NaN: an exp or a division of padding values? Check "
                     "what the loads put past the edge of the data.")
    if np.isinf(got[wrong]).any() and not np.isinf(exp).any():
        hints.append("some results are infinite: does padding of -inf take part in a sum, or "
                     "a division by zero? Pad with what is neutral for the reduction: 0 for "
                     "a sum, -inf for a maximum.")
    if np.allclose(got[wrong], 0) and np.all(exp[wrong] < 0):
        hints.append("every expected value here is negative and you got 0.0: are padding "
                     "zeros taking part? Loads past the edge of the data pad with zeros unless "
                     "told otherwise (`padding=\"neg_inf\"` for a maximum).")
    elif not np.any(got):
        hints.append(f"the output is all zeros: is the result stored (`{out_name}.store(...)`), "
                     "and is it the result and not a placeholder?")
    if got.shape == exp.shape and got.ndim == 2 and got.shape[0] == got.shape[1] \
            and np.allclose(got, exp.T, rtol=1e-4, atol=1e-4):
        hints.append("the result is the transpose of the expected one.")
    with np.errstate(all="ignore"):
        ratio = got[wrong] / exp[wrong]
    if ratio.size > 1 and np.all(np.isfinite(ratio)) and np.allclose(ratio, ratio[0]) \
            and not np.isclose(ratio[0], 1.0) and not np.isclose(ratio[0], 0.0):
        hints.append(f"every wrong value is {_fmt(ratio[0])} times the expected one.")
    return hints


def _mistake(puzzle: Puzzle, case: Case, got: np.ndarray) -> str | None:
    for m in puzzle.mistakes:
        try:
            want = np.asarray(m.computes(case), dtype=np.float64)
        except Exception:
            continue
        if want.shape == got.shape and np.allclose(got, want, rtol=1e-2, atol=1e-2):
            return m.says
    return None


def _compare(puzzle: Puzzle, got: np.ndarray, case: Case, out_name: str, where: str,
             sim) -> None:
    exp = np.asarray(puzzle.reference(*case.inputs))
    if got.shape != exp.shape:
        raise _Failed("mismatch", [f"wrong shape ({where}): the output has shape {got.shape}, "
                                   f"expected {exp.shape}."])
    got64 = got.astype(np.float64)
    exp64 = exp.astype(np.float64)
    close = np.isclose(got64, exp64, rtol=puzzle.rtol, atol=puzzle.atol, equal_nan=True)
    if close.all():
        return
    wrong = ~close
    first = np.argwhere(wrong)[0]
    ix = tuple(first)
    pattern = patterns(wrong, case.tile)
    lines = [f"wrong values ({where}).",
             f"  {int(wrong.sum())} of {got.size} elements differ; the first is "
             f"{out_name}{_index(first)}: expected {_fmt(exp64[ix])}, got {_fmt(got64[ix])}."]
    lines += [f"  where: {p}" for p in pattern]
    likely = _mistake(puzzle, case, got64)
    if likely:
        lines.append(f"  likely: {likely}")
    lines += [f"  hint: {h}" for h in _value_hints(puzzle, got64, exp64, wrong, out_name)]
    picture = None
    if sim is not None and out_name in getattr(sim, "ownership", {}):
        try:
            from cutile_lab.simulation.picture import mismatch_figure
            picture = _png(mismatch_figure(sim, out_name, wrong))
        except Exception:
            picture = None
    raise _Failed("mismatch", lines, picture, pattern)


def _gpu_present() -> bool:
    try:
        import cutile_lab as cl
        return bool(cl.gpu_available())
    except Exception:
        return False


def check(name: str, kernel, *, seed: int | None = None, gpu: bool | None = None) -> CheckResult:
    """Check ``kernel`` against puzzle ``name``: on the simulator, then on the GPU when there is
    one (``gpu=False`` skips it). Inputs are fresh for every check; the seed they came from is
    in the message, and ``seed=`` replays it. Never raises: problems come back as a
    ``CheckResult``."""
    puzzle = _puzzle(name)
    if seed is None:
        seed = secrets.randbelow(1_000_000)
    rng = np.random.default_rng(seed)
    use_gpu = _gpu_present() if gpu is None else bool(gpu)
    drawn = False
    replay = (f"inputs from seed {seed}: `check_{name}({getattr(kernel, 'name', name)}, "
              f"seed={seed})` replays this check")
    try:
        _check_kernel_object(puzzle, kernel)
        _check_signature(puzzle, kernel)
        if puzzle.requires is not None:
            complaint = puzzle.requires(kernel)
            if complaint:
                raise _Failed("requirement", [complaint])
        out_name = kernel.definition.outputs[0].name
        cases = puzzle.cases(rng)
        drawn = True
        n = len(cases)
        # races, out-of-bounds accesses and crashes on any input come first: wrong values
        # are often only their consequence
        runs = []
        for i, case in enumerate(cases, start=1):
            where = _case_line("on the simulator", i, n, case, kernel)
            got, op = _launch(kernel, case, "sim", where)
            sim = getattr(op, "sim_result", None)
            if sim is not None:
                _simulator_findings(sim, out_name, where)
            runs.append((case, got, sim, where))
        for case, got, sim, where in runs:
            _compare(puzzle, got, case, out_name, where, sim)
        if use_gpu:
            for i, case in enumerate(cases, start=1):
                where = _case_line("on the GPU", i, n, case, kernel)
                got, _ = _launch(kernel, case, "gpu", where)
                _compare(puzzle, got, case, out_name, where, None)
        sizes = " and ".join("x".join(map(str, c.out_shape)) for c in cases)
        on = "the simulator and the GPU" if use_gpu else "the simulator"
        result = CheckResult(name, True, "ok",
                             f"✓ {name}: correct on {n} random inputs (outputs of {sizes}) on "
                             f"{on}: no races, nothing out of bounds ({replay}).", seed=seed)
    except _Failed as f:
        stuck = f"stuck? `hint(\"{name}\")`." if puzzle.hint else ""
        tail = [f"  {replay}; {stuck}" if drawn else f"  {stuck}"] if drawn or stuck else []
        result = CheckResult(name, False, f.kind, f"✗ {name}: " + "\n".join(f.lines + tail),
                             f.picture, seed, f.pattern)
    except Exception as e:     # a bug in the lab: say so, never a traceback from inside it
        result = CheckResult(name, False, "lab_error",
                             f"✗ {name}: the lab itself failed while checking your kernel "
                             f"({type(e).__name__}: {e}). This is most likely a bug in "
                             f"cutile_lab, not in your kernel ({replay}).", seed=seed)
    RESULTS[name] = result
    HISTORY.append(result)
    return result


def _make_check(name: str):
    def check_one(kernel, *, seed: int | None = None, gpu: bool | None = None) -> CheckResult:
        return check(name, kernel, seed=seed, gpu=gpu)
    check_one.__name__ = f"check_{name}"
    p = _puzzle(name)
    check_one.__doc__ = (f"Check a kernel for the puzzle {p.title!r}: "
                         f"{statement(name)}.")
    return check_one


for _name in [*PUZZLES, *EXERCISES]:
    globals()[f"check_{_name}"] = _make_check(_name)
    __all__.append(f"check_{_name}")


def progress() -> str:
    """One line per puzzle: solved, failed (and why) or not tried yet."""
    lines = []
    for name, p in PUZZLES.items():
        r = RESULTS.get(name)
        mark = "·" if r is None else ("✓" if r.ok else "✗")
        state = "not checked yet" if r is None else ("solved" if r.ok else r.kind)
        lines.append(f"{mark} {name:<16} {p.title} — {state}")
    return "\n".join(lines)
