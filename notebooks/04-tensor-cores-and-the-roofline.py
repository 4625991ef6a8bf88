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
# # 4 · Tensor cores and the roofline
#
# A matrix product is where a GPU's tensor cores earn their keep. This notebook writes a
# GEMM with `mma` (matrix multiply-accumulate on tiles), counts its flops and bytes, places
# it on the **roofline** of the device, and tunes its tile sizes.

# %%
# %load_ext cutile_lab
# %matplotlib inline
import numpy as np

ON_GPU = cl.backend() == "gpu"
print("launches run on the", "GPU" if ON_GPU else "CPU simulator (no GPU found)")


# %% [markdown]
# ## GEMM with `mma` over K tiles
#
# `C = A @ B` with `A: M × K`, `B: K × N`. Each instance owns one `(BM, BN)` tile of `C`.
# It walks along K in steps of `BK`: loads an `(BM, BK)` tile of A and a `(BK, BN)` tile of
# B, and `mma(a, b, acc)` multiplies them on the tensor cores, adding into an `f32`
# accumulator that stays in registers. One store at the end.
#
# `num_tiles(a, 1, (BM, BK))` is the number of `BK`-wide tiles along A's axis 1 (that is
# ⌈K / BK⌉); `BK: Const[int] = 64` is a compile-time constant with a default.

# %%
# %%tilekernel
def matmul(c: Mut[Tensor[f16, "BM, BN"]], a: Tensor[f16, "?, ?"], b: Tensor[f16, "?, ?"],
           BK: Const[int] = 64):
    acc = full((BM, BN), 0.0, dtype=f32)
    for k in range(num_tiles(a, 1, (BM, BK))):
        ta = load_tile(a, (tile_id(0), k), (BM, BK))
        tb = load_tile(b, (k, tile_id(1)), (BK, BN))
        acc = mma(ta, tb, acc)
    c.store(acc.astype(f16))


# %% tags=["nbval-ignore-output"]
M = N = K = 4096 if ON_GPU else 256
a = cl.randn((M, K), dtype="f16", seed=1).sync()
b = cl.randn((K, N), dtype="f16", seed=2).sync()

cp, _, _ = matmul(cl.zeros((M, N), dtype="f16").partition((128, 128)), a, b).sync()
c = cp.unpartition()

# compare a block of rows against NumPy in f32 (f16 inputs are exact in f32)
an, bn = a.to_numpy()[:64].astype(np.float32), b.to_numpy().astype(np.float32)
expected = an @ bn
got = c.to_numpy()[:64].astype(np.float32)
rel = np.abs(got - expected).max() / np.abs(expected).max()
print(f"{M}x{N}x{K}: max error relative to max |C|: {rel:.1e}")
assert rel < 2e-3

# %% [markdown]
# The error is the size of `f16` rounding of the output: the products were accumulated in
# `f32`.
#
# ## Arithmetic intensity: count flops and bytes
#
# Whether a kernel is limited by memory or by arithmetic depends on its **arithmetic
# intensity**: flops per byte moved to and from memory.
#
# * `add` (notebook 1): 1 flop per element, 12 bytes moved (read two `f32`, write one):
#   1/12 ≈ 0.08 flop/byte.
# * GEMM: 2·M·N·K flops (a multiply and an add per term); at least A, B and C once each:
#   2·(MK + KN + MN) bytes in `f16`. At M = N = K = 4096 that is 4096/3 ≈ 1365 flop/byte.
#
# The lab derives the same numbers from the kernel itself (it follows the loads, the stores,
# the `mma` shapes and the loop's trip count), which is what `%tile_time` uses:

# %%
from cutile_lab.performance import count_elementwise, count_gemm
from cutile_lab.performance.counting import ArgInfo, count_launch

S = 4096
by_hand = {"add f32, 2^24 elements": count_elementwise(1 << 24, 4, n_inputs=2),
           f"matmul f16, {S}³": count_gemm(S, S, S, 2, 2)}
for name, cnt in by_hand.items():
    print(f"{name:>24}: {cnt.flops:.3g} flop, {cnt.bytes:.3g} B, "
          f"intensity {cnt.intensity:.3g} flop/B")

# the lab's count, from the kernel's source and the shapes alone (nothing is allocated)
shape = ArgInfo((S, S), f16)
derived = count_launch(matmul.definition, {"c": shape, "a": shape, "b": shape},
                       {"BM": 128, "BN": 128})
print(f"{'derived from the kernel':>24}: {derived.flops:.3g} flop, {derived.bytes:.3g} B, "
      f"intensity {derived.count.intensity:.3g} flop/B")
print(f"{'':>24}  (its tile loads and stores move {derived.tile_bytes:.3g} B: each tile "
      f"of A and B is read by {S // 128} instances)")

# %% [markdown]
# ## The roofline
#
# A device has two roofs: memory bandwidth (bytes/s) and peak arithmetic (flop/s, per
# precision). A kernel of intensity *I* can reach at most `min(peak, I × bandwidth)`. The
# intensity where the two meet is the **ridge**: below it a kernel is memory-bound, above it
# compute-bound. `%tile_device` lists the peaks:

# %% tags=["nbval-ignore-output"]
# %tile_device

# %% [markdown]
# The datasheet roofline of an H100, with our two kernels placed at their intensities (each
# marker is the best the roofline allows at that intensity, not a measurement):

# %%
from cutile_lab.performance import PEAKS, attainable_flops, roofline_figure

h100 = PEAKS["H100-SXM"]
fig = roofline_figure([], h100, precisions=["f32", "f16"],
                      title="Roofline, H100 SXM datasheet: where our kernels can be",
                      figsize=(9, 5.5))
ax = fig.axes[0]
# widen the view to the left, where add sits, and extend the memory roof there
ax.plot([0.01, 0.1], [0.01 * h100.mem_bw / 1e12, 0.1 * h100.mem_bw / 1e12], color="black",
        lw=2, zorder=3)
ax.set_xlim(0.01, 1e4)
ax.set_ylim(0.01, 3000)
for (name, cnt), prec in zip(by_hand.items(), ["f32", "f16"]):
    roof = attainable_flops(cnt.intensity, h100.mem_bw, h100.peak_flops(prec)) / 1e12
    ax.plot([cnt.intensity], [roof], "D", ms=9, mfc="white", mec="black", zorder=8)
    ax.annotate(name, (cnt.intensity, roof), textcoords="offset points", xytext=(8, -16),
                fontsize=9)
print(f"ridge points: f16 tensor {h100.ridge_point('f16'):.0f} flop/B, "
      f"f32 {h100.ridge_point('f32'):.0f} flop/B")
fig


# %% [markdown]
# `add` sits far left, under the memory roof: the best it can do is stream bytes at full
# bandwidth. The 4096³ GEMM sits right of the `f16` ridge: it can be compute-bound, if the
# kernel feeds the tensor cores well.
#
# With a GPU, measure instead of promising: `%tile_time` times a launch (CUDA events,
# median of repeats) and records it, and `%tile_roofline` draws every measurement against
# the device's own roofs. Without one these cells say so.

# %%
# %%tilekernel
def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


# %% tags=["nbval-ignore-output"]
n = (1 << 24) if ON_GPU else 4096
x, y, z = cl.randn(n, seed=1).sync(), cl.randn(n, seed=2).sync(), cl.zeros(n).sync()
c = cl.zeros((M, N), dtype="f16").sync()
# %tile_time add(z.partition_mut(1024), x, y)
# %tile_time matmul(c.partition_mut((128, 128)), a, b)

# %% tags=["nbval-ignore-output"]
# %tile_roofline

# %% [markdown]
# ### Recorded on an H100
#
# Without a GPU, the two cells above have nothing to time and the roofline has no points.
# Here is what the same kinds of kernel measured on an H100: the library's `add`, and its
# GEMM (this notebook's `matmul`, launched in grouped tile order with tuned tiles and hints)
# against cuBLAS through `torch.matmul`, 4096³ and 8192³ in `f16`. These numbers are
# **recorded**, read from the benchmark results committed with the lab; this notebook does not
# measure them.

# %%
import recorded

print(recorded.caption())
recorded.kernel_rows("gemm", columns=["name", "ms", "tflop_s", "pct_flops", "vs_baseline"],
                     contains=" f16 ")

# %%
recorded.kernel_rows("add", columns=["name", "ms", "tb_s", "pct_bw", "vs_baseline"])

# %%
recorded.figure("kernels-nvidia-h100-80gb-hbm3-roofline.png")

# %% [markdown]
# What to look at: `add` sits on the memory roof at about 92% of the bandwidth, level with
# `torch.add` and a device-to-device copy: there is nothing left to gain. The GEMM reaches
# 640 to 750 TFLOP/s, two thirds to three quarters of the `f16` tensor-core peak, within a
# few percent of cuBLAS (the speed-up column, 0.93 to 1.02). The simulator cannot tell you
# any of this: it runs the same kernels in NumPy on the CPU, to check them, not to time
# them.

# %% [markdown]
# ## Tuning tile sizes
#
# `BM`, `BN` and `BK` trade against each other: bigger tiles reuse each loaded byte more
# (higher intensity in registers and shared memory) but need more registers; past the
# register file, the compiler **spills** to local memory, which is slow. The compiler's
# resource report shows this without running anything, so it works on a laptop:

# %% tags=["nbval-ignore-output"]
import pandas as pd

rows = []
for BM, BN, BK in [(64, 64, 32), (64, 128, 64), (128, 128, 64), (128, 256, 64),
                   (256, 256, 64)]:
    res = matmul.compile("sm_90", BM=BM, BN=BN, BK=BK).resources
    rows.append({"BM": BM, "BN": BN, "BK": BK, "threads": res["max_threads_per_block"],
                 "registers": res["registers"],
                 "shared KiB": round(res["shared_bytes"] / 1024, 1),
                 "spills (local B)": res["local_bytes"],
                 "code KiB": round(res["code_bytes"] / 1024, 1)})
pd.DataFrame(rows)

# %% [markdown]
# What to look at:
#
# * **registers** read 255 in every row, and that is not a measurement of the tile size: the
#   compiler runs this kernel as one block of 256 threads per SM, so each thread may take
#   65,536 / 256 = 256 registers, and it takes the maximum, 255, whatever the tiles. The
#   column cannot tell the configurations apart.
# * **shared memory** can: the compiler stages the tiles of A and B through shared memory in
#   a pipeline of several buffers, so that the next loads are in flight while the tensor
#   cores work. Small tiles get a deep pipeline; big ones fill the 227 KiB of an H100's SM
#   with fewer stages.
# * **spills** show where the tiles stop fitting: from 128 × 256 on, the `f32` accumulator
#   (BM·BN values over 256 threads: 128 per thread at 128 × 256) and the operands no longer
#   fit 255 registers, and the compiler spills to local memory (and the code grows).
#
# Which one is fastest is a measurement. The recorded H100 rows above are the tuned answer
# for the library's version of this kernel: 128 × 256 and 256 × 256 tiles, with 8 worker
# warps (twice the threads, so half the accumulator per thread) to keep them out of spills.
#
# `sweep` does the same over a grid of choices, compiling in parallel, then runs each
# configuration: on a GPU it times it (and records it for `%tile_roofline`); without one it
# runs it on the simulator, checked against a reference by `check`. Then the table's time
# column is the **CPU time of the simulator**, which says how long NumPy took, not how fast
# the kernel is on a GPU: do not rank configurations by it.

# %% tags=["nbval-ignore-output"]
from cutile_lab.notebook import explore, sweep

ref = a.to_numpy()[:64].astype(np.float32) @ b.to_numpy().astype(np.float32)

def make_args(BM, BN, BK):          # the launch of one configuration: tiles of (BM, BN)
    return dict(c=c.partition_mut((BM, BN)), a=a, b=b, BK=BK)

def check(result):
    got = result[0].unpartition().to_numpy()[:64].astype(np.float32)
    return np.abs(got - ref).max() <= 2e-3 * np.abs(ref).max()

table = sweep(matmul, make_args, BM=[64, 128], BN=[64, 128], BK=[32, 64], check=check,
              progress=False)
if "sim_ms" in table:      # CPU time of the simulator: not a GPU speed, never a ranking
    table = table.rename(columns={"sim_ms": "simulator CPU ms (not GPU time)"})
table

# %% [markdown]
# And interactively: `explore` gives one control per choice; every change recompiles and
# re-runs, and the table below the plot keeps everything tried so far (`explorer.history`).

# %% tags=["nbval-ignore-output"]
explorer = explore(matmul, make_args, BM=[64, 128], BN=[64, 128], BK=[32, 64], check=check)
explorer

# %% [markdown]
# ## Recap
#
# * `mma(a, b, acc)` multiplies tiles on tensor cores; loop over K, accumulate in `f32`,
#   store once.
# * Arithmetic intensity (flop/byte) places a kernel on the roofline: left of the ridge it
#   is memory-bound, right of it compute-bound.
# * `%tile_time` and `%tile_roofline` measure against the device's own peaks; `sweep` and
#   `explore` search the tile sizes; the resource table shows spills before you run.
#
# Next, **05-pipelines**: lazy work, `.then()`, `await` and CUDA graphs.
