# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 7 · Puzzles
#
# Eighteen kernels, from a scaled vector to flash attention and an int4 matrix product, each
# building on the ones before: element-wise and broadcasting, 2-D indices and masks, reductions
# longer than a tile (a loop, then an online softmax), the backward of an outer product, a 2-D
# convolution, batched and tiled matrix products (a `K` loop, tensor cores, grouped tile order,
# split-K with atomics), dequantization, attention.
#
# For each: a statement, the NumPy reference the kernel must match, a stub to complete (a
# `%%tilekernel` cell: edit it, run it) and a check. `check_<name>(kernel)` runs your kernel on
# **fresh random inputs** at two sizes, one of them with ragged edges, on the CPU simulator (and
# on the GPU too, if there is one), and says what is wrong:
#
# * which case failed, with its launch and the shapes of all its tensors, and the **seed** of its
#   inputs: `check_<name>(kernel, seed=N)` replays exactly that check;
# * for wrong values: how many, the first one, a **picture of the wrong elements over the tile
#   grid**, and the pattern they make ("only the ragged edge", "one tile row", "above the
#   diagonal", "only the diagonal tiles"...), and, when your result is what a common mistake
#   computes, which mistake;
# * a race between tiles (with the ownership picture), an access out of bounds, a crash at your
#   line, a signature that does not fit, a kernel whose cell failed to compile.
#
# `hint("<name>")` gives a nudge. The checks live in `puzzles.py`, next to this notebook. Every
# stub compiles and runs, and fails its check: run the whole notebook once to see the kinds of
# feedback, then solve them one by one. The solutions, each with a few lines of *why*, are in
# `07-puzzles-solutions.ipynb`.

# %%
# %load_ext cutile_lab
# %matplotlib inline
from puzzles import *

print("launches run on the", "GPU and the simulator" if cl.backend() == "gpu"
      else "CPU simulator (no GPU found)")


# %% [markdown]
# # Part 1 · Element-wise and broadcasting

# %% [markdown]
# ## Puzzle 1 · Scale by a scalar
#
# `z = alpha · x`, with `alpha` a number passed at launch. A parameter typed with a dtype
# (`alpha: f32`) is a scalar: the same value in every instance.
#
# The check launches `scale(z.partition((64,)), x, alpha=-1.5)` with `x: f32[1000]`, `z: f32[1000]` (then a second case, of other sizes) and compares the result with this NumPy reference:
#
# ```python
# def ref_scale(x, alpha):
#     return x * np.float32(alpha)
# ```
#
# Stuck? `hint("scale")`.

# %%
# %%tilekernel
def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], alpha: f32):
    t = load_tile_like(x, z)
    z.store(t)              # TODO: multiply by alpha


# %% tags=["nbval-ignore-output"]
check_scale(scale)


# %% [markdown]
# ### When a cell fails
#
# A `%%tilekernel` cell that does not compile leaves its kernel's name **unusable** until it
# compiles again: the check (or a launch) says so, rather than quietly running the version that
# compiled before. Try it: this redefinition of `scale` has a typo.

# %% tags=["raises-exception"]
# %%tilekernel
def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], alpha: f32):
    z.store(load_tile_like(x, z) * alpah)


# %% tags=["nbval-ignore-output"]
check_scale(scale)


# %% [markdown]
# Run the puzzle's cell above again (or fix this one) to define `scale` again.

# %% [markdown]
# ## Puzzle 2 · Add a row vector to every row (broadcast)
#
# Add the vector `row` (one value per column) to every row of the matrix `x`. Each
# instance owns a `(BM, BN)` tile; it needs the `BN` values of `row` for *its* columns, read with
# `load_tile(row, index, shape)` (the index counts in tiles), then reshaped to `(1, BN)` so that it
# broadcasts over the tile's rows.
#
# The stub is a first attempt with a bug. Run the check and read what it says.
#
# The check launches `add_row(z.partition((32, 64)), x, row)` with `x: f32[100, 200]`, `row: f32[200]`, `z: f32[100, 200]` (then a second case, of other sizes) and compares the result with this NumPy reference:
#
# ```python
# def ref_add_row(x, row):
#     return x + row[None, :]
# ```
#
# Stuck? `hint("add_row")`.

# %%
# %%tilekernel
def add_row(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"], row: Tensor[f32, "?"]):
    r = load_tile(row, (tile_id(0),), (BN,))     # a first attempt
    z.store(load_tile_like(x, z) + reshape(r, (1, BN)))


# %% tags=["nbval-ignore-output"]
check_add_row(add_row)


# %% [markdown]
# ## Puzzle 3 · Outer product of two vectors
#
# The outer product `z[i, j] = x[i] · y[j]` of two vectors. Your tile needs a piece of
# `x` for its rows and a piece of `y` for its columns; two broadcasts make the `(BM, BN)`
# product.
#
# The check launches `outer(z.partition((32, 32)), x, y)` with `x: f32[64]`, `y: f32[96]`, `z: f32[64, 96]` (then a second case, of other sizes) and compares the result with this NumPy reference:
#
# ```python
# def ref_outer(x, y):
#     return x[:, None] * y[None, :]
# ```
#
# Stuck? `hint("outer")`.

# %%
# %%tilekernel
def outer(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    tx = reshape(load_tile(x, (tile_id(0),), (BM,)), (BM, 1))
    ty = reshape(load_tile(y, (tile_id(0),), (BN,)), (1, BN))
    z.store(tx * ty)


# %% tags=["nbval-ignore-output"]
check_outer(outer)


# %% [markdown]
# # Part 2 · 2-D tiles: indices and masks

# %% [markdown]
# ## Puzzle 4 · Transpose a matrix
#
# `z = xᵀ`. The tile of `z` at `(i, j)` is the transpose of the tile of `x` at
# `(j, i)`, and `transpose(t)` transposes a tile.
#
# The stub is somebody's attempt with a raw store in an `unsafe` block: the ownership checker
# cannot help there, but the simulator still sees every store. The check shows the ownership map
# of the result: red means two tiles wrote the same elements. Fix it, ideally without `unsafe`.
#
# The check launches `transpose2d(z.partition((32, 64)), x)` with `x: f32[100, 200]`, `z: f32[200, 100]` (then a second case, of other sizes) and compares the result with this NumPy reference:
#
# ```python
# def ref_transpose2d(x):
#     return x.T.copy()
# ```
#
# Stuck? `hint("transpose2d")`.

# %%
# %%tilekernel
def transpose2d(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"]):
    t = load_tile(x, (tile_id(1), tile_id(0)), (BN, BM))
    with unsafe():                                # a first attempt with a raw store
        store(z, index=(tile_id(0), tile_id(0)), tile=transpose(t))


# %% tags=["nbval-ignore-output"]
check_transpose2d(transpose2d)


# %% [markdown]
# ## Puzzle 5 · Causal mask: keep the lower triangle
#
# Keep `x[i, j]` where `j <= i` and write 0 above the diagonal: the mask of causal
# attention. Square `(B, B)` tiles. Build the row and column index of every element of your tile
# from `arange(B, dtype=i32)`, `reshape` and `tile_id`, and choose with `where(condition, a, b)`.
#
# The check launches `causal_mask(z.partition((32, 32)), x)` with `x: f32[96, 96]`, `z: f32[96, 96]` (then a second case, of other sizes) and compares the result with this NumPy reference:
#
# ```python
# def ref_causal_mask(x):
#     return np.tril(x)          # keep x[i, j] where j <= i, zero above the diagonal
# ```
#
# Stuck? `hint("causal_mask")`.

# %%
# %%tilekernel
def causal_mask(z: Mut[Tensor[f32, "B, B"]], x: Tensor[f32, "?, ?"]):
    t = load_tile_like(x, z)
    z.store(t)                                    # TODO: zero where column > row


# %% tags=["nbval-ignore-output"]
check_causal_mask(causal_mask)


# %% [markdown]
# # Part 3 · Reductions: one tile, then longer than a tile

# %% [markdown]
# ## Puzzle 6 · Maximum of every row (rows shorter than the tile)
#
# The maximum of every row, with rows of up to `BN = 256` elements, loaded in one tile.
# The stub looks right. Is it?
#
# The check launches `row_max(z.partition((16, 1)), x)` with `x: f32[100, 200]`, `z: f32[100, 1]` (then a second case, of other sizes) and compares the result with this NumPy reference:
#
# ```python
# def ref_row_max(x):
#     return x.max(axis=1, keepdims=True)
# ```
#
# Stuck? `hint("row_max")`.

# %%
# %%tilekernel
def row_max(z: Mut[Tensor[f32, "BR, 1"]], x: Tensor[f32, "?, ?"], BN: Const[int] = 256):
    t = load_tile(x, (tile_id(0), 0), (BR, BN))
    z.store(max(t, axis=1, keepdims=True))        # almost: run the check


# %% tags=["nbval-ignore-output"]
check_row_max(row_max)


# %% [markdown]
# ## Puzzle 7 · Sum of every row, rows longer than a tile (a loop)
#
# The sum of every row, as a column `z` of shape `(rows, 1)`, for rows **longer
# than a tile**: the check uses rows of 300 and 129 with `BN = 64`. One instance owns `BR` rows and
# walks along them, one `(BR, BN)` tile at a time.
#
# The check launches `long_row_sum(z.partition((8, 1)), x)` with `x: f32[40, 300]`, `z: f32[40, 1]` (then a second case, of other sizes) and compares the result with this NumPy reference:
#
# ```python
# def ref_long_row_sum(x):
#     return x.sum(axis=1, keepdims=True)
# ```
#
# Stuck? `hint("long_row_sum")`.

# %%
# %%tilekernel
def long_row_sum(z: Mut[Tensor[f32, "BR, 1"]], x: Tensor[f32, "?, ?"], BN: Const[int] = 64):
    t = load_tile(x, (tile_id(0), 0), (BR, BN))
    z.store(sum(t, axis=1, keepdims=True))        # TODO: rows are longer than BN


# %% tags=["nbval-ignore-output"]
check_long_row_sum(long_row_sum)


# %% [markdown]
# ## Puzzle 8 · Backward of the outer product: the gradient of x
#
# Backward of `z = outer(x, y)`: given the gradient `dz` of a loss with respect to
# `z`, the gradient with respect to `x` is `dx[i] = Σⱼ dz[i, j] · y[j]`. One instance owns `BM`
# entries of `dx` and loops over the column tiles of `dz`.
#
# The check launches `outer_grad_x(dx.partition((32,)), dz, y)` with `dz: f32[100, 150]`, `y: f32[150]`, `dx: f32[100]` (then a second case, of other sizes) and compares the result with this NumPy reference:
#
# ```python
# def ref_outer_grad_x(dz, y):
#     return dz @ y              # z = outer(x, y)  =>  dL/dx[i] = sum_j dz[i, j] * y[j]
# ```
#
# Stuck? `hint("outer_grad_x")`.

# %%
# %%tilekernel
def outer_grad_x(dx: Mut[Tensor[f32, "BM"]], dz: Tensor[f32, "?, ?"], y: Tensor[f32, "?"],
                 BN: Const[int] = 64):
    acc = full((BM,), 0.0, dtype=f32)
    for j in range(num_tiles(dz, 1, (BM, BN))):
        t = load_tile(dz, (tile_id(0), j), (BM, BN))
        acc = acc + sum(t, axis=1)                # a first attempt
    dx.store(acc)


# %% tags=["nbval-ignore-output"]
check_outer_grad_x(outer_grad_x)


# %% [markdown]
# ## Puzzle 9 · Backward of the outer product: the gradient of y
#
# The other half of the backward: `dy[j] = Σᵢ dz[i, j] · x[i]`. One instance owns
# `BN` entries of `dy` and loops down the row tiles of `dz`.
#
# The check launches `outer_grad_y(dy.partition((32,)), dz, x)` with `dz: f32[150, 100]`, `x: f32[150]`, `dy: f32[100]` (then a second case, of other sizes) and compares the result with this NumPy reference:
#
# ```python
# def ref_outer_grad_y(dz, x):
#     return dz.T @ x            # dL/dy[j] = sum_i dz[i, j] * x[i]
# ```
#
# Stuck? `hint("outer_grad_y")`.

# %%
# %%tilekernel
def outer_grad_y(dy: Mut[Tensor[f32, "BN"]], dz: Tensor[f32, "?, ?"], x: Tensor[f32, "?"],
                 BM: Const[int] = 32):
    acc = full((BN,), 0.0, dtype=f32)
    for i in range(num_tiles(dz, 0, (BM, BN))):
        t = load_tile(dz, (i, tile_id(0)), (BM, BN))
        tx = reshape(load_tile(x, (i,), (BM,)), (BM, 1))
        acc = acc + sum(t, axis=0)                # a first attempt
    dy.store(acc)


# %% tags=["nbval-ignore-output"]
check_outer_grad_y(outer_grad_y)


# %% [markdown]
# ## Puzzle 10 · Softmax of rows longer than a tile (online)
#
# Softmax along rows **longer than a tile** (300 and 130 in the check). Each
# instance owns a `(BR, BN)` tile of `z`, but its values depend on the whole row: its maximum and
# its sum of exponentials. Compute both in one pass over the row's tiles, *online*: a running
# maximum `m` and a running sum `l`, rescaled whenever the maximum grows. Then write your own tile.
# This is the heart of flash attention (puzzle 18).
#
# The check launches `online_softmax(z.partition((8, 64)), x)` with `x: f32[16, 300]`, `z: f32[16, 300]` (then a second case, of other sizes) and compares the result with this NumPy reference:
#
# ```python
# def ref_online_softmax(x):
#     e = np.exp(x - x.max(axis=1, keepdims=True))
#     return e / e.sum(axis=1, keepdims=True)
# ```
#
# Stuck? `hint("online_softmax")`.

# %%
# %%tilekernel
def online_softmax(z: Mut[Tensor[f32, "BR, BN"]], x: Tensor[f32, "?, ?"]):
    t = load_tile_like(x, z, padding="neg_inf")
    e = exp(t - max(t, axis=1, keepdims=True))
    z.store(e / sum(e, axis=1, keepdims=True))   # a first attempt: rows are longer than BN


# %% tags=["nbval-ignore-output"]
check_online_softmax(online_softmax)


# %% [markdown]
# # Part 4 · Convolution and batches

# %% [markdown]
# ## Puzzle 11 · 2-D convolution, 3x3, zero padding
#
# A 3×3 two-dimensional convolution with zero padding ("same" size, as in deep learning:
# no flip): `z[i, j] = Σₐ Σ_b x[i+a-1, j+b-1] · k[a, b]`. A window shifted by one element is not
# a tile of `x`, so this is the first puzzle that needs a raw read: `gather(x, (rows, cols))`
# inside `with unsafe():`. Reads cannot race, but they can go out of bounds.
#
# The check launches `conv2d(z.partition((16, 16)), x, k)` with `x: f32[40, 50]`, `k: f32[3, 3]`, `z: f32[40, 50]` (then a second case, of other sizes) and compares the result with this NumPy reference:
#
# ```python
# def ref_conv2d(x, k):
#     # "same" 2-D convolution (cross-correlation, as in deep learning), zero outside x:
#     # z[i, j] = sum over a, b of x[i + a - 1, j + b - 1] * k[a, b], for a 3x3 k
#     xp = np.pad(x, 1)
#     h, w = x.shape
#     return sum(xp[a:a + h, b:b + w] * k[a, b] for a in range(3) for b in range(3))
# ```
#
# Stuck? `hint("conv2d")`.

# %%
# %%tilekernel
def conv2d(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"], k: Tensor[f32, "?, ?"]):
    rows = reshape(arange(BM, dtype=i32), (BM, 1)) + tile_id(0) * BM
    cols = reshape(arange(BN, dtype=i32), (1, BN)) + tile_id(1) * BN
    acc = full((BM, BN), 0.0, dtype=f32)
    for a in range(3):
        for b in range(3):
            with unsafe():                        # a first attempt, "faster" without checks
                w = gather(k, (a, b))
                win = gather(x, (rows + (a - 1), cols + (b - 1)), check_bounds=False)
            acc = acc + win * w
    z.store(acc)


# %% tags=["nbval-ignore-output"]
check_conv2d(conv2d)


# %% [markdown]
# ## Puzzle 12 · Batched matrix product
#
# `c[n] = a[n] @ b[n]` for every `n` of a batch, in `f32`. The output tile is
# 3-D, `(1, BM, BN)`: one instance per batch entry and tile. Loop over `K` in `BK` steps,
# accumulating `matmul(ta, tb)`; tiles are loaded 3-D and reshaped to 2-D.
#
# The check launches `batched_matmul(c.partition((1, 16, 16)), a, b)` with `a: f32[3, 40, 64]`, `b: f32[3, 64, 24]`, `c: f32[3, 40, 24]` (then a second case, of other sizes) and compares the result with this NumPy reference:
#
# ```python
# def ref_batched_matmul(a, b):
#     return np.matmul(a, b)
# ```
#
# Stuck? `hint("batched_matmul")`.

# %%
# %%tilekernel
def batched_matmul(c: Mut[Tensor[f32, "1, BM, BN"]], a: Tensor[f32, "?, ?, ?"],
                   b: Tensor[f32, "?, ?, ?"], BK: Const[int] = 32):
    acc = full((BM, BN), 0.0, dtype=f32)
    for k in range(num_tiles(a, 2, (1, BM, BK))):
        ta = reshape(load_tile(a, (0, tile_id(1), k), (1, BM, BK)), (BM, BK))
        tb = reshape(load_tile(b, (0, k, tile_id(2)), (1, BK, BN)), (BK, BN))
        acc = acc + matmul(ta, tb)
    c.store(reshape(acc, (1, BM, BN)))


# %% tags=["nbval-ignore-output"]
check_batched_matmul(batched_matmul)


# %% [markdown]
# # Part 5 · Matrix products, step by step

# %% [markdown]
# ## Puzzle 13 · Matrix product with a loop over K
#
# `c = a @ b` in `f32`, with `K` longer than a tile: the `(BM, BN)` tile of `c` is
# the sum over `k` of the `(BM, BK)` tile of `a` times the `(BK, BN)` tile of `b`.
#
# The check launches `matmul_kloop(c.partition((16, 16)), a, b)` with `a: f32[48, 100]`, `b: f32[100, 40]`, `c: f32[48, 40]` (then a second case, of other sizes) and compares the result with this NumPy reference:
#
# ```python
# def ref_matmul_kloop(a, b):
#     return a @ b
# ```
#
# Stuck? `hint("matmul_kloop")`.

# %%
# %%tilekernel
def matmul_kloop(c: Mut[Tensor[f32, "BM, BN"]], a: Tensor[f32, "?, ?"], b: Tensor[f32, "?, ?"],
                 BK: Const[int] = 32):
    ta = load_tile(a, (tile_id(0), 0), (BM, BK))
    tb = load_tile(b, (0, tile_id(1)), (BK, BN))
    c.store(matmul(ta, tb))                       # TODO: K is longer than BK


# %% tags=["nbval-ignore-output"]
check_matmul_kloop(matmul_kloop)


# %% [markdown]
# ## Puzzle 14 · a @ bᵀ on tensor cores (mma)
#
# `c = a @ bᵀ` for `f16` inputs, on tensor cores: the second operand comes
# as `bt`, `N × K` (as the keys of attention do, or the weights of a linear layer). `mma(ta, tb,
# acc)` multiplies two `f16` tiles and adds to an `f32` accumulator; the `(BK, BN)` tile it needs
# is the transpose of a `(BN, BK)` tile of `bt`. The sizes in the check are not multiples of the
# tiles.
#
# The check launches `matmul_mma(c.partition((32, 32)), a, bt)` with `a: f16[100, 72]`, `bt: f16[80, 72]`, `c: f32[100, 80]` (then a second case, of other sizes) and compares the result with this NumPy reference:
#
# ```python
# def ref_matmul_mma(a, bt):
#     return a.astype(np.float32) @ bt.astype(np.float32).T     # bt is (N, K): c = a @ btᵀ
# ```
#
# Stuck? `hint("matmul_mma")`.

# %%
# %%tilekernel
def matmul_mma(c: Mut[Tensor[f32, "BM, BN"]], a: Tensor[f16, "?, ?"], bt: Tensor[f16, "?, ?"],
               BK: Const[int] = 32):
    zero = full((BM, BN), 0.0, dtype=f32)
    acc = zero
    for k in range(num_tiles(a, 1, (BM, BK))):
        ta = load_tile(a, (tile_id(0), k), (BM, BK))
        tb = transpose(load_tile(bt, (tile_id(1), k), (BN, BK)))
        acc = mma(ta, tb, zero)                   # a first attempt
    c.store(acc)


# %% tags=["nbval-ignore-output"]
check_matmul_mma(matmul_mma)


# %% [markdown]
# ## Puzzle 15 · relu(a @ b + bias) in grouped tile order
#
# `c = relu(a @ b + bias)`, a linear layer, with the bias and the ReLU
# applied to the `f32` accumulator before the single store (a fused *epilogue*), launched in
# **grouped tile order**. In row order the tiles run (0, 0), (0, 1), (0, 2)...: consecutive tiles
# share a tile row of `a` but each needs a different column band of `b`. Grouped order walks a
# band of `group_size` tile rows column by column, so tiles that run together share both operands
# in L2. It is a schedule, declared on the kernel; each tile keeps its single owner. Ask for
# groups of 2 tile rows.
#
# The check launches `matmul_grouped(c.partition((32, 32)), a, b, bias)` with `a: f16[128, 64]`, `b: f16[64, 128]`, `bias: f32[128]`, `c: f32[128, 128]` (then a second case, of other sizes) and compares the result with this NumPy reference:
#
# ```python
# def ref_matmul_grouped(a, b, bias):
#     return np.maximum(a.astype(np.float32) @ b.astype(np.float32) + bias[None, :], 0)
# ```
#
# Stuck? `hint("matmul_grouped")`.

# %%
# %%tilekernel
# TODO: run the tiles in grouped order, 2 tile rows per group
def matmul_grouped(c: Mut[Tensor[f32, "BM, BN"]], a: Tensor[f16, "?, ?"],
                   b: Tensor[f16, "?, ?"], bias: Tensor[f32, "?"], BK: Const[int] = 32):
    acc = full((BM, BN), 0.0, dtype=f32)
    for k in range(num_tiles(a, 1, (BM, BK))):
        ta = load_tile(a, (tile_id(0), k), (BM, BK))
        tb = load_tile(b, (k, tile_id(1)), (BK, BN))
        acc = mma(ta, tb, acc)
    c.store(acc)                                  # TODO: add the bias, then the ReLU


# %% tags=["nbval-ignore-output"]
check_matmul_grouped(matmul_grouped)


# %% [markdown]
# ## Puzzle 16 · Split-K: partial products added atomically
#
# When `M` and `N` are small and `K` is long, there are too few output tiles to fill a
# GPU. **Split-K** cuts `K` into slices too: the launch has a third grid axis, `tile_id(2)`, the
# slice, and `grid=` says so (the check passes `grid=(M tiles, N tiles, K / BK)`). Every slice
# computes a partial product for the same tile of `c`, so no instance owns that tile: the partial
# products must be *added atomically* into `c` (which starts at zero), a raw operation inside
# `with unsafe():`. The stub stores instead. Run it and see what the simulator says.
#
# The check launches `split_k(c.partition((16, 16)), a, b, grid=(3, 2, 4))` with `a: f32[40, 64]`, `b: f32[64, 24]`, `c: f32[40, 24]` (then a second case, of other sizes) and compares the result with this NumPy reference:
#
# ```python
# def ref_split_k(a, b):
#     return a @ b
# ```
#
# Stuck? `hint("split_k")`.

# %%
# %%tilekernel
def split_k(c: Mut[Tensor[f32, "BM, BN"]], a: Tensor[f32, "?, ?"], b: Tensor[f32, "?, ?"],
            BK: Const[int] = 16):
    with unsafe():                                # a third grid axis: K's slices share c's tiles
        s = tile_id(2)
        ta = load_tile(a, (tile_id(0), s), (BM, BK))
        tb = load_tile(b, (s, tile_id(1)), (BK, BN))
        part = matmul(ta, tb)
        store(c, index=(tile_id(0), tile_id(1)), tile=part)   # a first attempt


# %% tags=["nbval-ignore-output"]
check_split_k(split_k)


# %% [markdown]
# # Part 6 · Quantized weights and attention

# %% [markdown]
# ## Puzzle 17 · int4 weights: dequantize and multiply
#
# `c = a @ W` where `W` (`K × N`) is stored as **4-bit integers**, two per byte,
# with one scale per column: `W[r, n] = (nibble − 8) · scale[n]`. The packed `w` is `K/2 × N`
# bytes: the low nibble of `w[r, n]` is row `r` of `W`, the high nibble row `r + K/2`. Unpack with
# `bitwise_and` and `bitwise_rshift`, convert to `f16`, and multiply on tensor cores. `K/2` is a
# multiple of `BK`.
#
# The check launches `dequant_matmul(c.partition((16, 32)), a, w, scale)` with `a: f16[48, 128]`, `w: u8[64, 64]`, `scale: f32[64]`, `c: f32[48, 64]` (then a second case, of other sizes) and compares the result with this NumPy reference:
#
# ```python
# def ref_dequant_matmul(a, w, scale):
#     return a.astype(np.float32) @ (unpack_int4(w) * scale[None, :])
# ```
#
# Stuck? `hint("dequant_matmul")`.

# %%
# %%tilekernel
def dequant_matmul(c: Mut[Tensor[f32, "BM, BN"]], a: Tensor[f16, "?, ?"], w: Tensor[u8, "?, ?"],
                   scale: Tensor[f32, "?"], BK: Const[int] = 32):
    half = num_tiles(w, 0, (BK, BN))
    acc = full((BM, BN), 0.0, dtype=f32)
    for k in range(half):
        t = load_tile(w, (k, tile_id(1)), (BK, BN))
        lo = bitwise_and(t, 15).astype(f16)       # a first attempt
        hi = bitwise_rshift(t, 4).astype(f16)
        acc = mma(load_tile(a, (tile_id(0), k), (BM, BK)), lo, acc)
        acc = mma(load_tile(a, (tile_id(0), k + half), (BM, BK)), hi, acc)
    s = reshape(load_tile(scale, (tile_id(1),), (BN,)), (1, BN))
    c.store(acc * s)


# %% tags=["nbval-ignore-output"]
check_dequant_matmul(dequant_matmul)


# %% [markdown]
# ## Puzzle 18 · Flash attention, forward
#
# Attention, `softmax(q kᵀ · scale) v`, for one head: `q`, `k`, `v` are
# `(S, D)` in `f16`, the output `f32`. Each instance owns `BQ` query rows and streams `k` and `v` in
# blocks of `BKV` rows, with the online softmax of puzzle 10 and `p @ v` accumulated on the way:
# the full `S × S` score matrix never exists. The library's kernel
# (`cutile_lab/kernels/flash_attention.py`) is a tuned version of the same loop for many heads,
# causal masks, base-2 exponentials and a scale folded into them; here, write the plain one.
#
# The check launches `flash_attention(out.partition((32, 32)), q, k, v, scale=0.176777)` with `q: f16[96, 32]`, `k: f16[96, 32]`, `v: f16[96, 32]`, `out: f32[96, 32]` (then a second case, of other sizes) and compares the result with this NumPy reference:
#
# ```python
# def ref_flash_attention(q, k, v, scale):
#     s = (q.astype(np.float32) @ k.astype(np.float32).T) * scale
#     p = np.exp(s - s.max(axis=1, keepdims=True))
#     return (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float32)
# ```
#
# Stuck? `hint("flash_attention")`.

# %%
# %%tilekernel
def flash_attention(out: Mut[Tensor[f32, "BQ, D"]], q: Tensor[f16, "?, D"],
                    k: Tensor[f16, "?, D"], v: Tensor[f16, "?, D"], scale: f32,
                    BKV: Const[int] = 32):
    tq = load_tile_like(q, out)
    m = full((BQ, 1), -1.0e30, dtype=f32)
    l = full((BQ, 1), 0.0, dtype=f32)
    acc = full((BQ, D), 0.0, dtype=f32)
    for j in range(num_tiles(k, 0, (BKV, D))):
        tk = load_tile(k, (j, 0), (BKV, D))
        s = mma(tq, transpose(tk), full((BQ, BKV), 0.0, dtype=f32)) * scale
        m_new = maximum(m, max(s, axis=1, keepdims=True))
        p = exp(s - m_new)
        l = l * exp(m - m_new) + sum(p, axis=1, keepdims=True)
        acc = mma(p.astype(f16), load_tile(v, (j, 0), (BKV, D)), acc)   # a first attempt
        m = m_new
    out.store(acc / l)


# %% tags=["nbval-ignore-output"]
check_flash_attention(flash_attention)

# %% [markdown]
# ## Where you stand

# %% tags=["nbval-ignore-output"]
print(progress())
