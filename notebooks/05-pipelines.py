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
# # 5 · Pipelines: lazy ops, `.then()`, `await` and CUDA graphs
#
# Everything the lab does on a device is a **DeviceOp**: a description of work that runs
# when you ask. That makes three things easy: composing steps into one chain that runs on
# one stream without host round trips, overlapping work with `await`, and capturing a chain
# into a CUDA graph that replays for a fraction of the launch cost.
#
# On the simulator, ops run on the CPU with the same API; the timing cells need a GPU.

# %%
# %load_ext cutile_lab
# %matplotlib inline
import numpy as np

ON_GPU = cl.backend() == "gpu"
print("launches run on the", "GPU" if ON_GPU else "CPU simulator (no GPU found)")


# %%
# %%tilekernel
def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))

def axpy(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"], alpha: f32):
    z.store(alpha * load_tile_like(x, z) + load_tile_like(y, z))


# %% [markdown]
# ## Lazy ops
#
# Creating a tensor, partitioning it, launching a kernel: each returns an op, and nothing
# has run yet.

# %%
n = 1 << 16
x_op = cl.randn(n, seed=1)
launch = add(cl.zeros(n).partition(1024), x_op, cl.ones(n))
print(x_op)
print(launch.label, "-", type(launch).__name__)

# %% [markdown]
# `.sync()` runs an op and everything it depends on (here: three creations, one partition,
# one launch), in order, on one stream, and waits once, at the end.

# %%
z, x, ones = launch.sync()
print(z)
np.testing.assert_allclose(z.unpartition().to_numpy(), x.to_numpy() + 1, rtol=1e-6)

# %% [markdown]
# ## `.then()`: the next step, on the same stream
#
# `op.then(f)` calls `f` with the op's result when the chain runs; if `f` returns an op, it
# is queued right after, on the same stream. A launch's result is its arguments, handed
# back, so the next step can take ownership of them. Here, `w = 2·(x + y) + y`:

# %%
x = cl.randn(n, seed=1).sync()
y = cl.randn(n, seed=2).sync()

pipeline = (add(cl.zeros(n).partition(1024), x, y)
            .then(lambda z, x, y: axpy(cl.zeros(n).partition(1024), z.unpartition(), y, 2.0)))
print(pipeline.label)

w, _, _, _ = pipeline.sync()
expected = 2 * (x.to_numpy() + y.to_numpy()) + y.to_numpy()
np.testing.assert_allclose(w.unpartition().to_numpy(), expected, rtol=1e-5)
print("w = 2(x + y) + y ✓")

# %% [markdown]
# `cl.zip(a, b, ...)` runs several ops and gives the tuple of their results; `.then()` with
# a function of several parameters unpacks it. (Wrap a kernel in a `lambda` to pass it to
# `.then`.)

# %%
both = cl.zip(cl.zeros(n).partition(1024), cl.randn(n, seed=3), cl.randn(n, seed=4))
summed = both.then(lambda z, x, y: add(z, x, y))
z, x3, y3 = summed.sync()
np.testing.assert_allclose(z.unpartition().to_numpy(), x3.to_numpy() + y3.to_numpy(),
                           rtol=1e-6)
print("zip + then ✓")

# %% [markdown]
# ## `start()` and `await`
#
# `.sync()` waits. `.start()` queues the work and returns a `Pending` at once; the work
# keeps its borrows until it completes (notebook 3: the host cannot read what it writes
# meanwhile). `await op` starts and waits without blocking the notebook's event loop, so
# independent pipelines overlap: on a GPU each started chain gets its own stream.

# %%
import asyncio

async def pipeline(seed):
    x = await cl.randn(n, seed=seed)
    z, _, _ = await add(cl.zeros(n).partition(1024), x, x)
    return z.unpartition()

results = await asyncio.gather(pipeline(10), pipeline(11), pipeline(12))
[r.to_numpy()[:2] for r in results]

# %%
pending = add(cl.zeros(n).partition(1024), x, y).start()
print(pending)
z, _, _ = pending.wait()
print(pending)

# %% [markdown]
# ## CUDA graphs
#
# Every launch costs host time: checking, packing arguments, the driver call. For small
# kernels that overhead is most of the time. A **CUDA graph** records a whole chain once
# (`cl.graph(op)`: the checks, compilation and packing happen at capture) and replays it
# with a single driver call: `g.replay(k)` runs the chain `k` times.
#
# A chain of 50 small launches, as a graph:

# %%
steps = 50
zt, xt, yt = cl.zeros(n).sync(), cl.randn(n, seed=1).sync(), cl.randn(n, seed=2).sync()

def chain():
    op = cl.value(None)
    for _ in range(steps):
        op = op.then(lambda _: add(zt.partition_mut(1024), xt, yt))
    return op

g = cl.graph(chain())
g.replay(3)
print(f"captured {steps} launches ({g.num_kernels} kernels in the CUDA graph; the "
      f"simulator records none), replayed {g.replays} times")
np.testing.assert_allclose(zt.to_numpy(), xt.to_numpy() + yt.to_numpy(), rtol=1e-6)

# %% [markdown]
# ### What a launch costs
#
# Three ways to run the same 50 launches: one `.sync()` each; one chain with one `.sync()`;
# one graph replay. Host wall time per kernel, so launch overhead is what we see (the
# kernel itself is a few microseconds).

# %% tags=["nbval-ignore-output"]
import time

def per_kernel_us(run, repeats=20):
    run()                                    # warm up (compiles, captures)
    t0 = time.perf_counter()
    for _ in range(repeats):
        run()
    return (time.perf_counter() - t0) / (repeats * steps) * 1e6

if ON_GPU:
    one_by_one = per_kernel_us(lambda: [add(zt.partition_mut(1024), xt, yt).sync()
                                        for _ in range(steps)])
    one_chain = per_kernel_us(lambda: chain().sync())
    graph = per_kernel_us(lambda: g.replay(1))
    print(f"one sync per launch: {one_by_one:7.1f} µs per kernel")
    print(f"one chain, one sync: {one_chain:7.1f} µs per kernel")
    print(f"graph replay:        {graph:7.1f} µs per kernel")
else:
    print("timings need a GPU: on the simulator a replay re-runs the chain on the CPU")

# %% [markdown]
# Without a GPU there is nothing to time. Here is what the runtime benchmark **recorded** on
# an H100 for the host cost of one launch, each way (the host side only: the time until the
# call returns and the GPU has the work):

# %%
import recorded

print(recorded.caption(recorded.RUNTIME))
recorded.launch_overheads()

# %% [markdown]
# What to look at (on a GPU): a sync per launch pays a host round trip each time; a chain
# pays it once; a graph also skips the per-launch host work, so its cost per kernel is close
# to the GPU's own launch latency.
#
# ## Recap
#
# * Ops are lazy; `.sync()` runs a whole chain on one stream and waits once.
# * `.then(f)` composes steps; launches hand ownership of their arguments to the next step.
# * `.start()` / `await` overlap independent work; borrows last until the work is done.
# * `cl.graph(op)` captures a chain; `replay` relaunches it for almost no host time.
#
# Next, **06-fused-kernels**: layernorm and rmsnorm against PyTorch.
