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
# # 3 · Ownership: `Mut`, shared, moves and borrows
#
# Python has no borrow checker, so the lab is one. Five rules carry the whole discipline:
#
# 1. **An output is yours, an input is shared.** A kernel instance writes only its own tile of
#    each `Mut` output; every instance may read every input, so none may write one.
# 2. **Every output tile is stored**, on every path through the kernel.
# 3. **Raw memory operations opt out** of the checks, inside `with unsafe():`, and are yours to
#    get right.
# 4. **A partition is a move**: `z.partition(...)` hands `z` to the launch; `z` is unusable
#    until the partition gives it back.
# 5. **Work in flight borrows its arguments**: until it completes, nothing may read what it
#    writes or write what it reads.
#
# The checks run twice: at the **kernel level**, when a `%%tilekernel` cell runs (codes
# `TL0xx`), and at the **launch level**, on the host, before any work is queued (codes
# `TL1xx`). The first half of this notebook breaks each rule once and fixes it. The second half
# is a **reference**: every other ownership diagnostic, triggered and fixed, and the full list
# of codes at the end. Cells that are *meant* to fail carry the `raises-exception` tag, so "Run
# All" goes on past them. The catalog with one example per code is `docs/diagnostics.md`.

# %%
# %load_ext cutile_lab
# %matplotlib inline
import numpy as np

ON_GPU = cl.backend() == "gpu"
print("launches run on the", "GPU" if ON_GPU else "CPU simulator (no GPU found)")


# %%
# %xmode Minimal

# %% [markdown]
# `%xmode Minimal` keeps tracebacks to the error itself: the diagnostic is the interesting
# part, not the lab's call stack.
#
# # Part 1 · The core rules
#
# ## 1. Shared inputs are read-only (TL010)
#
# Every instance may read `x` at the same time, so none may write it.

# %% tags=["raises-exception"]
# %%tilekernel
def double(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z) * 2.0
    z.store(t)
    x.store(t)


# %% [markdown]
# Fix: write only outputs. To update a tensor *in place*, make it the output and read your
# own tile with `z.load()`:

# %%
# %%tilekernel
def double(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) * 2.0)

def double_in_place(z: Mut[Tensor[f32, "B"]]):
    z.store(z.load() * 2.0)


# %% [markdown]
# ## 2. Every output is stored (TL013)
#
# An output that is never stored keeps whatever the memory held:

# %% tags=["raises-exception"]
# %%tilekernel
def relu(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = maximum(load_tile_like(x, z), 0.0)


# %%
# %%tilekernel
def relu(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(maximum(load_tile_like(x, z), 0.0))


# %% [markdown]
# ## 3. Opting out: `with unsafe():` (TL011)
#
# Raw memory operations (`store`, `load`, `gather`, `scatter`, `atomic_*`) take indices the
# checker cannot verify. They are refused outside an explicit `unsafe` block:

# %% tags=["raises-exception"]
# %%tilekernel
def shift(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    store(z, index=(tile_id(0) + 1,), tile=t)


# %% [markdown]
# Inside `with unsafe():` you take over the checker's job. The report's summary still reads
# "checked": the checker went through the rest of the kernel, and takes the block's raw
# accesses on trust. Nothing inside the block is verified before the run; on the simulator,
# every raw store, load and atomic is still watched as it runs, and races and out-of-bounds
# accesses are reported (notebook 7's `transpose2d`, `conv2d` and `split_k` puzzles). Keep
# blocks small. An `unsafe` block with nothing unsafe in it (TL012), and unsafe code that writes
# a shared input (TL019), are warnings:

# %%
# %%tilekernel
def shift(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    with unsafe():
        store(z, index=(tile_id(0) + 1,), tile=t)

def pointless(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    with unsafe():
        z.store(t * 2.0)

def bump(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    idx = tile_id(0) * B + arange(B, dtype=i32)
    with unsafe():
        atomic_add(x, (idx,), t)
    z.store(t)


# %% [markdown]
# The checker let `shift` through, and it is wrong: every tile writes its neighbour's place,
# the first 128 elements are never written and the last tile writes past the end. The
# simulator, which watches raw stores as they run, says so (and `.sync()` raises, so a script
# cannot miss it; `cutile_lab.simulation.set_on_error("warn")` makes it a warning instead):

# %%
cl.set_backend("sim")
run = shift(cl.zeros(1000).partition(128), cl.randn(1000, seed=3))
try:
    run.sync()                  # what the simulator finds stops the script here, located
except cl.CutileLabError as e:
    print(e)
finally:
    cl.set_backend(None)


# %% [markdown]
# ## Launching: a few kernels and some data

# %%
# %%tilekernel
def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))

def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], alpha: f32):
    z.store(load_tile_like(x, z) * alpha)

def split(lo: Mut[Tensor[f32, "B"]], hi: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, lo)
    lo.store(minimum(t, 0.0))
    hi.store(maximum(t, 0.0))


# %% [markdown]
# A kernel whose tile size is fixed in its signature has nothing left to bind at launch, so
# the cell compiles it at once (the report shows its registers and compile time):

# %% tags=["nbval-ignore-output"]
# %%tilekernel
def fill128(z: Mut[Tensor[f32, "128"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z))


# %%
n = 1024
x = cl.randn(n, seed=1).sync()
y = cl.randn(n, seed=2).sync()

# %% [markdown]
# ## 4. A partition is a move (TL102)
#
# `z.partition(128)` hands `z`'s memory to the partition: each tile now belongs to one
# kernel instance. The name `z` is dead, exactly like a moved value in Rust, until the
# partition gives the tensor back:

# %% tags=["raises-exception"]
z = cl.zeros(n).sync()
zp = z.partition(128)
add(zp, x, y).sync()
print(z.to_numpy()[:4])

# %% [markdown]
# Two fixes. Take the tensor back with `unpartition()`, or *borrow* instead of moving with
# `z.partition_mut(...)`: the tensor is usable again once the work that used the partition
# is done.

# %%
z = zp.unpartition()
print(z.to_numpy()[:4])

w = cl.zeros(n).sync()
add(w.partition_mut(128), x, y).sync()    # a borrow: w stays usable
print(w.to_numpy()[:4])


# %% [markdown]
# ## 5. Work in flight is borrowed (TL103, TL104, TL105)
#
# `.start()` queues the work and returns at once, with a `Pending`; the work holds its
# borrows until it completes. Meanwhile the host may not touch what it writes (TL103), and
# other launches may not read what it writes (TL104) or write what it reads (TL105).
#
# On a GPU, a small launch finishes in microseconds, before the next line of Python runs,
# so we use big tensors there (2 GiB each: a couple of milliseconds of work) and compile
# the kernels first, so that the launches below are only launches. Even so, a GPU can be
# done before Python gets to the next line; then there is nothing left to refuse, and the
# cell runs without an error. On the simulator, started work counts as in flight until
# you wait for it.

# %%
# %%tilekernel
def double(out: Mut[Tensor[f32, "B"]], src: Tensor[f32, "?"]):
    out.store(load_tile_like(src, out) * 2.0)


# %%
big = (1 << 29) if ON_GPU else 4096
a = cl.ones(big).sync()
b = cl.full(big, 2.0).sync()
c = cl.zeros(big).sync()
w = cl.zeros(big).sync()
add(c.partition_mut(1024), a, b).sync()        # compiles add and double for these shapes
double(w.partition_mut(1024), c).sync()
print(c[:4].to_numpy(), w[:4].to_numpy())

# %% tags=["raises-exception"]
pending = add(c.partition_mut(1024), a, b).start()     # writes c, reads a and b
c.to_numpy()                                            # TL103: c is being written

# %%
pending.wait()
print(c[:4].to_numpy())      # after the work is done: fine

# %% tags=["raises-exception"]
pending = add(c.partition_mut(1024), a, b).start()
double(w.partition_mut(1024), c).start()           # TL104: reads c, which is being written

# %% tags=["raises-exception"]
pending.wait()
pending = add(c.partition_mut(1024), a, b).start()
double(a.partition_mut(1024), b).start()           # TL105: writes a, which is being read

# %% [markdown]
# The fixes: wait first, or chain the second launch after the first with `.then(...)`. A
# chain runs in order on one stream, so the second launch cannot start before the first is
# done (notebook 5 is about such pipelines).

# %%
pending.wait()

chained = add(c.partition_mut(1024), a, b).then(lambda *_: double(w.partition_mut(1024), c))
chained.sync()
print(w[:4].to_numpy())      # (1 + 2) * 2


# %% [markdown]
# # Part 2 · Reference: every other ownership diagnostic
#
# Each section below triggers one or a few codes on purpose and shows the fix. Nothing later in
# the tutorials depends on it: skim it now, come back when the lab shows you a code.
#
# ## Inside the kernel

# %% [markdown]
# ### Stored once, on every path (TL014, TL015)
#
# Storing more than once (here, once per loop iteration) and storing on only some paths are
# warnings: the kernel compiles, but probably does not do what you meant. Each cell below
# holds the kernel with the warning and its fix.

# %%
# %%tilekernel
def running_sum(z: Mut[Tensor[f32, "BM, 1"]], x: Tensor[f32, "?, ?"]):
    acc = zeros((BM, 1), dtype=f32)
    for k in range(4):
        acc = acc + sum(load_tile(x, (tile_id(0), k), (BM, 64)), axis=1, keepdims=True)
        z.store(acc)

def running_sum_fixed(z: Mut[Tensor[f32, "BM, 1"]], x: Tensor[f32, "?, ?"]):
    acc = zeros((BM, 1), dtype=f32)
    for k in range(4):
        acc = acc + sum(load_tile(x, (tile_id(0), k), (BM, 64)), axis=1, keepdims=True)
    z.store(acc)


# %%
# %%tilekernel
def relu_if(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], enabled: i32):
    t = load_tile_like(x, z)
    if enabled > 0:
        z.store(maximum(t, 0.0))

def relu_if_fixed(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], enabled: i32):
    t = load_tile_like(x, z)
    if enabled > 0:
        z.store(maximum(t, 0.0))
    else:
        z.store(t)


# %% [markdown]
# ### The stored tile must fit the output (TL016, TL017, TL018)
#
# The tile you store must have the output tile's shape. Here `max(t, axis=1)` drops the
# reduced axis, so the tile is `(BM,)` where `(BM, 1)` is declared:

# %% tags=["raises-exception"]
# %%tilekernel
def row_max(out: Mut[Tensor[f32, "BM, 1"]], x: Tensor[f32, "?, N"]):
    t = load_tile(x, (tile_id(0), 0), (BM, N))
    out.store(max(t, axis=1))


# %%
# %%tilekernel
def row_max(out: Mut[Tensor[f32, "BM, 1"]], x: Tensor[f32, "?, N"]):
    t = load_tile(x, (tile_id(0), 0), (BM, N))
    out.store(max(t, axis=1, keepdims=True))


# %% [markdown]
# Dtypes: an `f32` scalar times an `f16` tile is an `f32` tile, and the lab will not narrow
# it into an `f16` output behind your back (an error). Widening happens, with a warning.
# Either way, say it with `.astype(...)`:

# %% tags=["raises-exception"]
# %%tilekernel
def scale_f16(z: Mut[Tensor[f16, "B"]], x: Tensor[f16, "?"], alpha: f32):
    z.store(alpha * load_tile_like(x, z))


# %%
# %%tilekernel
def scale_f16(z: Mut[Tensor[f16, "B"]], x: Tensor[f16, "?"], alpha: f32):
    z.store((alpha * load_tile_like(x, z)).astype(f16))

def widen(z: Mut[Tensor[f32, "B"]], x: Tensor[f16, "?"]):
    z.store(load_tile_like(x, z))                 # warning: implicit f16 -> f32

def widen_fixed(z: Mut[Tensor[f32, "B"]], x: Tensor[f16, "?"]):
    z.store(load_tile_like(x, z).astype(f32))


# %% [markdown]
# ### Reading: only shared inputs, only through the safe forms (TL020, TL024, TL026)
#
# `load_tile_like(x, z)` means "the tile of `x` where *my output tile* `z` sits"; its second
# argument must be one of your `Mut` outputs:

# %% tags=["raises-exception"]
# %%tilekernel
def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, y) + load_tile_like(y, z))


# %% [markdown]
# `load_tile` reads any tile of a *shared* input. It may not read an output: the other
# instances are writing it at this very moment (a read-write race).

# %% tags=["raises-exception"]
# %%tilekernel
def smooth(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    right = load_tile(z, (tile_id(0) + 1,), (B,))
    z.store(load_tile_like(x, z) + right)


# %% [markdown]
# Rebinding a parameter name would hide which tensor the code is talking about:

# %% tags=["raises-exception"]
# %%tilekernel
def half(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    x = load_tile_like(x, z)
    z.store(x * 0.5)


# %% [markdown]
# The fixes of the three, together:

# %%
# %%tilekernel
def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))

def smooth(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    right = load_tile(x, (tile_id(0) + 1,), (B,))      # read the input, not the output
    z.store(load_tile_like(x, z) + right)

def half(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    tx = load_tile_like(x, z)
    z.store(tx * 0.5)


# %% [markdown]
# ## At launch

# %% [markdown]
# ### Outputs take partitions, inputs take tensors (TL115, TL116)

# %% tags=["raises-exception"]
add(cl.zeros(n).sync(), x, y).sync()

# %% tags=["raises-exception"]
add(cl.zeros(n).partition(128), x.partition_mut(128), y).sync()

# %% [markdown]
# ### No aliasing (TL100, TL101)
#
# The compiler is told that a kernel's array parameters never overlap, which lets it keep
# tiles in registers and reorder loads and stores. The launch checker makes that promise
# true: an output may not share memory with an input, or with another output, views and
# slices included. (Here `x` is passed as the output *and* as an input.)

# %% tags=["raises-exception"]
add(x.partition_mut(128), x, y).sync()

# %% tags=["raises-exception"]
buf = cl.zeros(2 * n).sync()
split(buf[:n].partition_mut(128), buf[n // 2: n // 2 + n].partition_mut(128), x).sync()

# %% [markdown]
# The fix is separate memory: a fresh output (`cl.zeros(n)`), or slices that do not overlap.

# %%
out, _, _ = add(cl.zeros(n).partition(128), x, y).sync()
lo, hi, _ = split(buf[:n].partition_mut(128), buf[n:].partition_mut(128), x).sync()
print("ok:", out, lo, sep="\n  ")

# %% [markdown]
# ### Arguments must fit the signature (TL110 to TL113, TL117 to TL119)
#
# The partition's tile must fit the declared tile (`fill128` fixes it to 128):

# %% tags=["raises-exception"]
fill128(cl.zeros(n).partition(64), x).sync()

# %% [markdown]
# A const generic has one value per launch (here, given explicitly *and* by the partition):

# %% tags=["raises-exception"]
add(cl.zeros(n).partition(128), x, y, B=64).sync()

# %% [markdown]
# Dtype and rank are checked against the declaration:

# %% tags=["raises-exception"]
add(cl.zeros(n, dtype="i32").partition(128), x, y).sync()

# %% tags=["raises-exception"]
add(cl.zeros(n).partition(128), cl.randn((32, 32)).sync(), y).sync()

# %% [markdown]
# Numbers go to scalar parameters, tensors to tensor parameters:

# %% tags=["raises-exception"]
scale(cl.zeros(n).partition(128), x, y).sync()

# %% [markdown]
# Every parameter needs exactly one argument (TL117, refused as the launch is built, before
# the other rules run):

# %% tags=["raises-exception"]
add(cl.zeros(n).partition(128), x)

# %% [markdown]
# Several outputs split into tiles of one launch grid, so they must have the same number of
# tiles:

# %% tags=["raises-exception"]
split(cl.zeros(n).partition(128), cl.zeros(n // 2).partition(128), x).sync()

# %% [markdown]
# And the fixes, all at once:

# %%
fill128(cl.zeros(n).partition(128), x).sync()
add(cl.zeros(n).partition(128), x, y, B=128).sync()
add(cl.zeros(n).partition(128), x, cl.randn(n).sync()).sync()
scale(cl.zeros(n).partition(128), x, 2.0).sync()
split(cl.zeros(n).partition(128), cl.zeros(n).partition(128), x).sync()
print("all launched")

# %% [markdown]
# ### Ragged partitions are fine (TL114, a note)
#
# A tile size that does not divide the shape is not an error: loads past the end read zeros
# (or the padding you choose), stores there are masked. The launch records a note; print
# a launch's `diagnostics` to see it.

# %%
launch = add(cl.zeros(1000).partition(128), x[:1000], y[:1000])
launch.sync()
from cutile_lab.diagnostics import render_text
print(render_text(launch.diagnostics))

# %% [markdown]
# ## The full list of codes
#
# | when | code | what |
# | --- | --- | --- |
# | kernel | TL010 | store into a shared input |
# | kernel | TL011 / TL012 / TL019 | raw memory op outside `unsafe` / empty `unsafe` / unsafe write to an input |
# | kernel | TL013 / TL014 / TL015 | output never stored / stored more than once / not on every path |
# | kernel | TL016 / TL017 / TL018 | stored tile's shape / dtype / implicit conversion |
# | kernel | TL020 / TL024 / TL026 | `load_tile_like` of a non-output / `load_tile` of an output / reassigned parameter |
# | launch | TL100 / TL101 | output aliases an input / another output |
# | launch | TL102 | use after move into a partition |
# | launch | TL103 / TL104 / TL105 | host access / read / write against in-flight work |
# | launch | TL110 to TL113 | tile shape, const generic, dtype, rank |
# | launch | TL114 | ragged partition (a note) |
# | launch | TL115 / TL116 / TL117 / TL118 / TL119 | output not partitioned / input partitioned / an argument missing or extra / scalar vs tensor / tile counts differ |
#
# (`TL117`, an argument missing, extra or given twice, is refused as the launch is built.)
# The rest of the catalog, the language's own rules (types of parameters, unknown
# names, unsupported Python), is in `docs/diagnostics.md`.
#
# Next, **04-tensor-cores-and-the-roofline**: matrix products, and how fast is fast.
