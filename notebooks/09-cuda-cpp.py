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
# # 9 · CUDA C++ beside tile kernels
#
# Some algorithms want what a tile language hides: warp shuffles, hand-placed shared memory,
# one thread's view of the data. The lab takes **CUDA C++ kernels** too, and holds them to
# the same ownership rules as your tile kernels:
#
# * a `%%cuda` cell (or `cl.cuda_kernel(source, name)`) compiles CUDA C++ with NVRTC, on
#   the CPU: no GPU is needed to compile, read the PTX and SASS, or see the resources;
# * the **signature** says what the kernel owns: a `const T*` parameter is shared (read),
#   a `T*` is written, a value is a scalar;
# * a launch, `k(args..., grid=..., block=...)`, is a lazy `DeviceOp` checked like a tile
#   kernel's launch (aliasing, moves, work in flight) and chained with tile kernels and
#   PyTorch work on one stream, into CUDA graphs too.
#
# The example: a row-wise softmax written by hand in CUDA C++, then the same operation as a
# tile kernel, side by side on the roofline.

# %%
# %load_ext cutile_lab
# %matplotlib inline
import numpy as np

ON_GPU = cl.backend() == "gpu"
print("launches run on the", "GPU" if ON_GPU else "CPU simulator (no GPU found)")

# %% [markdown]
# ## A hand-written softmax
#
# One block of 256 threads per row. Each thread walks the row with a stride of 256; the
# row's maximum and sum are reduced first within each warp with `__shfl_xor_sync`, then
# across the block's 8 warps through shared memory.

# %% tags=["nbval-ignore-output"]
# %%cuda
extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y,
                                        int cols) {
    __shared__ float part[8];
    const float* r = x + (long long)blockIdx.x * cols;
    float* o = y + (long long)blockIdx.x * cols;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float m = -3.402823466e38f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, r[c]);
    for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    if (lane == 0) part[warp] = m;
    __syncthreads();
    m = part[0];
    for (int w = 1; w < blockDim.x / 32; ++w) m = fmaxf(m, part[w]);
    __syncthreads();
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += __expf(r[c] - m);
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) part[warp] = s;
    __syncthreads();
    s = 0.0f;
    for (int w = 0; w < blockDim.x / 32; ++w) s += part[w];
    float inv = 1.0f / s;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) o[c] = __expf(r[c] - m) * inv;
}

# %% [markdown]
# The report is the one a tile kernel gets: resources (registers, the 32 bytes of shared
# memory), compile time and cache state, and, one click away, the PTX (and the SASS where a
# disassembler is installed). Its notes say what the lab read off the signature, and what
# it does **not** check: a C++ body can index anywhere, so staying inside each tensor is the
# kernel author's promise.
#
# The cell defined `softmax_rows` in the notebook: a kernel you can launch, whose
# parameters carry their ownership.

# %%
print(softmax_rows)
for p in softmax_rows.signature.params:
    print(f"  {p.name:5} {p.ctype:24} -> {p.role}")

# %% tags=["nbval-ignore-output"]
ptx = softmax_rows.compiled.ptx.splitlines()
print("\n".join(l for l in ptx if "shfl" in l)[:400])
print("registers:", softmax_rows.compiled.resources["registers"],
      " shared bytes:", softmax_rows.compiled.resources["shared_bytes"])

# %% [markdown]
# A broken kernel is reported at its line in the cell, with NVRTC's message:

# %% tags=["raises-exception"]
# %%cuda
extern "C" __global__ void broken(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * xs[i];
}

# %% [markdown]
# ## Launching it, under the ownership rules
#
# `grid` and `block` are CUDA's `<<<grid, block>>>`. The problem: rows of 4096 `f32` (on the
# simulator a small one: the checks are the same).

# %%
rows, cols = (16384, 4096) if ON_GPU else (64, 4096)
rng = np.random.default_rng(0)
xn = (3 * rng.standard_normal((rows, cols))).astype(np.float32)
x = cl.asarray(xn)
y = cl.zeros((rows, cols)).sync()
e = np.exp(xn - xn.max(axis=1, keepdims=True))
expected = e / e.sum(axis=1, keepdims=True)
print(f"{rows} rows of {cols}")

# %% [markdown]
# The signature says `y` is written and `x` only read. Passing the same tensor as both is the
# classic in-place mistake (each block reads a row that another block may already have
# overwritten, here its own): the launch is refused before anything runs, at your line, with
# the same diagnostic as a tile kernel's (TL100).

# %% tags=["raises-exception"]
softmax_rows(x, x, cols, grid=rows, block=256).sync()

# %% [markdown]
# The correct launch. Without a GPU the lab still checks it (ownership, aliasing, work in
# flight), then says that a CUDA C++ kernel needs a GPU: the simulator runs tile kernels,
# not C++.

# %%
op = softmax_rows(x, y, cols, grid=rows, block=256)
try:
    op.sync()
    print("max |error|:", float(np.abs(y.to_numpy() - expected).max()))
    np.testing.assert_allclose(y.to_numpy(), expected, rtol=1e-4, atol=1e-6)
except cl.NoDeviceError as err:
    print(err.message)
    print("help:", err.help)


# %% [markdown]
# ## In one chain with tile kernels
#
# A launch of a CUDA C++ kernel is a `DeviceOp` like any other: `.then()` puts it on the
# same stream as the tile kernel before it, `cl.graph(...)` captures the whole chain. Here a
# tile kernel scales the input, the C++ softmax normalises the rows, and a second tile
# kernel adds a bias, all on one stream.

# %% tags=["nbval-ignore-output"]
# %%tilekernel
def scale(z: Mut[Tensor[f32, "BR, BN"]], x: Tensor[f32, "?, ?"], a: f32):
    z.store(a * load_tile_like(x, z))

def add_row(z: Mut[Tensor[f32, "BR, BN"]], x: Tensor[f32, "?, ?"], b: Tensor[f32, "?, ?"]):
    z.store(load_tile_like(x, z) + load_tile_like(b, z))


# %%
xs, out = cl.zeros((rows, cols)).sync(), cl.zeros((rows, cols)).sync()
bias = cl.asarray(rng.standard_normal((rows, cols)).astype(np.float32))

chain = (scale(xs.partition_mut((8, 512)), x, 0.5)
         .then(lambda *_: softmax_rows(xs, y, cols, grid=rows, block=256))
         .then(lambda *_: add_row(out.partition_mut((8, 512)), y, bias)))
e2 = np.exp(0.5 * xn - (0.5 * xn).max(axis=1, keepdims=True))
want = e2 / e2.sum(axis=1, keepdims=True) + bias.to_numpy()
try:
    chain.sync()
    g = cl.graph(chain)                  # the three kernels, captured once
    g.replay(3)
    print("chain and graph: max |error|", float(np.abs(out.to_numpy() - want).max()))
except cl.NoDeviceError as err:
    print(err.message)

# %% [markdown]
# On the simulator the first tile kernel ran, the C++ launch was checked and skipped (what it
# would write was filled with NaN, so that no stale value passes for a result), and the last
# tile kernel was still checked: a mistake there would be reported, not hidden behind the
# missing GPU.
#
# ## PyTorch work in the chain
#
# `cl.torch_op(fn, *tensors)` runs PyTorch code as an op of the chain, on the chain's
# stream (PyTorch's current stream is set to it), with lab tensors handed over as torch
# tensors without a copy. The lab cannot read `fn`, so every tensor counts as written unless
# `writes=` names the ones it writes; moves and work in flight are checked as for a launch.

# %%
try:
    import torch
    HAVE_TORCH = ON_GPU and torch.cuda.is_available()
except ImportError:
    HAVE_TORCH = False
print("PyTorch on the GPU:", HAVE_TORCH)

if HAVE_TORCH:
    def torch_softmax(a, o):
        o.copy_(torch.softmax(a, dim=1))

    cl.torch_op(torch_softmax, x, out, writes=[1]).sync()
    print("torch.softmax: max |error|", float(np.abs(out.to_numpy() - expected).max()))

# %% [markdown]
# ## On the roofline
#
# The lab's own tile softmax (the library's tuned template, `f32` here) against the
# hand-written one, and PyTorch's. A softmax is bandwidth-bound: the floor is reading the
# matrix once and writing it once, 8 bytes per element. Both kernels are given the same
# nominal flop count (5 per element) so that they sit at the same arithmetic intensity and
# their heights compare directly. The CUDA C++ launch's bytes come from its signature (each
# tensor once), the tile kernel's from its loads and stores.

# %% tags=["nbval-ignore-output"]
from cutile_lab.kernels.rowwise import SOFTMAX, substitutions
from cutile_lab.kernels.tuning import config, hints_text

cfg = config("softmax", cl.device_info().arch if ON_GPU else None, variant=str(cols))
tile_softmax = SOFTMAX.kernel(**substitutions("softmax", "f32", cols, hints_text(cfg)))
BR = cfg["BR"]
z = cl.zeros((rows, cols)).sync()
res, _ = tile_softmax(z.partition_mut((BR, cols)), x).sync()
print(f"tile softmax, BR={BR}: max |error|", float(np.abs(z.to_numpy() - expected).max()))
FLOPS = 5 * rows * cols

# %% tags=["nbval-ignore-output"]
if ON_GPU:
    # %tile_time --name "CUDA C++ softmax" --flops {FLOPS} softmax_rows(x, y, cols, grid=rows, block=256)
    # %tile_time --name "tile softmax" --flops {FLOPS} tile_softmax(z.partition_mut((BR, cols)), x)
    if HAVE_TORCH:
        # %tile_time --name "torch.softmax" --flops {FLOPS} --bytes {8 * rows * cols} cl.torch_op(torch_softmax, x, out, writes=[1])
else:
    print("timings need a GPU: on the simulator the tile softmax ran, the C++ one was checked")

# %% tags=["nbval-ignore-output"]
if ON_GPU:
    # %tile_roofline

# %% [markdown]
# What to look for on an H100: both kernels stream the matrix once in, once out, so both sit
# under the memory roof at the same intensity; the distance between their points is how
# much of the bandwidth each leaves on the table. The hand-written kernel reads each row
# three times (max, sum, write: the second and third reads mostly hit the L1 cache), the
# tile kernel once into registers.
#
# ## Recap
#
# * `%%cuda` / `cl.cuda_kernel` compile CUDA C++ with NVRTC, cached like tile kernels;
#   errors point at your cell's line; the report has the PTX, SASS and resources.
# * Ownership comes from the signature: `const T*` shared, `T*` written. A launch is
#   refused for aliasing (TL100/TL101), moved tensors (TL102) and conflicting work in
#   flight (TL104/TL105), exactly like a tile kernel's.
# * What the C++ body does with its pointers is unchecked, and the report says so; a body
#   that casts a `const` away is reported and its pointer checked as written.
# * CUDA C++ launches, tile kernels and PyTorch work chain on one stream, into graphs, and
#   onto one roofline.
