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
# # 1 · Hello, tile
#
# A GPU kernel is usually written from the point of view of one *thread*. A **tile kernel**
# is written from the point of view of one *tile* of the output: a block of, say, 128
# elements that one instance of the kernel computes with whole-tile operations (load a tile,
# add two tiles, store a tile). The compiler spreads each tile operation over the GPU's
# threads.
#
# cutile_lab adds one rule, borrowed from Rust: **each instance owns its own tile of the
# output, and only reads the inputs.** The lab checks the rule when you define a kernel and
# again when you launch it, so a data race cannot be written.
#
# Everything here runs on a laptop: without a GPU, kernels run on a CPU simulator (NumPy,
# tile by tile, with the GPU's semantics). With a GPU, the same cells launch on it.

# %%
# %load_ext cutile_lab
# %matplotlib inline
import numpy as np

ON_GPU = cl.backend() == "gpu"
print("launches run on the", "GPU" if ON_GPU else "CPU simulator (no GPU found)")


# %% [markdown]
# ## The kernel
#
# Vector addition, `z = x + y`. Read the signature first, it is where the ownership lives:
#
# * `z: Mut[Tensor[f32, "B"]]`: `z` is **one tile** of the output, `B` elements of `f32`,
#   owned by this instance (`Mut`). `B` is a *const generic*, a compile-time size that is
#   bound when you launch.
# * `x: Tensor[f32, "?"]` and `y`: shared, read-only inputs of any length (`?`).
#
# In the body, `load_tile_like(x, z)` reads the tile of `x` that sits where `z`'s tile sits,
# and `z.store(...)` writes this instance's own tile. There is no index anywhere, so there
# is no way to write into another instance's tile.

# %%
# %%tilekernel
def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    tx = load_tile_like(x, z)
    ty = load_tile_like(y, z)
    z.store(tx + ty)


# %% [markdown]
# The report says the kernel passed the ownership checks and will be compiled at launch,
# once `B` is known. The cell also defined `add` in the notebook, ready to launch.
#
# ## Tensors, partitions and the grid
#
# `cl.randn(n)` and `cl.zeros(n)` *describe* work; `.sync()` runs it and gives the tensor
# (in GPU memory, or in host memory on the simulator).
#
# To launch, split the output into tiles: `z.partition(128)` is a **partition** of z into
# 128-element tiles. The launch grid follows from it: one kernel instance per tile,
# ⌈1000 / 128⌉ = 8 of them. You never compute a grid by hand. Since 1000 is not a multiple
# of 128, the last tile is *ragged*: it holds 104 elements, and the rest of it is masked.

# %%
n = 1000
x = cl.randn(n, seed=1).sync()
y = cl.randn(n, seed=2).sync()
z = cl.zeros(n).sync()

zp = z.partition(128)
print(zp)
print("grid:", zp.grid, "| tiles:", zp.num_tiles, "| ragged:", zp.ragged)

# %% [markdown]
# A partition **moves** the tensor: the partition now owns the memory, and the name `z` may
# no longer be used (notebook 3 shows what happens if you try).
#
# ## Run it
#
# `add(zp, x, y)` builds the launch, and nothing runs yet. `.sync()` runs it, waits, and hands
# ownership back: you get the arguments back as a tuple. `zp.unpartition()` turns the
# partition back into a plain tensor.

# %%
launch = add(zp, x, y)
zp, x, y = launch.sync()
z = zp.unpartition()
z

# %% [markdown]
# Compare with NumPy:

# %%
expected = x.to_numpy() + y.to_numpy()
got = z.to_numpy()
print("first elements:", got[:4])
print("max |error|:  ", np.abs(got - expected).max())
np.testing.assert_allclose(got, expected, rtol=1e-6)

# %% [markdown]
# ## Which tile wrote which element?
#
# The simulator records every store, so it can draw the **ownership map**: each element in
# the colour of the tile that wrote it. A GPU keeps no such record, so on a GPU machine we
# run the launch once more on the simulator, with `cl.set_backend("sim")`.

# %%
cl.set_backend("sim")            # launches below run on the CPU simulator
sim = add(cl.zeros(n).partition(128), cl.asarray(x.to_numpy()), cl.asarray(y.to_numpy()))
sim.sync()
cl.set_backend(None)             # back to the automatic choice (the GPU, if there is one)

print(sim.sim_result)
sim.sim_result.ownership_figure("z")


# %% [markdown]
# What to look at: eight bands, one per tile, and every element written by exactly one tile:
# nothing red (written twice), nothing grey (never written). The last band is shorter: tile
# 7 covers elements 896 to 999, and the hatched part of it past the end of the array (up to
# 1023) was masked, not written.
#
# ## What the compiler sees: Tile IR
#
# A `%%tilekernel` cell compiles at once when every const generic is known; `--spec B=128`
# gives `B`. The report then shows the Tile IR beside your source (hover a line to link the
# two), the registers and shared memory the kernel needs, and the machine code (SASS).

# %% tags=["nbval-ignore-output"]
# %%tilekernel --spec B=128
def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    tx = load_tile_like(x, z)
    ty = load_tile_like(y, z)
    z.store(tx + ty)


# %% [markdown]
# The same from Python: `add.compile(arch, B=128)` returns the compiled kernel. A few lines
# of its Tile IR carry the whole story:
#
# * `make_partition_view ... tile=(128)`: the partition, and what loads read past the edge;
# * `load_view_tko ... [%blockId_x...]`: each instance loads the tile *at its own block id*;
# * `store_view_tko`: and stores its own tile, at the same index.

# %% tags=["nbval-ignore-output"]
compiled = add.compile("sm_90", B=128)      # sm_90: an H100
print(compiled.summary(), end="\n\n")
for line in compiled.tileir.splitlines():
    line = line.strip()
    if "make_partition_view" in line:
        print(line)                             # the type holds the tile and the padding
    elif any(op in line for op in ("load_view_tko", "addf", "store_view_tko")):
        print(line.split(" : ")[0])             # the operation, without its types

# %% [markdown]
# ## Recap
#
# * A tile kernel describes the work of one tile; the partition of the output decides how
#   many instances run (the grid).
# * `Mut[...]` parameters are owned output tiles; `Tensor[...]` parameters are shared inputs.
#   No indices, no races.
# * Work is lazy; `.sync()` runs it and hands ownership back.
# * Without a GPU, the simulator runs the same kernels, and draws what a GPU cannot show.
#
# Next, **02-thinking-in-tiles**: 2-D tiles, `tile_id`, `load_tile`, reductions and masks.
