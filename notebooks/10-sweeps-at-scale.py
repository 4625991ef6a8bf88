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
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 10 · Sweeps at scale: every GPU of a host, and a Dask cluster
#
# Tuning is a search: tile sizes × warps × schedules × problem sizes quickly makes hundreds of
# configurations. `sweep` (notebook 04) compiles them in a local process pool and runs them one after
# the other. Here the same call spreads the work out:
#
# * `sweep(..., executor=client)` with a [Dask](https://distributed.dask.org) `Client`: compiles fan
#   out to the cluster's workers, and each configuration runs on a worker (timed on its GPU, or on
#   the simulator where it has none). Results come back as they finish.
# * `sweep(..., gpus="all")` on a host with several GPUs: one worker process per GPU, each timing
#   one configuration at a time, each against its baseline on the same GPU.
#
# Faults stay in their row: a compile error, a crash, a worker that dies (its configuration is
# tried again elsewhere) or a lost GPU context (that worker is restarted).

# %%
# %load_ext cutile_lab

# %%
# %%tilekernel
def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


# %% [markdown]
# `make_args` builds one configuration's arguments and `check` says whether its result is right.
# With a cluster they run **on the worker**, so they create their own inputs there (fresh random
# data each time); closures and lambdas travel (cloudpickle).

# %%
import numpy as np
import cutile_lab as cl
from cutile_lab.notebook import sweep

def make_args(B, n):
    rng = np.random.default_rng()
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    return cl.zeros(n).sync().partition(B), cl.asarray(x), cl.asarray(y)

def check(result, args):
    zp, x, y = result
    return np.allclose(zp.unpartition().to_numpy(), x.to_numpy() + y.to_numpy())

choices = dict(B=[32, 64, 128, 256], n=[100, 777, 2048, 5000])

# %% [markdown]
# ## A local Dask cluster
#
# Two worker processes on this machine. A plain `LocalCluster` pins nothing: on a machine with
# GPUs **all its workers use GPU 0** (each sees every GPU and takes the first), so their timings
# queue on one GPU and disturb each other. For one worker per GPU, start
# `dask_cuda.LocalCUDACluster()` (`pip install dask-cuda`: it gives each worker its own
# `CUDA_VISIBLE_DEVICES` and one thread), or skip Dask and use the lab's own `gpus="all"` (below).
# To use an existing cluster, give `Client` its scheduler's address
# (`Client("tcp://scheduler:8786")`). Install the optional dependencies with
# `pip install "cutile-lab[dask]"`.

# %%
from distributed import Client, LocalCluster

cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                       dashboard_address=None)
client = Client(cluster)
len(client.scheduler_info()["workers"])

# %%
table = sweep(add, make_args, executor=client, check=check, progress=False, **choices)
table.drop(columns=["compile_s", "sim_ms", "worker", "worker_s"], errors="ignore")

# %% [markdown]
# Each row says where it ran (`device`, `gpu`, `worker`). The table is the one a local sweep
# makes: only the columns that say *when* or *where* differ.

# %%
local = sweep(add, make_args, check=check, progress=False, **choices)
timed = ("compile_s", "sim_ms", "worker", "median_us", "gbps", "tflops", "pct_of_roof")
same = [c for c in local.columns if c not in timed]       # on a GPU the timings differ too
table[same].equals(local[same]), sorted(set(table["worker"]) - {None}).__len__() >= 1

# %% [markdown]
# ## Every GPU of this host
#
# `gpus="all"` makes a pool with one worker process per GPU, each pinned to its GPU. Each worker
# starts and warms up (its GPU context, PyTorch's CUDA start and cuBLAS when `make_args` or
# `baseline` use them) while the configurations compile, and takes its first configuration as
# soon as it is ready. Workers fork from a server that imports the lab and PyTorch once per
# session (a few seconds, in the first pool only); after that a worker starts in about 0.6 s
# (measured on H200s, most of it its CUDA context). The session keeps the workers, as it would a
# Dask cluster: the next sweep on the same GPUs reuses them and pays no start. Each holds a CUDA
# context (and PyTorch's cached memory) on its GPU until the session ends or
# `cl.close_gpu_pools()`; `keep_pool=False` gives one sweep a pool of its own, closed at its end.
# Each configuration is timed on one GPU; a `baseline` is timed on the same GPU, so `speedup`
# compares like with like even when the GPUs differ. Without a GPU this cell says so.

# %% tags=["nbval-ignore-output"]
from cutile_lab.notebook.fanout import local_gpu_count

if local_gpu_count() == 0:
    print("no GPU here: the per-GPU pool needs at least one (the Dask sweep above ran on the simulator)")
else:
    import torch
    def make_gpu_args(B, n):
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        return cl.asarray(torch.empty(n, device="cuda")).partition(B), cl.asarray(x), cl.asarray(y)
    def torch_add(B, n):
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        return lambda: torch.add(x, y)
    gpu_table = sweep(add, make_gpu_args, gpus="all", baseline=torch_add, progress=False,
                      B=[256, 512, 1024], n=[1 << 24, 1 << 26])
    display(gpu_table[["B", "n", "gpu", "device", "median_us", "gbps", "baseline_us", "speedup"]])

# %%
client.close()
cluster.close()
