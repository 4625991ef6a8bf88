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
# # 2 · Thinking in tiles: 2-D tiles, `tile_id`, `load_tile`, reductions, masks
#
# Tiles are not only 1-D. A 2-D output splits into `(BM, BN)` tiles, the launch grid is 2-D,
# and `tile_id(0)` / `tile_id(1)` say which tile an instance owns. This notebook works
# through the pieces that most kernels are made of: element-wise maps on matrices, the
# tile's place in the grid, reading any tile of an input, reductions, masks, and several
# steps *fused* into one pass. Each piece ends with a small exercise and its check (the same
# checks as the puzzles of notebook 7); notebook 3 then goes through every rule of
# ownership.

# %%
# %load_ext cutile_lab
# %matplotlib inline
import numpy as np
from puzzles import hint, check_clip2d, check_row_index, check_tile_flip, check_col_sum, check_third_cols

ON_GPU = cl.backend() == "gpu"
print("launches run on the", "GPU" if ON_GPU else "CPU simulator (no GPU found)")


# %% [markdown]
# ## 2-D tiles
#
# `z = a·x + b` on a 100 × 300 matrix, in 32 × 64 tiles. The kernel is the 1-D one with a
# 2-D shape in its signature; `load_tile_like` still reads "my tile" of `x`.

# %%
# %%tilekernel
def affine(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"], a: f32, b: f32):
    z.store(a * load_tile_like(x, z) + b)


# %%
rng = np.random.default_rng(0)
xn = rng.standard_normal((100, 300)).astype(np.float32)

zp = cl.zeros((100, 300)).sync().partition((32, 64))
print(zp)

out, _, _, _ = affine(zp, cl.asarray(xn), 2.0, 1.0).sync()
np.testing.assert_allclose(out.unpartition().to_numpy(), 2 * xn + 1, rtol=1e-6)
print("matches NumPy")

# %% [markdown]
# ⌈100/32⌉ × ⌈300/64⌉ = 4 × 5 = 20 instances. Neither 100 nor 300 is a multiple of the tile,
# so the last row of tiles and the last column of tiles are ragged. The ownership map shows
# it (on the simulator):

# %%
cl.set_backend("sim")
sim = affine(cl.zeros((100, 300)).partition((32, 64)), cl.asarray(xn), 2.0, 1.0)
sim.sync()
cl.set_backend(None)
sim.sim_result.ownership_figure("z")


# %% [markdown]
# What to look at: tiles are numbered row-major over the grid (tile id = 5·bid0 + bid1, as
# the title says). The bottom row of tiles holds 4 real rows out of 32, the right column 44
# real columns out of 64; the hatched parts past the black edge lines were computed and
# masked, never written. Loads there read **padding**: zero by default.

# %% [markdown]
# **Exercise: clip every element of a matrix to [-1, 1].** Complete the kernel, run the cell, then the check. The check runs it on
# fresh random inputs (two sizes, one ragged) and says what is wrong; `hint("clip2d")` helps.

# %%
# %%tilekernel
def clip2d(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"]):
    t = load_tile_like(x, z)
    z.store(t)                                    # TODO: clip to [-1, 1]


# %% tags=["nbval-ignore-output"]
check_clip2d(clip2d)

# %% [markdown]
# One solution (run it, and the check again):

# %%
# %%tilekernel
def clip2d(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"]):
    z.store(minimum(maximum(load_tile_like(x, z), -1.0), 1.0))


# %% tags=["nbval-ignore-output"]
check_clip2d(clip2d)

# %% [markdown]
# ## Which tile am I? `tile_id`
#
# `tile_id(axis)` is the instance's place in the grid along an axis: tile `(i, j)` covers rows
# `i·BM ... i·BM + BM − 1` and columns `j·BN ...`. Combined with `arange`, it gives the global
# index of every element of the tile, as a tile: `reshape(arange(BM, dtype=i32), (BM, 1)) +
# tile_id(0) * BM` is the `(BM, 1)` column of row numbers, which broadcasts against a
# `(BM, BN)` tile.

# %% [markdown]
# **Exercise: multiply every row of `x` by its row number (`z[i, j] = i · x[i, j]`).** Complete the kernel, run the cell, then the check. The check runs it on
# fresh random inputs (two sizes, one ragged) and says what is wrong; `hint("row_index")` helps.

# %%
# %%tilekernel
def row_index(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"]):
    rows = reshape(arange(BM, dtype=i32), (BM, 1))   # TODO: rows of the matrix, not of the tile
    z.store(load_tile_like(x, z) * rows.astype(f32))


# %% tags=["nbval-ignore-output"]
check_row_index(row_index)

# %% [markdown]
# One solution (run it, and the check again):

# %%
# %%tilekernel
def row_index(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"]):
    rows = reshape(arange(BM, dtype=i32), (BM, 1)) + tile_id(0) * BM
    z.store(load_tile_like(x, z) * rows.astype(f32))


# %% tags=["nbval-ignore-output"]
check_row_index(row_index)

# %% [markdown]
# ## Reading any tile: `load_tile`
#
# `load_tile_like(x, z)` reads the tile of `x` at your own place. `load_tile(x, index, shape)`
# reads any tile: the index counts in **tiles** of that shape, `(1, 2)` is the tile at rows
# `BM ... 2·BM − 1`, columns `2·BN ...`. Inputs are shared, so any instance may read any tile of
# them; only the output is yours. `num_tiles(x, axis, shape)` says how many tiles of that shape
# cover `x` along an axis.

# %% [markdown]
# **Exercise: reverse the order of the tiles in each tile row: tile `(i, j)` of `z` is tile `(i, n − 1 − j)` of `x`.** Complete the kernel, run the cell, then the check. The check runs it on
# fresh random inputs (two sizes, one ragged) and says what is wrong; `hint("tile_flip")` helps.

# %%
# %%tilekernel
def tile_flip(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"]):
    n = num_tiles(x, 1, (BM, BN))
    z.store(load_tile(x, (tile_id(0), tile_id(1)), (BM, BN)))   # TODO: which tile of x?


# %% tags=["nbval-ignore-output"]
check_tile_flip(tile_flip)

# %% [markdown]
# One solution (run it, and the check again):

# %%
# %%tilekernel
def tile_flip(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"]):
    n = num_tiles(x, 1, (BM, BN))
    z.store(load_tile(x, (tile_id(0), n - 1 - tile_id(1)), (BM, BN)))


# %% tags=["nbval-ignore-output"]
check_tile_flip(tile_flip)

# %% [markdown]
# ## Reductions: one instance, whole rows
#
# A row sum needs a whole row in one tile. So an instance owns `BR` *complete* rows: its
# output tile is `(BR, 1)`, and it loads a `(BR, N)` tile of `x` with `load_tile`, whose
# index counts in tiles: `(tile_id(0), 0)` is "my block of rows, first (and only) block of
# columns".
#
# `N` in `x: Tensor[f32, "?, N"]` names the number of columns: it is bound at launch from
# `x`'s actual shape. (A tile's sizes must be powers of two, so this kernel wants rows of 64,
# 128, 256, ... elements; the softmax below lifts that.)

# %%
# %%tilekernel
def row_sum(z: Mut[Tensor[f32, "BR, 1"]], x: Tensor[f32, "?, N"]):
    t = load_tile(x, (tile_id(0), 0), (BR, N))
    z.store(sum(t, axis=1, keepdims=True))


# %% tags=["nbval-ignore-output"]
xn = rng.standard_normal((1000, 256)).astype(np.float32)
sums, _ = row_sum(cl.zeros((1000, 1)).partition((16, 1)), cl.asarray(xn)).sync()
got = sums.unpartition().to_numpy()
err = np.abs(got - xn.sum(axis=1, keepdims=True)).max()
print("grid:", sums.grid, " max |error|:", err)
assert err < 1e-4


# %% [markdown]
# `keepdims=True` keeps the reduced axis, so the result is `(BR, 1)`, the output tile's
# shape: the checker holds you to it (TL016, notebook 3).

# %% [markdown]
# **Exercise: the sum of every column, as a `(1, N)` row. `x: Tensor[f32, "M, ?"]` names the number of rows `M`.** Complete the kernel, run the cell, then the check. The check runs it on
# fresh random inputs (two sizes, one ragged) and says what is wrong; `hint("col_sum")` helps.

# %%
# %%tilekernel
def col_sum(z: Mut[Tensor[f32, "1, BN"]], x: Tensor[f32, "M, ?"]):
    t = load_tile(x, (0, tile_id(1)), (M, BN))
    z.store(max(t, axis=0, keepdims=True))        # TODO: a sum, not a maximum


# %% tags=["nbval-ignore-output"]
check_col_sum(col_sum)

# %% [markdown]
# One solution (run it, and the check again):

# %%
# %%tilekernel
def col_sum(z: Mut[Tensor[f32, "1, BN"]], x: Tensor[f32, "M, ?"]):
    t = load_tile(x, (0, tile_id(1)), (M, BN))
    z.store(sum(t, axis=0, keepdims=True))


# %% tags=["nbval-ignore-output"]
check_col_sum(col_sum)

# %% [markdown]
# ## Masks: `where` and padding
#
# Two ways to leave elements out. **Padding**: a load that sticks out past the data fills the
# outside with a value you choose (`padding="neg_inf"`, default zero), neutral for what comes
# next. **`where(condition, a, b)`**: element by element, with a condition built from the
# global indices of the tile (as above): `where(rows == cols, t, 0.0)` keeps the diagonal.

# %% [markdown]
# **Exercise: keep the columns whose index is a multiple of 3 (0, 3, 6, ...) and write 0 in the others.** Complete the kernel, run the cell, then the check. The check runs it on
# fresh random inputs (two sizes, one ragged) and says what is wrong; `hint("third_cols")` helps.

# %%
# %%tilekernel
def third_cols(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"]):
    cols = reshape(arange(BN, dtype=i32), (1, BN))   # TODO: the matrix's columns, not the tile's
    z.store(where(cols % 3 == 0, load_tile_like(x, z), 0.0))


# %% tags=["nbval-ignore-output"]
check_third_cols(third_cols)

# %% [markdown]
# One solution (run it, and the check again):

# %%
# %%tilekernel
def third_cols(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"]):
    cols = reshape(arange(BN, dtype=i32), (1, BN)) + tile_id(1) * BN
    z.store(where(cols % 3 == 0, load_tile_like(x, z), 0.0))


# %% tags=["nbval-ignore-output"]
check_third_cols(third_cols)

# %% [markdown]
# ## A fused softmax
#
# `softmax(x)` along rows is `exp(x - max(x)) / sum(exp(x - max(x)))`. In NumPy that is five
# passes over memory, each reading and writing a full matrix. A tile kernel loads each row
# **once**, does all the arithmetic in registers, and stores once: for a bandwidth-bound
# operation that is the whole game.
#
# Rows of 1000 elements do not fit a power-of-two tile, so the tile is 1024 wide and the
# last 24 columns are padding. Zero padding would be wrong here (it would take part in the
# max and add `exp(0 - max)` to the sum), so the load pads with `-inf`
# (`padding="neg_inf"`): `exp(-inf) = 0`, and padding drops out of both reductions. The
# padded columns are never stored.

# %%
# %%tilekernel
def softmax(z: Mut[Tensor[f32, "BR, BN"]], x: Tensor[f32, "?, ?"]):
    t = load_tile_like(x, z, padding="neg_inf")
    e = exp(t - max(t, axis=1, keepdims=True))
    z.store(e / sum(e, axis=1, keepdims=True))


# %% tags=["nbval-ignore-output"]
rows, cols = (16384, 1000) if ON_GPU else (256, 1000)
xn = (3 * rng.standard_normal((rows, cols))).astype(np.float32)
x = cl.asarray(xn)

out, _ = softmax(cl.zeros((rows, cols)).partition((4, 1024)), x).sync()
got = out.unpartition().to_numpy()

e = np.exp(xn - xn.max(axis=1, keepdims=True))
expected = e / e.sum(axis=1, keepdims=True)
print("max |error|:", float(np.abs(got - expected).max()))
print("rows sum to 1:", bool(np.allclose(got.sum(axis=1), 1, atol=1e-5)))
np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)

# %% [markdown]
# Each instance owned 4 whole rows, so the grid is (⌈rows/4⌉, 1). On a GPU, time it: the
# report gives the bandwidth, counting what a fused kernel must move (the matrix read once,
# written once).

# %% tags=["nbval-ignore-output"]
if ON_GPU:
    z = cl.zeros((rows, cols)).sync()
    # %tile_time softmax(z.partition_mut((4, 1024)), x)
else:
    print("timings need a GPU; here the kernel ran on the CPU simulator")

# %% [markdown]
# ## Recap
#
# * 2-D tiles, 2-D grids: `tile_id(0)`, `tile_id(1)` say which tile is yours; with `arange`
#   they give the global index of every element of it.
# * `load_tile_like` reads the input tile at your place, `load_tile` any tile (the index
#   counts in tiles); the output tile is only ever yours.
# * Ragged edges are free: loads pad, stores mask. Choose the padding that is neutral for
#   what you compute: `0` for sums, `-inf` for maxima and softmax; `where` masks by index.
# * Reductions want the whole reduced axis in one tile (notebook 7 lifts that with a loop);
#   `keepdims=True` keeps the shape.
# * Fusing steps into one kernel turns several passes over memory into one.
#
# Next, **03-ownership**: every rule the checker enforces, and why.
