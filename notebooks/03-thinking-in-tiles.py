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
# # 3 · Thinking in tiles: 2-D tiles, ragged edges, reductions, a fused softmax
#
# Tiles are not only 1-D. A 2-D output splits into `(BM, BN)` tiles, the launch grid is 2-D,
# and `tile_id(0)` / `tile_id(1)` say which tile an instance owns. This notebook works
# through the patterns that most kernels are made of: element-wise maps on matrices,
# ragged edges, reductions along a row, and several steps *fused* into one pass.

# %%
# %load_ext cutile_lab
# %matplotlib inline
import numpy as np

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
#
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
# shape: the checker holds you to it (TL016, notebook 2).
#
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
# * 2-D tiles, 2-D grids: `tile_id(0)`, `tile_id(1)` say which tile is yours.
# * Ragged edges are free: loads pad, stores mask. Choose the padding that is neutral for
#   what you compute: `0` for sums, `-inf` for maxima and softmax.
# * Reductions want the whole reduced axis in one tile; `keepdims=True` keeps the shape.
# * Fusing steps into one kernel turns several passes over memory into one.
#
# Next, **04-tensor-cores-and-the-roofline**: matrix products, and how fast is fast.
