#!/usr/bin/env python3
"""Builds the tutorial notebooks of this folder from the text below, and stores their outputs.

    python notebooks/build.py                  # write every notebook (no outputs)
    python notebooks/build.py --execute        # ... and run them on the CPU, storing outputs
    python notebooks/build.py --execute 03 07  # only the notebooks whose names start so

The stored outputs are what ``tests/notebooks`` compares against (nbval, on the CPU simulator),
so execute after changing a notebook, on a machine where the lab's toolchain is installed. The
run hides any GPU (``CUDA_VISIBLE_DEVICES=""``) and uses a fresh compile cache, as the test does.

Each notebook is a list of cells: ``md(text)`` and ``code(text, *tags)``; tags are nbval's
(``raises-exception``: the cell is meant to fail and show a diagnostic; ``nbval-ignore-output``:
its output varies -- timings, compiler output -- and is not compared).
"""
from __future__ import annotations

import argparse
import inspect
import os
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RAISES = "raises-exception"
IGNORE = "nbval-ignore-output"


def md(text: str) -> dict:
    return {"kind": "markdown", "source": textwrap.dedent(text).strip("\n")}


def code(text: str, *tags: str) -> dict:
    return {"kind": "code", "source": textwrap.dedent(text).strip("\n"), "tags": list(tags)}


SETUP = code('''
    %load_ext cutile_lab
    %matplotlib inline
    import numpy as np

    ON_GPU = cl.backend() == "gpu"
    print("launches run on the", "GPU" if ON_GPU else "CPU simulator (no GPU found)")
''')

# ==============================================================================================
# 01 -- hello, tile
# ==============================================================================================

NB01 = [
    md('''
    # 1 · Hello, tile

    A GPU kernel is usually written from the point of view of one *thread*. A **tile kernel**
    is written from the point of view of one *tile* of the output: a block of, say, 128
    elements that one instance of the kernel computes with whole-tile operations (load a tile,
    add two tiles, store a tile). The compiler spreads each tile operation over the GPU's
    threads.

    cutile_lab adds one rule, borrowed from Rust: **each instance owns its own tile of the
    output, and only reads the inputs.** The lab checks the rule when you define a kernel and
    again when you launch it, so a data race cannot be written.

    Everything here runs on a laptop: without a GPU, kernels run on a CPU simulator (NumPy,
    tile by tile, with the GPU's semantics). With a GPU, the same cells launch on it.
    '''),
    SETUP,
    md('''
    ## The kernel

    Vector addition, `z = x + y`. Read the signature first, it is where the ownership lives:

    * `z: Mut[Tensor[f32, "B"]]`: `z` is **one tile** of the output, `B` elements of `f32`,
      owned by this instance (`Mut`). `B` is a *const generic*, a compile-time size that is
      bound when you launch.
    * `x: Tensor[f32, "?"]` and `y`: shared, read-only inputs of any length (`?`).

    In the body, `load_tile_like(x, z)` reads the tile of `x` that sits where `z`'s tile sits,
    and `z.store(...)` writes this instance's own tile. There is no index anywhere, so there
    is no way to write into another instance's tile.
    '''),
    code('''
    %%tilekernel
    def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
        tx = load_tile_like(x, z)
        ty = load_tile_like(y, z)
        z.store(tx + ty)
    '''),
    md('''
    The report says the kernel passed the ownership checks and will be compiled at launch,
    once `B` is known. The cell also defined `add` in the notebook, ready to launch.

    ## Tensors, partitions and the grid

    `cl.randn(n)` and `cl.zeros(n)` *describe* work; `.sync()` runs it and gives the tensor
    (in GPU memory, or in host memory on the simulator).

    To launch, split the output into tiles: `z.partition(128)` is a **partition** of z into
    128-element tiles. The launch grid follows from it: one kernel instance per tile,
    ⌈1000 / 128⌉ = 8 of them. You never compute a grid by hand. Since 1000 is not a multiple
    of 128, the last tile is *ragged*: it holds 104 elements, and the rest of it is masked.
    '''),
    code('''
    n = 1000
    x = cl.randn(n, seed=1).sync()
    y = cl.randn(n, seed=2).sync()
    z = cl.zeros(n).sync()

    zp = z.partition(128)
    print(zp)
    print("grid:", zp.grid, "| tiles:", zp.num_tiles, "| ragged:", zp.ragged)
    '''),
    md('''
    A partition **moves** the tensor: the partition now owns the memory, and the name `z` may
    no longer be used (notebook 2 shows what happens if you try).

    ## Run it

    `add(zp, x, y)` builds the launch, and nothing runs yet. `.sync()` runs it, waits, and hands
    ownership back: you get the arguments back as a tuple. `zp.unpartition()` turns the
    partition back into a plain tensor.
    '''),
    code('''
    launch = add(zp, x, y)
    zp, x, y = launch.sync()
    z = zp.unpartition()
    z
    '''),
    md('Compare with NumPy:'),
    code('''
    expected = x.to_numpy() + y.to_numpy()
    got = z.to_numpy()
    print("first elements:", got[:4])
    print("max |error|:  ", np.abs(got - expected).max())
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    '''),
    md('''
    ## Which tile wrote which element?

    The simulator records every store, so it can draw the **ownership map**: each element in
    the colour of the tile that wrote it. A GPU keeps no such record, so on a GPU machine we
    run the launch once more on the simulator, with `cl.set_backend("sim")`.
    '''),
    code('''
    cl.set_backend("sim")            # launches below run on the CPU simulator
    sim = add(cl.zeros(n).partition(128), cl.asarray(x.to_numpy()), cl.asarray(y.to_numpy()))
    sim.sync()
    cl.set_backend(None)             # back to the automatic choice (the GPU, if there is one)

    print(sim.sim_result)
    sim.sim_result.ownership_figure("z")
    '''),
    md('''
    What to look at: eight bands, one per tile, and every element written by exactly one tile:
    nothing red (written twice), nothing grey (never written). The last band is shorter: tile
    7 covers elements 896 to 999, and the hatched part of it past the end of the array (up to
    1023) was masked, not written.

    ## What the compiler sees: Tile IR

    A `%%tilekernel` cell compiles at once when every const generic is known; `--spec B=128`
    gives `B`. The report then shows the Tile IR beside your source (hover a line to link the
    two), the registers and shared memory the kernel needs, and the machine code (SASS).
    '''),
    code('''
    %%tilekernel --spec B=128
    def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
        tx = load_tile_like(x, z)
        ty = load_tile_like(y, z)
        z.store(tx + ty)
    ''', IGNORE),
    md('''
    The same from Python: `add.compile(arch, B=128)` returns the compiled kernel. A few lines
    of its Tile IR carry the whole story:

    * `make_partition_view ... tile=(128)`: the partition, and what loads read past the edge;
    * `load_view_tko ... [%blockId_x...]`: each instance loads the tile *at its own block id*;
    * `store_view_tko`: and stores its own tile, at the same index.
    '''),
    code('''
    compiled = add.compile("sm_90", B=128)      # sm_90: an H100
    print(compiled.summary(), end="\\n\\n")
    for line in compiled.tileir.splitlines():
        line = line.strip()
        if "make_partition_view" in line:
            print(line)                             # the type holds the tile and the padding
        elif any(op in line for op in ("load_view_tko", "addf", "store_view_tko")):
            print(line.split(" : ")[0])             # the operation, without its types
    ''', IGNORE),
    md('''
    ## Recap

    * A tile kernel describes the work of one tile; the partition of the output decides how
      many instances run (the grid).
    * `Mut[...]` parameters are owned output tiles; `Tensor[...]` parameters are shared inputs.
      No indices, no races.
    * Work is lazy; `.sync()` runs it and hands ownership back.
    * Without a GPU, the simulator runs the same kernels, and draws what a GPU cannot show.

    Next, **02-ownership**: everything the checker refuses, and why.
    '''),
]

# ==============================================================================================
# 02 -- ownership
# ==============================================================================================

NB02 = [
    md('''
    # 2 · Ownership: `Mut`, shared, moves and borrows

    Python has no borrow checker, so the lab is one. It checks twice:

    * **kernel level**, when a `%%tilekernel` cell runs: what the body does with its
      parameters (codes `TL0xx`);
    * **launch level**, on the host, before any work is queued: what you pass, and what is
      still in flight (codes `TL1xx`).

    This notebook triggers every ownership diagnostic on purpose, then fixes it. Cells that
    are *meant* to fail carry the `raises-exception` tag, so "Run All" goes on past them. Read
    each message: it points at your line, says why, and says what to do. The full catalog,
    with one example per code, is `docs/diagnostics.md`.
    '''),
    SETUP,
    code('''
    %xmode Minimal
    '''),
    md('''
    `%xmode Minimal` keeps tracebacks to the error itself: the diagnostic is the interesting
    part, not the lab's call stack.

    ## Part 1: inside the kernel

    ### Shared inputs are read-only (TL010)

    Every instance may read `x` at the same time, so none may write it.
    '''),
    code('''
    %%tilekernel
    def double(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
        t = load_tile_like(x, z) * 2.0
        z.store(t)
        x.store(t)
    ''', RAISES),
    md('''
    Fix: write only outputs. To update a tensor *in place*, make it the output and read your
    own tile with `z.load()`:
    '''),
    code('''
    %%tilekernel
    def double(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
        z.store(load_tile_like(x, z) * 2.0)

    def double_in_place(z: Mut[Tensor[f32, "B"]]):
        z.store(z.load() * 2.0)
    '''),
    md('''
    ### Every output is stored, once, on every path (TL013, TL014, TL015)

    An output that is never stored keeps whatever the memory held:
    '''),
    code('''
    %%tilekernel
    def relu(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
        t = maximum(load_tile_like(x, z), 0.0)
    ''', RAISES),
    code('''
    %%tilekernel
    def relu(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
        z.store(maximum(load_tile_like(x, z), 0.0))
    '''),
    md('''
    Storing more than once (here, once per loop iteration) and storing on only some paths are
    warnings: the kernel compiles, but probably does not do what you meant. Each cell below
    holds the kernel with the warning and its fix.
    '''),
    code('''
    %%tilekernel
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
    '''),
    code('''
    %%tilekernel
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
    '''),
    md('''
    ### The stored tile must fit the output (TL016, TL017, TL018)

    The tile you store must have the output tile's shape. Here `max(t, axis=1)` drops the
    reduced axis, so the tile is `(BM,)` where `(BM, 1)` is declared:
    '''),
    code('''
    %%tilekernel
    def row_max(out: Mut[Tensor[f32, "BM, 1"]], x: Tensor[f32, "?, N"]):
        t = load_tile(x, (tile_id(0), 0), (BM, N))
        out.store(max(t, axis=1))
    ''', RAISES),
    code('''
    %%tilekernel
    def row_max(out: Mut[Tensor[f32, "BM, 1"]], x: Tensor[f32, "?, N"]):
        t = load_tile(x, (tile_id(0), 0), (BM, N))
        out.store(max(t, axis=1, keepdims=True))
    '''),
    md('''
    Dtypes: an `f32` scalar times an `f16` tile is an `f32` tile, and the lab will not narrow
    it into an `f16` output behind your back (an error). Widening happens, with a warning.
    Either way, say it with `.astype(...)`:
    '''),
    code('''
    %%tilekernel
    def scale_f16(z: Mut[Tensor[f16, "B"]], x: Tensor[f16, "?"], alpha: f32):
        z.store(alpha * load_tile_like(x, z))
    ''', RAISES),
    code('''
    %%tilekernel
    def scale_f16(z: Mut[Tensor[f16, "B"]], x: Tensor[f16, "?"], alpha: f32):
        z.store((alpha * load_tile_like(x, z)).astype(f16))

    def widen(z: Mut[Tensor[f32, "B"]], x: Tensor[f16, "?"]):
        z.store(load_tile_like(x, z))                 # warning: implicit f16 -> f32

    def widen_fixed(z: Mut[Tensor[f32, "B"]], x: Tensor[f16, "?"]):
        z.store(load_tile_like(x, z).astype(f32))
    '''),
    md('''
    ### Reading: only shared inputs, only through the safe forms (TL020, TL024, TL026)

    `load_tile_like(x, z)` means "the tile of `x` where *my output tile* `z` sits"; its second
    argument must be one of your `Mut` outputs:
    '''),
    code('''
    %%tilekernel
    def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
        z.store(load_tile_like(x, y) + load_tile_like(y, z))
    ''', RAISES),
    md('''
    `load_tile` reads any tile of a *shared* input. It may not read an output: the other
    instances are writing it at this very moment (a read-write race).
    '''),
    code('''
    %%tilekernel
    def smooth(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
        right = load_tile(z, (tile_id(0) + 1,), (B,))
        z.store(load_tile_like(x, z) + right)
    ''', RAISES),
    md('''
    Rebinding a parameter name would hide which tensor the code is talking about:
    '''),
    code('''
    %%tilekernel
    def half(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
        x = load_tile_like(x, z)
        z.store(x * 0.5)
    ''', RAISES),
    md('The fixes of the three, together:'),
    code('''
    %%tilekernel
    def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
        z.store(load_tile_like(x, z) + load_tile_like(y, z))

    def smooth(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
        right = load_tile(x, (tile_id(0) + 1,), (B,))      # read the input, not the output
        z.store(load_tile_like(x, z) + right)

    def half(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
        tx = load_tile_like(x, z)
        z.store(tx * 0.5)
    '''),
    md('''
    ### Opting out: `with unsafe():` (TL011, TL012, TL019)

    Raw memory operations (`store`, `load`, `gather`, `scatter`, `atomic_*`) take indices the
    checker cannot verify. They are refused outside an explicit `unsafe` block:
    '''),
    code('''
    %%tilekernel
    def shift(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
        t = load_tile_like(x, z)
        store(z, index=(tile_id(0) + 1,), tile=t)
    ''', RAISES),
    md('''
    Inside `with unsafe():` you take over the checker's job; the report marks the block as
    unchecked (and the simulator can still catch races and out-of-bounds accesses there, see
    notebook 7). An `unsafe` block with nothing unsafe in it, and unsafe code that writes a
    shared input, are warnings:
    '''),
    code('''
    %%tilekernel
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
    '''),
    md('''
    ## Part 2: at launch

    A few kernels to launch, and some data:
    '''),
    code('''
    %%tilekernel
    def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
        z.store(load_tile_like(x, z) + load_tile_like(y, z))

    def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], alpha: f32):
        z.store(load_tile_like(x, z) * alpha)

    def split(lo: Mut[Tensor[f32, "B"]], hi: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
        t = load_tile_like(x, lo)
        lo.store(minimum(t, 0.0))
        hi.store(maximum(t, 0.0))
    '''),
    md('''
    A kernel whose tile size is fixed in its signature has nothing left to bind at launch, so
    the cell compiles it at once (the report shows its registers and compile time):
    '''),
    code('''
    %%tilekernel
    def fill128(z: Mut[Tensor[f32, "128"]], x: Tensor[f32, "?"]):
        z.store(load_tile_like(x, z))
    ''', IGNORE),
    code('''
    n = 1024
    x = cl.randn(n, seed=1).sync()
    y = cl.randn(n, seed=2).sync()
    '''),
    md('''
    ### A partition is a move (TL102)

    `z.partition(128)` hands `z`'s memory to the partition: each tile now belongs to one
    kernel instance. The name `z` is dead, exactly like a moved value in Rust, until the
    partition gives the tensor back:
    '''),
    code('''
    z = cl.zeros(n).sync()
    zp = z.partition(128)
    add(zp, x, y).sync()
    print(z.to_numpy()[:4])
    ''', RAISES),
    md('''
    Two fixes. Take the tensor back with `unpartition()`, or *borrow* instead of moving with
    `z.partition_mut(...)`: the tensor is usable again once the work that used the partition
    is done.
    '''),
    code('''
    z = zp.unpartition()
    print(z.to_numpy()[:4])

    w = cl.zeros(n).sync()
    add(w.partition_mut(128), x, y).sync()    # a borrow: w stays usable
    print(w.to_numpy()[:4])
    '''),
    md('''
    ### Outputs take partitions, inputs take tensors (TL115, TL116)
    '''),
    code('''
    add(cl.zeros(n).sync(), x, y).sync()
    ''', RAISES),
    code('''
    add(cl.zeros(n).partition(128), x.partition_mut(128), y).sync()
    ''', RAISES),
    md('''
    ### No aliasing (TL100, TL101)

    The compiler is told that a kernel's array parameters never overlap, which lets it keep
    tiles in registers and reorder loads and stores. The launch checker makes that promise
    true: an output may not share memory with an input, or with another output, views and
    slices included. (Here `x` is passed as the output *and* as an input.)
    '''),
    code('''
    add(x.partition_mut(128), x, y).sync()
    ''', RAISES),
    code('''
    buf = cl.zeros(2 * n).sync()
    split(buf[:n].partition_mut(128), buf[n // 2: n // 2 + n].partition_mut(128), x).sync()
    ''', RAISES),
    md('''
    The fix is separate memory: a fresh output (`cl.zeros(n)`), or slices that do not overlap.
    '''),
    code('''
    out, _, _ = add(cl.zeros(n).partition(128), x, y).sync()
    lo, hi, _ = split(buf[:n].partition_mut(128), buf[n:].partition_mut(128), x).sync()
    print("ok:", out, lo, sep="\\n  ")
    '''),
    md('''
    ### Arguments must fit the signature (TL110 to TL113, TL117 to TL119)

    The partition's tile must fit the declared tile (`fill128` fixes it to 128):
    '''),
    code('''
    fill128(cl.zeros(n).partition(64), x).sync()
    ''', RAISES),
    md('A const generic has one value per launch (here, given explicitly *and* by the partition):'),
    code('''
    add(cl.zeros(n).partition(128), x, y, B=64).sync()
    ''', RAISES),
    md('Dtype and rank are checked against the declaration:'),
    code('''
    add(cl.zeros(n, dtype="i32").partition(128), x, y).sync()
    ''', RAISES),
    code('''
    add(cl.zeros(n).partition(128), cl.randn((32, 32)).sync(), y).sync()
    ''', RAISES),
    md('Numbers go to scalar parameters, tensors to tensor parameters:'),
    code('''
    scale(cl.zeros(n).partition(128), x, y).sync()
    ''', RAISES),
    md('''
    Every parameter needs exactly one argument (TL117, refused as the launch is built, before
    the other rules run):
    '''),
    code('''
    add(cl.zeros(n).partition(128), x)
    ''', RAISES),
    md('''
    Several outputs split into tiles of one launch grid, so they must have the same number of
    tiles:
    '''),
    code('''
    split(cl.zeros(n).partition(128), cl.zeros(n // 2).partition(128), x).sync()
    ''', RAISES),
    md('''
    And the fixes, all at once:
    '''),
    code('''
    fill128(cl.zeros(n).partition(128), x).sync()
    add(cl.zeros(n).partition(128), x, y, B=128).sync()
    add(cl.zeros(n).partition(128), x, cl.randn(n).sync()).sync()
    scale(cl.zeros(n).partition(128), x, 2.0).sync()
    split(cl.zeros(n).partition(128), cl.zeros(n).partition(128), x).sync()
    print("all launched")
    '''),
    md('''
    ### Ragged partitions are fine (TL114, a note)

    A tile size that does not divide the shape is not an error: loads past the end read zeros
    (or the padding you choose), stores there are masked. The launch records a note; print
    a launch's `diagnostics` to see it.
    '''),
    code('''
    launch = add(cl.zeros(1000).partition(128), x[:1000], y[:1000])
    launch.sync()
    from cutile_lab.checking import render_text
    print(render_text(launch.diagnostics))
    '''),
    md('''
    ## Part 3: work in flight

    `.start()` queues the work and returns at once, with a `Pending`; the work holds its
    borrows until it completes. Meanwhile the host may not touch what it writes (TL103), and
    other launches may not read what it writes (TL104) or write what it reads (TL105).

    On a GPU, a small launch finishes in microseconds, before the next line of Python runs,
    so we use big tensors there (2 GiB each: a couple of milliseconds of work) and compile
    the kernels first, so that the launches below are only launches. Even so, a GPU can be
    done before Python gets to the next line; then there is nothing left to refuse, and the
    cell runs without an error. On the simulator, started work counts as in flight until
    you wait for it.
    '''),
    code('''
    %%tilekernel
    def double(out: Mut[Tensor[f32, "B"]], src: Tensor[f32, "?"]):
        out.store(load_tile_like(src, out) * 2.0)
    '''),
    code('''
    big = (1 << 29) if ON_GPU else 4096
    a = cl.ones(big).sync()
    b = cl.full(big, 2.0).sync()
    c = cl.zeros(big).sync()
    w = cl.zeros(big).sync()
    add(c.partition_mut(1024), a, b).sync()        # compiles add and double for these shapes
    double(w.partition_mut(1024), c).sync()
    print(c[:4].to_numpy(), w[:4].to_numpy())
    '''),
    code('''
    pending = add(c.partition_mut(1024), a, b).start()     # writes c, reads a and b
    c.to_numpy()                                            # TL103: c is being written
    ''', RAISES),
    code('''
    pending.wait()
    print(c[:4].to_numpy())      # after the work is done: fine
    '''),
    code('''
    pending = add(c.partition_mut(1024), a, b).start()
    double(w.partition_mut(1024), c).start()           # TL104: reads c, which is being written
    ''', RAISES),
    code('''
    pending.wait()
    pending = add(c.partition_mut(1024), a, b).start()
    double(a.partition_mut(1024), b).start()           # TL105: writes a, which is being read
    ''', RAISES),
    md('''
    The fixes: wait first, or chain the second launch after the first with `.then(...)`. A
    chain runs in order on one stream, so the second launch cannot start before the first is
    done (notebook 5 is about such pipelines).
    '''),
    code('''
    pending.wait()

    chained = add(c.partition_mut(1024), a, b).then(lambda *_: double(w.partition_mut(1024), c))
    chained.sync()
    print(w[:4].to_numpy())      # (1 + 2) * 2
    '''),
    md('''
    ## Recap

    | when | code | what |
    | --- | --- | --- |
    | kernel | TL010 | store into a shared input |
    | kernel | TL011 / TL012 / TL019 | raw memory op outside `unsafe` / empty `unsafe` / unsafe write to an input |
    | kernel | TL013 / TL014 / TL015 | output never stored / stored more than once / not on every path |
    | kernel | TL016 / TL017 / TL018 | stored tile's shape / dtype / implicit conversion |
    | kernel | TL020 / TL024 / TL026 | `load_tile_like` of a non-output / `load_tile` of an output / reassigned parameter |
    | launch | TL100 / TL101 | output aliases an input / another output |
    | launch | TL102 | use after move into a partition |
    | launch | TL103 / TL104 / TL105 | host access / read / write against in-flight work |
    | launch | TL110 to TL113 | tile shape, const generic, dtype, rank |
    | launch | TL114 | ragged partition (a note) |
    | launch | TL115 / TL116 / TL117 / TL118 / TL119 | output not partitioned / input partitioned / an argument missing or extra / scalar vs tensor / tile counts differ |

    (`TL117`, an argument missing, extra or given twice, is refused as the launch is built.)
    The rest of the catalog, the language's own rules (types of parameters, unknown
    names, unsupported Python), is in `docs/diagnostics.md`.

    Next, **03-thinking-in-tiles**: 2-D tiles, reductions and a fused softmax.
    '''),
]

# ==============================================================================================
# 03 -- thinking in tiles
# ==============================================================================================

NB03 = [
    md('''
    # 3 · Thinking in tiles: 2-D tiles, ragged edges, reductions, a fused softmax

    Tiles are not only 1-D. A 2-D output splits into `(BM, BN)` tiles, the launch grid is 2-D,
    and `tile_id(0)` / `tile_id(1)` say which tile an instance owns. This notebook works
    through the patterns that most kernels are made of: element-wise maps on matrices,
    ragged edges, reductions along a row, and several steps *fused* into one pass.
    '''),
    SETUP,
    md('''
    ## 2-D tiles

    `z = a·x + b` on a 100 × 300 matrix, in 32 × 64 tiles. The kernel is the 1-D one with a
    2-D shape in its signature; `load_tile_like` still reads "my tile" of `x`.
    '''),
    code('''
    %%tilekernel
    def affine(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"], a: f32, b: f32):
        z.store(a * load_tile_like(x, z) + b)
    '''),
    code('''
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((100, 300)).astype(np.float32)

    zp = cl.zeros((100, 300)).sync().partition((32, 64))
    print(zp)

    out, _, _, _ = affine(zp, cl.asarray(xn), 2.0, 1.0).sync()
    np.testing.assert_allclose(out.unpartition().to_numpy(), 2 * xn + 1, rtol=1e-6)
    print("matches NumPy")
    '''),
    md('''
    ⌈100/32⌉ × ⌈300/64⌉ = 4 × 5 = 20 instances. Neither 100 nor 300 is a multiple of the tile,
    so the last row of tiles and the last column of tiles are ragged. The ownership map shows
    it (on the simulator):
    '''),
    code('''
    cl.set_backend("sim")
    sim = affine(cl.zeros((100, 300)).partition((32, 64)), cl.asarray(xn), 2.0, 1.0)
    sim.sync()
    cl.set_backend(None)
    sim.sim_result.ownership_figure("z")
    '''),
    md('''
    What to look at: tiles are numbered row-major over the grid (tile id = 5·bid0 + bid1, as
    the title says). The bottom row of tiles holds 4 real rows out of 32, the right column 44
    real columns out of 64; the hatched parts past the black edge lines were computed and
    masked, never written. Loads there read **padding**: zero by default.

    ## Reductions: one instance, whole rows

    A row sum needs a whole row in one tile. So an instance owns `BR` *complete* rows: its
    output tile is `(BR, 1)`, and it loads a `(BR, N)` tile of `x` with `load_tile`, whose
    index counts in tiles: `(tile_id(0), 0)` is "my block of rows, first (and only) block of
    columns".

    `N` in `x: Tensor[f32, "?, N"]` names the number of columns: it is bound at launch from
    `x`'s actual shape. (A tile's sizes must be powers of two, so this kernel wants rows of 64,
    128, 256, ... elements; the softmax below lifts that.)
    '''),
    code('''
    %%tilekernel
    def row_sum(z: Mut[Tensor[f32, "BR, 1"]], x: Tensor[f32, "?, N"]):
        t = load_tile(x, (tile_id(0), 0), (BR, N))
        z.store(sum(t, axis=1, keepdims=True))
    '''),
    code('''
    xn = rng.standard_normal((1000, 256)).astype(np.float32)
    sums, _ = row_sum(cl.zeros((1000, 1)).partition((16, 1)), cl.asarray(xn)).sync()
    got = sums.unpartition().to_numpy()
    err = np.abs(got - xn.sum(axis=1, keepdims=True)).max()
    print("grid:", sums.grid, " max |error|:", err)
    assert err < 1e-4
    ''', IGNORE),
    md('''
    `keepdims=True` keeps the reduced axis, so the result is `(BR, 1)`, the output tile's
    shape: the checker holds you to it (TL016, notebook 2).

    ## A fused softmax

    `softmax(x)` along rows is `exp(x - max(x)) / sum(exp(x - max(x)))`. In NumPy that is five
    passes over memory, each reading and writing a full matrix. A tile kernel loads each row
    **once**, does all the arithmetic in registers, and stores once: for a bandwidth-bound
    operation that is the whole game.

    Rows of 1000 elements do not fit a power-of-two tile, so the tile is 1024 wide and the
    last 24 columns are padding. Zero padding would be wrong here (it would take part in the
    max and add `exp(0 - max)` to the sum), so the load pads with `-inf`
    (`padding="neg_inf"`): `exp(-inf) = 0`, and padding drops out of both reductions. The
    padded columns are never stored.
    '''),
    code('''
    %%tilekernel
    def softmax(z: Mut[Tensor[f32, "BR, BN"]], x: Tensor[f32, "?, ?"]):
        t = load_tile_like(x, z, padding="neg_inf")
        e = exp(t - max(t, axis=1, keepdims=True))
        z.store(e / sum(e, axis=1, keepdims=True))
    '''),
    code('''
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
    ''', IGNORE),
    md('''
    Each instance owned 4 whole rows, so the grid is (⌈rows/4⌉, 1). On a GPU, time it: the
    report gives the bandwidth, counting what a fused kernel must move (the matrix read once,
    written once).
    '''),
    code('''
    if ON_GPU:
        z = cl.zeros((rows, cols)).sync()
        %tile_time softmax(z.partition_mut((4, 1024)), x)
    else:
        print("timings need a GPU; here the kernel ran on the CPU simulator")
    ''', IGNORE),
    md('''
    ## Recap

    * 2-D tiles, 2-D grids: `tile_id(0)`, `tile_id(1)` say which tile is yours.
    * Ragged edges are free: loads pad, stores mask. Choose the padding that is neutral for
      what you compute: `0` for sums, `-inf` for maxima and softmax.
    * Reductions want the whole reduced axis in one tile; `keepdims=True` keeps the shape.
    * Fusing steps into one kernel turns several passes over memory into one.

    Next, **04-tensor-cores-and-the-roofline**: matrix products, and how fast is fast.
    '''),
]

# ==============================================================================================
# 04 -- tensor cores and the roofline
# ==============================================================================================

NB04 = [
    md('''
    # 4 · Tensor cores and the roofline

    A matrix product is where a GPU's tensor cores earn their keep. This notebook writes a
    GEMM with `mma` (matrix multiply-accumulate on tiles), counts its flops and bytes, places
    it on the **roofline** of the device, and tunes its tile sizes.
    '''),
    SETUP,
    md('''
    ## GEMM with `mma` over K tiles

    `C = A @ B` with `A: M × K`, `B: K × N`. Each instance owns one `(BM, BN)` tile of `C`.
    It walks along K in steps of `BK`: loads an `(BM, BK)` tile of A and a `(BK, BN)` tile of
    B, and `mma(a, b, acc)` multiplies them on the tensor cores, adding into an `f32`
    accumulator that stays in registers. One store at the end.

    `num_tiles(a, 1, (BM, BK))` is the number of `BK`-wide tiles along A's axis 1 (that is
    ⌈K / BK⌉); `BK: Const[int] = 64` is a compile-time constant with a default.
    '''),
    code('''
    %%tilekernel
    def matmul(c: Mut[Tensor[f16, "BM, BN"]], a: Tensor[f16, "?, ?"], b: Tensor[f16, "?, ?"],
               BK: Const[int] = 64):
        acc = full((BM, BN), 0.0, dtype=f32)
        for k in range(num_tiles(a, 1, (BM, BK))):
            ta = load_tile(a, (tile_id(0), k), (BM, BK))
            tb = load_tile(b, (k, tile_id(1)), (BK, BN))
            acc = mma(ta, tb, acc)
        c.store(acc.astype(f16))
    '''),
    code('''
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
    ''', IGNORE),
    md('''
    The error is the size of `f16` rounding of the output: the products were accumulated in
    `f32`.

    ## Arithmetic intensity: count flops and bytes

    Whether a kernel is limited by memory or by arithmetic depends on its **arithmetic
    intensity**: flops per byte moved to and from memory.

    * `add` (notebook 1): 1 flop per element, 12 bytes moved (read two `f32`, write one):
      1/12 ≈ 0.08 flop/byte.
    * GEMM: 2·M·N·K flops (a multiply and an add per term); at least A, B and C once each:
      2·(MK + KN + MN) bytes in `f16`. At M = N = K = 4096 that is 4096/3 ≈ 1365 flop/byte.

    The lab derives the same numbers from the kernel itself (it follows the loads, the stores,
    the `mma` shapes and the loop's trip count), which is what `%tile_time` uses:
    '''),
    code('''
    from cutile_lab.performance import count_elementwise, count_gemm
    from cutile_lab.notebook.workcount import ArgInfo, count_launch

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
    '''),
    md('''
    ## The roofline

    A device has two roofs: memory bandwidth (bytes/s) and peak arithmetic (flop/s, per
    precision). A kernel of intensity *I* can reach at most `min(peak, I × bandwidth)`. The
    intensity where the two meet is the **ridge**: below it a kernel is memory-bound, above it
    compute-bound. `%tile_device` lists the peaks:
    '''),
    code('''
    %tile_device
    ''', IGNORE),
    md('''
    The datasheet roofline of an H100, with our two kernels placed at their intensities (each
    marker is the best the roofline allows at that intensity, not a measurement):
    '''),
    code('''
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
    '''),
    md('''
    `add` sits far left, under the memory roof: the best it can do is stream bytes at full
    bandwidth. The 4096³ GEMM sits right of the `f16` ridge: it can be compute-bound, if the
    kernel feeds the tensor cores well.

    With a GPU, measure instead of promising: `%tile_time` times a launch (CUDA events,
    median of repeats) and records it, and `%tile_roofline` draws every measurement against
    the device's own roofs. Without one these cells say so.
    '''),
    code('''
    %%tilekernel
    def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
        z.store(load_tile_like(x, z) + load_tile_like(y, z))
    '''),
    code('''
    n = (1 << 24) if ON_GPU else 4096
    x, y, z = cl.randn(n, seed=1).sync(), cl.randn(n, seed=2).sync(), cl.zeros(n).sync()
    c = cl.zeros((M, N), dtype="f16").sync()
    %tile_time add(z.partition_mut(1024), x, y)
    %tile_time matmul(c.partition_mut((128, 128)), a, b)
    ''', IGNORE),
    code('''
    %tile_roofline
    ''', IGNORE),
    md('''
    ## Tuning tile sizes

    `BM`, `BN` and `BK` trade against each other: bigger tiles reuse each loaded byte more
    (higher intensity in registers and shared memory) but need more registers; past the
    register file, the compiler **spills** to local memory, which is slow. The compiler's
    resource report shows this without running anything, so it works on a laptop:
    '''),
    code('''
    import pandas as pd

    rows = []
    for BM, BN, BK in [(64, 64, 32), (64, 128, 64), (128, 128, 64), (128, 256, 64),
                       (256, 256, 64)]:
        res = matmul.compile("sm_90", BM=BM, BN=BN, BK=BK).resources
        rows.append({"BM": BM, "BN": BN, "BK": BK, "registers": res["registers"],
                     "shared KiB": res["shared_bytes"] / 1024,
                     "spills (local B)": res["local_bytes"]})
    pd.DataFrame(rows)
    ''', IGNORE),
    md('''
    What to look at: registers hit the 255-per-thread ceiling early; from 128 × 256 on, the
    kernel spills (local bytes above zero), a sign that those tiles are too big for this
    kernel as written.

    `sweep` does the same over a grid of choices, compiling in parallel, then runs each
    configuration: on a GPU it times it (and records it for `%tile_roofline`); without one it
    runs it on the simulator, checked against a reference by `check`.
    '''),
    code('''
    from cutile_lab.notebook import explore, sweep

    ref = a.to_numpy()[:64].astype(np.float32) @ b.to_numpy().astype(np.float32)

    def make_args(BM, BN, BK):          # the launch of one configuration: tiles of (BM, BN)
        return dict(c=c.partition_mut((BM, BN)), a=a, b=b, BK=BK)

    def check(result):
        got = result[0].unpartition().to_numpy()[:64].astype(np.float32)
        return np.abs(got - ref).max() <= 2e-3 * np.abs(ref).max()

    table = sweep(matmul, make_args, BM=[64, 128], BN=[64, 128], BK=[32, 64], check=check,
                  progress=False)
    table
    ''', IGNORE),
    md('''
    And interactively: `explore` gives one control per choice; every change recompiles and
    re-runs, and the table below the plot keeps everything tried so far (`explorer.history`).
    '''),
    code('''
    explorer = explore(matmul, make_args, BM=[64, 128], BN=[64, 128], BK=[32, 64], check=check)
    explorer
    ''', IGNORE),
    md('''
    ## Recap

    * `mma(a, b, acc)` multiplies tiles on tensor cores; loop over K, accumulate in `f32`,
      store once.
    * Arithmetic intensity (flop/byte) places a kernel on the roofline: left of the ridge it
      is memory-bound, right of it compute-bound.
    * `%tile_time` and `%tile_roofline` measure against the device's own peaks; `sweep` and
      `explore` search the tile sizes; the resource table shows spills before you run.

    Next, **05-pipelines**: lazy work, `.then()`, `await` and CUDA graphs.
    '''),
]

# ==============================================================================================
# 05 -- pipelines
# ==============================================================================================

NB05 = [
    md('''
    # 5 · Pipelines: lazy ops, `.then()`, `await` and CUDA graphs

    Everything the lab does on a device is a **DeviceOp**: a description of work that runs
    when you ask. That makes three things easy: composing steps into one chain that runs on
    one stream without host round trips, overlapping work with `await`, and capturing a chain
    into a CUDA graph that replays for a fraction of the launch cost.

    On the simulator, ops run on the CPU with the same API; the timing cells need a GPU.
    '''),
    SETUP,
    code('''
    %%tilekernel
    def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
        z.store(load_tile_like(x, z) + load_tile_like(y, z))

    def axpy(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"], alpha: f32):
        z.store(alpha * load_tile_like(x, z) + load_tile_like(y, z))
    '''),
    md('''
    ## Lazy ops

    Creating a tensor, partitioning it, launching a kernel: each returns an op, and nothing
    has run yet.
    '''),
    code('''
    n = 1 << 16
    x_op = cl.randn(n, seed=1)
    launch = add(cl.zeros(n).partition(1024), x_op, cl.ones(n))
    print(x_op)
    print(launch.label, "-", type(launch).__name__)
    '''),
    md('''
    `.sync()` runs an op and everything it depends on (here: three creations, one partition,
    one launch), in order, on one stream, and waits once, at the end.
    '''),
    code('''
    z, x, ones = launch.sync()
    print(z)
    np.testing.assert_allclose(z.unpartition().to_numpy(), x.to_numpy() + 1, rtol=1e-6)
    '''),
    md('''
    ## `.then()`: the next step, on the same stream

    `op.then(f)` calls `f` with the op's result when the chain runs; if `f` returns an op, it
    is queued right after, on the same stream. A launch's result is its arguments, handed
    back, so the next step can take ownership of them. Here, `w = 2·(x + y) + y`:
    '''),
    code('''
    x = cl.randn(n, seed=1).sync()
    y = cl.randn(n, seed=2).sync()

    pipeline = (add(cl.zeros(n).partition(1024), x, y)
                .then(lambda z, x, y: axpy(cl.zeros(n).partition(1024), z.unpartition(), y, 2.0)))
    print(pipeline.label)

    w, _, _, _ = pipeline.sync()
    expected = 2 * (x.to_numpy() + y.to_numpy()) + y.to_numpy()
    np.testing.assert_allclose(w.unpartition().to_numpy(), expected, rtol=1e-5)
    print("w = 2(x + y) + y ✓")
    '''),
    md('''
    `cl.zip(a, b, ...)` runs several ops and gives the tuple of their results; `.then()` with
    a function of several parameters unpacks it. (Wrap a kernel in a `lambda` to pass it to
    `.then`.)
    '''),
    code('''
    both = cl.zip(cl.zeros(n).partition(1024), cl.randn(n, seed=3), cl.randn(n, seed=4))
    summed = both.then(lambda z, x, y: add(z, x, y))
    z, x3, y3 = summed.sync()
    np.testing.assert_allclose(z.unpartition().to_numpy(), x3.to_numpy() + y3.to_numpy(),
                               rtol=1e-6)
    print("zip + then ✓")
    '''),
    md('''
    ## `start()` and `await`

    `.sync()` waits. `.start()` queues the work and returns a `Pending` at once; the work
    keeps its borrows until it completes (notebook 2: the host cannot read what it writes
    meanwhile). `await op` starts and waits without blocking the notebook's event loop, so
    independent pipelines overlap: on a GPU each started chain gets its own stream.
    '''),
    code('''
    import asyncio

    async def pipeline(seed):
        x = await cl.randn(n, seed=seed)
        z, _, _ = await add(cl.zeros(n).partition(1024), x, x)
        return z.unpartition()

    results = await asyncio.gather(pipeline(10), pipeline(11), pipeline(12))
    [r.to_numpy()[:2] for r in results]
    '''),
    code('''
    pending = add(cl.zeros(n).partition(1024), x, y).start()
    print(pending)
    z, _, _ = pending.wait()
    print(pending)
    '''),
    md('''
    ## CUDA graphs

    Every launch costs host time: checking, packing arguments, the driver call. For small
    kernels that overhead is most of the time. A **CUDA graph** records a whole chain once
    (`cl.graph(op)`: the checks, compilation and packing happen at capture) and replays it
    with a single driver call: `g.replay(k)` runs the chain `k` times.

    A chain of 50 small launches, as a graph:
    '''),
    code('''
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
    '''),
    md('''
    ### What a launch costs

    Three ways to run the same 50 launches: one `.sync()` each; one chain with one `.sync()`;
    one graph replay. Host wall time per kernel, so launch overhead is what we see (the
    kernel itself is a few microseconds).
    '''),
    code('''
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
    ''', IGNORE),
    md('''
    What to look at (on a GPU): a sync per launch pays a host round trip each time; a chain
    pays it once; a graph also skips the per-launch host work, so its cost per kernel is close
    to the GPU's own launch latency.

    ## Recap

    * Ops are lazy; `.sync()` runs a whole chain on one stream and waits once.
    * `.then(f)` composes steps; launches hand ownership of their arguments to the next step.
    * `.start()` / `await` overlap independent work; borrows last until the work is done.
    * `cl.graph(op)` captures a chain; `replay` relaunches it for almost no host time.

    Next, **06-fused-kernels**: layernorm and rmsnorm against PyTorch.
    '''),
]

# ==============================================================================================
# 06 -- fused kernels
# ==============================================================================================

NB06 = [
    md('''
    # 6 · Fused kernels: layernorm and rmsnorm

    Normalizations are the row-wise kernels of every transformer. Each is a few reductions
    and element-wise steps over one row: exactly the fused pattern of notebook 3. The lab's
    kernel library (`cutile_lab.kernels`) has them as **templates**: tile-language source
    with placeholders (`{dt}` for the dtype, and a few more), compiled per instantiation like
    any kernel of yours.

    The problem first: on the simulator, 64 rows of 1000 elements (not a power of two, so
    the padding path is exercised); on a GPU, 8192 rows of 4096, the size of a transformer
    layer's activations. `f16` storage.
    '''),
    SETUP,
    code('''
    rows, cols = (8192, 4096) if ON_GPU else (64, 1000)
    BN = 1 << (cols - 1).bit_length()         # the row length, rounded up to a power of two
    BR, eps = 4, 1e-5
    print(f"{rows} rows of {cols}: tiles of {BR} x {BN}")
    '''),
    md('''
    `substitutions` says how the library fills in a template for rows of this length;
    `.kernel(...)` instantiates it:
    '''),
    code('''
    from cutile_lab.kernels.rowwise import LAYERNORM, RMSNORM, substitutions

    layernorm = LAYERNORM.kernel(**substitutions("layernorm", "f16", cols))
    rmsnorm = RMSNORM.kernel(**substitutions("rmsnorm", "f16", cols))
    print(layernorm.definition.text)
    ''', IGNORE),
    md('''
    Reading it:

    * the output tile is `(BR, BN)`: `BR` whole rows, `BN` the row length rounded up to a
      power of two;
    * statistics are computed in `f32` whatever the storage dtype (`.astype(f32)`);
    * `n` is the real row length: columns past it are padding (zeros from the load), so the
      mean divides by `n`; when rows are ragged, `where(arange(BN) < n, t - mean, 0.0)` keeps
      the padding out of the variance (for power-of-two rows the template leaves the mask
      out);
    * `w` and `b` are loaded once per instance as one `(BN,)` tile, reshaped to `(1, BN)` to
      broadcast over the rows;
    * `@kernel(opt_level=3)` passes options to the compiler.

    RMSNorm is the same without the mean and the bias:
    '''),
    code('''
    print(rmsnorm.definition.text)
    ''', IGNORE),
    md('''
    ## Correct, against NumPy

    `f32` references, computed from the same `f16` inputs:
    '''),
    code('''
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((rows, cols)).astype(np.float16)
    wn = (1 + 0.1 * rng.standard_normal(cols)).astype(np.float16)
    bn = (0.1 * rng.standard_normal(cols)).astype(np.float16)
    x, w, b = cl.asarray(xn), cl.asarray(wn), cl.asarray(bn)

    def layernorm_ref(x, w, b):
        x = x.astype(np.float32)
        mean = x.mean(axis=1, keepdims=True)
        var = x.var(axis=1, keepdims=True)
        return (x - mean) / np.sqrt(var + eps) * w.astype(np.float32) + b.astype(np.float32)

    def rmsnorm_ref(x, w):
        x = x.astype(np.float32)
        return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps) * w.astype(np.float32)

    out, *_ = layernorm(cl.zeros((rows, cols), dtype="f16").partition((BR, BN)),
                        x, w, b, cols, eps).sync()
    err = np.abs(out.unpartition().to_numpy().astype(np.float32) - layernorm_ref(xn, wn, bn)).max()
    print(f"layernorm {rows}x{cols} f16: max |error| {err:.2e}")
    assert err < 2e-2

    out, *_ = rmsnorm(cl.zeros((rows, cols), dtype="f16").partition((BR, BN)),
                      x, w, cols, eps).sync()
    err = np.abs(out.unpartition().to_numpy().astype(np.float32) - rmsnorm_ref(xn, wn)).max()
    print(f"rmsnorm   {rows}x{cols} f16: max |error| {err:.2e}")
    assert err < 2e-2
    ''', IGNORE),
    md('''
    Errors of a few thousandths: the rounding of the `f16` result (values near 4 have a
    spacing of 0.004 in `f16`).

    The library also wraps each kernel in a host function that allocates the output, picks
    the tile sizes, partitions and launches, and hands back the output as a lazy op:
    '''),
    code('''
    import cutile_lab.kernels as K

    y = K.layernorm(x, w, b, eps).sync()
    print(y)
    np.testing.assert_allclose(y.to_numpy().astype(np.float32), layernorm_ref(xn, wn, bn),
                               atol=2e-2)
    '''),
    md('''
    ## Choosing `BR`

    `BN` is fixed by the row length; `BR`, the rows per instance, is free. More rows per
    instance mean fewer, bigger instances. `sweep` tries each choice: on a GPU it times them
    (one output, partitioned anew for each configuration); without one it only checks each
    on the simulator, and we keep `BR = 4`.
    '''),
    code('''
    from cutile_lab.notebook import sweep

    ref = layernorm_ref(xn, wn, bn)
    out = cl.zeros((rows, cols), dtype="f16").sync()

    def make_args(BR, BN):
        return (out.partition_mut((BR, BN)), x, w, b, cols, eps)

    def check(result):
        got = result[0].unpartition().to_numpy().astype(np.float32)
        return np.abs(got - ref).max() < 2e-2

    table = sweep(layernorm, make_args, BR=[1, 2, 4, 8, 16], BN=[BN], check=check,
                  progress=False)
    if ON_GPU:
        BR = int(table.loc[table["median_us"].idxmin(), "BR"])
    print("BR =", BR)
    table
    ''', IGNORE),
    md('''
    ## Against PyTorch

    On a GPU with PyTorch, the comparison that matters: the same operation, the same data,
    PyTorch's fused CUDA kernels against ours. Our kernels take PyTorch tensors directly
    (no copies: DLPack and `__cuda_array_interface__`), and write into a PyTorch tensor.
    '''),
    code('''
    try:
        import torch
        HAVE_TORCH = ON_GPU and torch.cuda.is_available()
    except ImportError:
        HAVE_TORCH = False
    print("PyTorch on the GPU:", HAVE_TORCH)
    '''),
    code('''
    if HAVE_TORCH:
        import pandas as pd
        import torch.nn.functional as F
        from cutile_lab.notebook.timing import time_launch

        xt = torch.from_numpy(xn).cuda()
        wt, bt = torch.from_numpy(wn).cuda(), torch.from_numpy(bn).cuda()
        out_t = torch.empty_like(xt)
        out_lab = cl.asarray(out_t)                       # the same memory, no copy

        def torch_us(fn, repeats=50):
            for _ in range(5):
                fn()
            start = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
            end = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
            for s, e in zip(start, end):
                s.record(); fn(); e.record()
            torch.cuda.synchronize()
            return float(np.median([s.elapsed_time(e) for s, e in zip(start, end)])) * 1e3

        def ours_us(launch):
            return time_launch(lambda: launch, warmup=5, repeats=50).median * 1e6

        moved = 2 * xt.numel() * xt.element_size()       # read x once, write the output once
        rows_ = []
        for name, ours, theirs in [
            ("layernorm", layernorm(out_lab.partition_mut((BR, BN)), xt, wt, bt, cols, eps),
             lambda: F.layer_norm(xt, (cols,), wt, bt, eps)),
            ("rmsnorm", rmsnorm(out_lab.partition_mut((BR, BN)), xt, wt, cols, eps),
             lambda: F.rms_norm(xt, (cols,), wt, eps)),
        ]:
            t_ours, t_torch = ours_us(ours), torch_us(theirs)
            rows_.append({"kernel": name, "cutile_lab µs": t_ours, "PyTorch µs": t_torch,
                          "cutile_lab GB/s": moved / t_ours / 1e3,
                          "PyTorch GB/s": moved / t_torch / 1e3,
                          "speed-up": t_torch / t_ours})
        display(pd.DataFrame(rows_).round(2))
    else:
        print("the PyTorch comparison needs a GPU and PyTorch: skipped here")
    ''', IGNORE),
    md('''
    What to look at: both read the matrix once and write it once, so the fair yardstick is
    GB/s against the device's bandwidth (`%tile_device`). A speed-up above 1 means ours is
    faster.

    ## Recap

    * Library kernels are ordinary tile-language kernels: read them, copy them, change them.
    * Row-wise fusion: statistics in `f32`, padding kept out of every reduction, one read and
      one write of the data.
    * Lab kernels take and write PyTorch (and CuPy, JAX) tensors without copies.

    Next, **07-puzzles**: your turn.
    '''),
]

# ==============================================================================================
# 07 -- puzzles (and their solutions)
# ==============================================================================================

PUZZLE_TEXT = {
    "copy": ('''
        Copy `x` into `z`. The simplest kernel there is: load your tile, store it.''',
             '''
        def copy(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
            # TODO: store the tile of x that sits where z's tile sits
            z.store(zeros((B,), dtype=f32))''',
             '''
        def copy(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
            z.store(load_tile_like(x, z))'''),
    "scale": ('''
        `z = alpha · x`, with `alpha` a number passed at launch. A parameter typed with a dtype
        (`alpha: f32`) is a scalar.''',
              '''
        def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], alpha: f32):
            t = load_tile_like(x, z)
            z.store(t)              # TODO: multiply by alpha''',
              '''
        def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], alpha: f32):
            z.store(load_tile_like(x, z) * alpha)'''),
    "add_row": ('''
        Add the vector `row` (one value per column) to every row of the matrix `x`. Each
        instance owns a `(BM, BN)` tile; it needs the `BN` values of `row` for *its* columns,
        read with `load_tile(row, index, shape)` (the index counts in tiles), then reshaped to
        `(1, BN)` so that it broadcasts over the tile's rows.

        The stub is a first attempt with a bug. Run the check and read what it says.''',
                '''
        def add_row(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"], row: Tensor[f32, "?"]):
            r = load_tile(row, (tile_id(0),), (BN,))     # a first attempt
            z.store(load_tile_like(x, z) + reshape(r, (1, BN)))''',
                '''
        def add_row(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"], row: Tensor[f32, "?"]):
            r = load_tile(row, (tile_id(1),), (BN,))     # the tile of row for my columns
            z.store(load_tile_like(x, z) + reshape(r, (1, BN)))'''),
    "transpose2d": ('''
        `z = xᵀ`. The tile of `z` at `(i, j)` is the transpose of the tile of `x` at `(j, i)`,
        and `transpose(t)` transposes a tile.

        The stub is somebody's attempt with a raw store in an `unsafe` block: the ownership
        checker cannot help there, but the simulator still sees every store. The check shows
        the ownership map of the result: red means two tiles wrote the same elements. Fix it,
        ideally without `unsafe`.''',
                    '''
        def transpose2d(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"]):
            t = load_tile(x, (tile_id(1), tile_id(0)), (BN, BM))
            with unsafe():                                # a first attempt with a raw store
                store(z, index=(tile_id(0), tile_id(0)), tile=transpose(t))''',
                    '''
        def transpose2d(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"]):
            t = load_tile(x, (tile_id(1), tile_id(0)), (BN, BM))
            z.store(transpose(t))'''),
    "row_sum": ('''
        The sum of every row of `x`, as a column `z` of shape `(rows, 1)`. Each instance owns
        `BR` rows; rows have at most `BN = 128` elements (the load pads the rest with
        zeros).''',
                '''
        def row_sum(z: Mut[Tensor[f32, "BR, 1"]], x: Tensor[f32, "?, ?"], BN: Const[int] = 128):
            t = load_tile(x, (tile_id(0), 0), (BR, BN))
            z.store(full((BR, 1), 0.0, dtype=f32))        # TODO: the sum of each row of t''',
                '''
        def row_sum(z: Mut[Tensor[f32, "BR, 1"]], x: Tensor[f32, "?, ?"], BN: Const[int] = 128):
            t = load_tile(x, (tile_id(0), 0), (BR, BN))
            z.store(sum(t, axis=1, keepdims=True))'''),
    "row_max": ('''
        The maximum of every row, with rows of up to `BN = 256` elements. The stub looks
        right. Is it?''',
                '''
        def row_max(z: Mut[Tensor[f32, "BR, 1"]], x: Tensor[f32, "?, ?"], BN: Const[int] = 256):
            t = load_tile(x, (tile_id(0), 0), (BR, BN))
            z.store(max(t, axis=1, keepdims=True))        # almost: run the check''',
                '''
        def row_max(z: Mut[Tensor[f32, "BR, 1"]], x: Tensor[f32, "?, ?"], BN: Const[int] = 256):
            t = load_tile(x, (tile_id(0), 0), (BR, BN), padding="neg_inf")
            z.store(max(t, axis=1, keepdims=True))'''),
    "causal_mask": ('''
        Keep `x[i, j]` where `j <= i` and write 0 above the diagonal: the mask of causal
        attention. Square `(B, B)` tiles. Build the row and column index of every element of
        your tile from `arange(B, dtype=i32)`, `reshape` and `tile_id`, and choose with
        `where(condition, a, b)`.''',
                    '''
        def causal_mask(z: Mut[Tensor[f32, "B, B"]], x: Tensor[f32, "?, ?"]):
            t = load_tile_like(x, z)
            z.store(t)                                    # TODO: zero where column > row''',
                    '''
        def causal_mask(z: Mut[Tensor[f32, "B, B"]], x: Tensor[f32, "?, ?"]):
            rows = reshape(arange(B, dtype=i32), (B, 1)) + tile_id(0) * B
            cols = reshape(arange(B, dtype=i32), (1, B)) + tile_id(1) * B
            z.store(where(cols <= rows, load_tile_like(x, z), 0.0))'''),
    "log_softmax": ('''
        `log_softmax(x) = s - log(sum(exp(s)))` along each row, with `s = x - max(x)`. One
        instance owns `BR` whole rows; the tile is `BN` wide, a power of two at least as long
        as a row (the check uses rows of 200 in tiles of 256). Mind the padding (notebook 3).''',
                    '''
        def log_softmax(z: Mut[Tensor[f32, "BR, BN"]], x: Tensor[f32, "?, ?"]):
            t = load_tile_like(x, z)
            s = t - max(t, axis=1, keepdims=True)
            z.store(s)                  # TODO: subtract the log of the row's sum of exp(s)''',
                    '''
        def log_softmax(z: Mut[Tensor[f32, "BR, BN"]], x: Tensor[f32, "?, ?"]):
            t = load_tile_like(x, z, padding="neg_inf")
            s = t - max(t, axis=1, keepdims=True)
            z.store(s - log(sum(exp(s), axis=1, keepdims=True)))'''),
    "matmul": ('''
        `c = a @ b` for `f16` inputs, accumulating in `f32`, on tensor cores: loop `k` over
        the `BK`-wide tiles of the shared dimension (`num_tiles(a, 1, (BM, BK))` of them),
        load the `(BM, BK)` tile of `a` and the `(BK, BN)` tile of `b`, and
        `acc = mma(ta, tb, acc)`. The sizes in the check are not multiples of the tiles.''',
               '''
        def matmul(c: Mut[Tensor[f32, "BM, BN"]], a: Tensor[f16, "?, ?"], b: Tensor[f16, "?, ?"],
                   BK: Const[int] = 32):
            acc = full((BM, BN), 0.0, dtype=f32)
            # TODO: loop over the K tiles, accumulating with acc = mma(a_tile, b_tile, acc)
            c.store(acc)''',
               '''
        def matmul(c: Mut[Tensor[f32, "BM, BN"]], a: Tensor[f16, "?, ?"], b: Tensor[f16, "?, ?"],
                   BK: Const[int] = 32):
            acc = full((BM, BN), 0.0, dtype=f32)
            for k in range(num_tiles(a, 1, (BM, BK))):
                ta = load_tile(a, (tile_id(0), k), (BM, BK))
                tb = load_tile(b, (k, tile_id(1)), (BK, BN))
                acc = mma(ta, tb, acc)
            c.store(acc)'''),
}


def _launch_sentence(statement: str) -> str:
    """``copy(z.partition((64,)), x) with x: f32[1000], z: f32[1000]`` -> a sentence."""
    import re
    launch, _, shapes = statement.partition(" with ")
    shapes = ", ".join(f"`{s}`" for s in re.split(r", (?=\w+: )", shapes))
    return (f"The check launches `{launch}` with {shapes} (then a second case, of other "
            "sizes) and compares the result with this NumPy reference:")


def _puzzle_cells(solutions: bool) -> list[dict]:
    sys.path.insert(0, str(HERE))
    import puzzles
    cells = []
    for i, (name, p) in enumerate(puzzles.PUZZLES.items(), start=1):
        text, stub, solution = PUZZLE_TEXT[name]
        ref = puzzles.reference_source(name).rstrip()
        cells.append({"kind": "markdown", "source": "\n".join([
            f"## Puzzle {i} · {p.title}", "",
            textwrap.dedent(text).strip(), "",
            _launch_sentence(puzzles.statement(name)), "",
            "```python", ref, "```"])})
        body = textwrap.dedent(solution if solutions else stub).strip("\n")
        cells.append(code("%%tilekernel\n" + body))
        cells.append(code(f"check_{name}({name})"))
    return cells


NB07_INTRO = md('''
    # 7 · Puzzles

    Nine small kernels, from a copy to a matrix product, in increasing difficulty. For each:
    a statement, the NumPy reference it must match, a stub to complete (a `%%tilekernel`
    cell: edit it, run it), and a check.

    `check_<name>(kernel)` runs your kernel on fresh random inputs, at two sizes with ragged
    edges, on the CPU simulator (and on the GPU too, if there is one), and says what is wrong
    in plain words: the first wrong element with the expected and actual values, a race
    between tiles (with a picture), an access out of bounds, a signature that does not fit.
    The checks live in `puzzles.py`, next to this notebook.

    Every stub compiles and runs, and fails its check: run the whole notebook once to see
    where you stand, then solve them one by one. The solutions are in
    `07-puzzles-solutions.ipynb`; no peeking before trying.
    ''')

NB07_SOLUTIONS_INTRO = md('''
    # 7 · Puzzles: solutions

    The solutions of `07-puzzles.ipynb`, each with its check. Every check passes.
    ''')

PUZZLE_SETUP = code('''
    %load_ext cutile_lab
    %matplotlib inline
    from puzzles import *

    print("launches run on the", "GPU and the simulator" if cl.backend() == "gpu"
          else "CPU simulator (no GPU found)")
''')

PROGRESS = [
    md('## Where you stand'),
    code('''
    import puzzles
    print(puzzles.progress())
    '''),
]


def nb07(solutions: bool) -> list[dict]:
    intro = NB07_SOLUTIONS_INTRO if solutions else NB07_INTRO
    return [intro, PUZZLE_SETUP] + _puzzle_cells(solutions) + PROGRESS



# ==============================================================================================
# 09 -- CUDA C++ beside tile kernels
# ==============================================================================================

NB09 = [
    md('''
    # 9 · CUDA C++ beside tile kernels

    Some algorithms want what a tile language hides: warp shuffles, hand-placed shared memory,
    one thread's view of the data. The lab takes **CUDA C++ kernels** too, and holds them to
    the same ownership rules as your tile kernels:

    * a `%%cuda` cell (or `cl.cuda_kernel(source, name)`) compiles CUDA C++ with NVRTC, on
      the CPU: no GPU is needed to compile, read the PTX and SASS, or see the resources;
    * the **signature** says what the kernel owns: a `const T*` parameter is shared (read),
      a `T*` is written, a value is a scalar;
    * a launch, `k(args..., grid=..., block=...)`, is a lazy `DeviceOp` checked like a tile
      kernel's launch (aliasing, moves, work in flight) and chained with tile kernels and
      PyTorch work on one stream, into CUDA graphs too.

    The example: a row-wise softmax written by hand in CUDA C++, then the same operation as a
    tile kernel, side by side on the roofline.
    '''),
    SETUP,
    md('''
    ## A hand-written softmax

    One block of 256 threads per row. Each thread walks the row with a stride of 256; the
    row's maximum and sum are reduced first within each warp with `__shfl_xor_sync`, then
    across the block's 8 warps through shared memory.
    '''),
    code('''
    %%cuda
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
    ''', IGNORE),
    md('''
    The report is the one a tile kernel gets: resources (registers, the 32 bytes of shared
    memory), compile time and cache state, and, one click away, the PTX (and the SASS where a
    disassembler is installed). Its notes say what the lab read off the signature, and what
    it does **not** check: a C++ body can index anywhere, so staying inside each tensor is the
    kernel author's promise.

    The cell defined `softmax_rows` in the notebook: a kernel you can launch, whose
    parameters carry their ownership.
    '''),
    code('''
    print(softmax_rows)
    for p in softmax_rows.signature.params:
        print(f"  {p.name:5} {p.ctype:24} -> {p.role}")
    '''),
    code('''
    ptx = softmax_rows.compiled.ptx.splitlines()
    print("\\n".join(l for l in ptx if "shfl" in l)[:400])
    print("registers:", softmax_rows.compiled.resources["registers"],
          " shared bytes:", softmax_rows.compiled.resources["shared_bytes"])
    ''', IGNORE),
    md('''
    A broken kernel is reported at its line in the cell, with NVRTC's message:
    '''),
    code('''
    %%cuda
    extern "C" __global__ void broken(const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = 2.0f * xs[i];
    }
    ''', RAISES),
    md('''
    ## Launching it, under the ownership rules

    `grid` and `block` are CUDA's `<<<grid, block>>>`. The problem: rows of 4096 `f32` (on the
    simulator a small one: the checks are the same).
    '''),
    code('''
    rows, cols = (16384, 4096) if ON_GPU else (64, 4096)
    rng = np.random.default_rng(0)
    xn = (3 * rng.standard_normal((rows, cols))).astype(np.float32)
    x = cl.asarray(xn)
    y = cl.zeros((rows, cols)).sync()
    e = np.exp(xn - xn.max(axis=1, keepdims=True))
    expected = e / e.sum(axis=1, keepdims=True)
    print(f"{rows} rows of {cols}")
    '''),
    md('''
    The signature says `y` is written and `x` only read. Passing the same tensor as both is the
    classic in-place mistake (each block reads a row that another block may already have
    overwritten, here its own): the launch is refused before anything runs, at your line, with
    the same diagnostic as a tile kernel's (TL100).
    '''),
    code('''
    softmax_rows(x, x, cols, grid=rows, block=256).sync()
    ''', RAISES),
    md('''
    The correct launch. Without a GPU the lab still checks it (ownership, aliasing, work in
    flight), then says that a CUDA C++ kernel needs a GPU: the simulator runs tile kernels,
    not C++.
    '''),
    code('''
    op = softmax_rows(x, y, cols, grid=rows, block=256)
    try:
        op.sync()
        print("max |error|:", float(np.abs(y.to_numpy() - expected).max()))
        np.testing.assert_allclose(y.to_numpy(), expected, rtol=1e-4, atol=1e-6)
    except cl.NoDeviceError as err:
        print(err.message)
        print("help:", err.help)
    '''),
    md('''
    ## In one chain with tile kernels

    A launch of a CUDA C++ kernel is a `DeviceOp` like any other: `.then()` puts it on the
    same stream as the tile kernel before it, `cl.graph(...)` captures the whole chain. Here a
    tile kernel scales the input, the C++ softmax normalises the rows, and a second tile
    kernel adds a bias, all on one stream.
    '''),
    code('''
    %%tilekernel
    def scale(z: Mut[Tensor[f32, "BR, BN"]], x: Tensor[f32, "?, ?"], a: f32):
        z.store(a * load_tile_like(x, z))

    def add_row(z: Mut[Tensor[f32, "BR, BN"]], x: Tensor[f32, "?, ?"], b: Tensor[f32, "?, ?"]):
        z.store(load_tile_like(x, z) + load_tile_like(b, z))
    ''', IGNORE),
    code('''
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
    '''),
    md('''
    On the simulator the first tile kernel ran, the C++ launch was checked and skipped (what it
    would write was filled with NaN, so that no stale value passes for a result), and the last
    tile kernel was still checked: a mistake there would be reported, not hidden behind the
    missing GPU.

    ## PyTorch work in the chain

    `cl.torch_op(fn, *tensors)` runs PyTorch code as an op of the chain, on the chain's
    stream (PyTorch's current stream is set to it), with lab tensors handed over as torch
    tensors without a copy. The lab cannot read `fn`, so every tensor counts as written unless
    `writes=` names the ones it writes; moves and work in flight are checked as for a launch.
    '''),
    code('''
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
    '''),
    md('''
    ## On the roofline

    The lab's own tile softmax (the library's tuned template, `f32` here) against the
    hand-written one, and PyTorch's. A softmax is bandwidth-bound: the floor is reading the
    matrix once and writing it once, 8 bytes per element. Both kernels are given the same
    nominal flop count (5 per element) so that they sit at the same arithmetic intensity and
    their heights compare directly. The CUDA C++ launch's bytes come from its signature (each
    tensor once), the tile kernel's from its loads and stores.
    '''),
    code('''
    from cutile_lab.kernels.rowwise import SOFTMAX, substitutions
    from cutile_lab.kernels.tuning import config, hints_text

    cfg = config("softmax", cl.device_info().arch if ON_GPU else None, variant=str(cols))
    tile_softmax = SOFTMAX.kernel(**substitutions("softmax", "f32", cols, hints_text(cfg)))
    BR = cfg["BR"]
    z = cl.zeros((rows, cols)).sync()
    res, _ = tile_softmax(z.partition_mut((BR, cols)), x).sync()
    print(f"tile softmax, BR={BR}: max |error|", float(np.abs(z.to_numpy() - expected).max()))
    FLOPS = 5 * rows * cols
    ''', IGNORE),
    code('''
    if ON_GPU:
        %tile_time --name "CUDA C++ softmax" --flops {FLOPS} softmax_rows(x, y, cols, grid=rows, block=256)
        %tile_time --name "tile softmax" --flops {FLOPS} tile_softmax(z.partition_mut((BR, cols)), x)
        if HAVE_TORCH:
            %tile_time --name "torch.softmax" --flops {FLOPS} --bytes {8 * rows * cols} cl.torch_op(torch_softmax, x, out, writes=[1])
    else:
        print("timings need a GPU: on the simulator the tile softmax ran, the C++ one was checked")
    ''', IGNORE),
    code('''
    if ON_GPU:
        %tile_roofline
    ''', IGNORE),
    md('''
    What to look for on an H100: both kernels stream the matrix once in, once out, so both sit
    under the memory roof at the same intensity; the distance between their points is how
    much of the bandwidth each leaves on the table. The hand-written kernel reads each row
    three times (max, sum, write: the second and third reads mostly hit the L1 cache), the
    tile kernel once into registers.

    ## Recap

    * `%%cuda` / `cl.cuda_kernel` compile CUDA C++ with NVRTC, cached like tile kernels;
      errors point at your cell's line; the report has the PTX, SASS and resources.
    * Ownership comes from the signature: `const T*` shared, `T*` written. A launch is
      refused for aliasing (TL100/TL101), moved tensors (TL102) and conflicting work in
      flight (TL104/TL105), exactly like a tile kernel's.
    * What the C++ body does with its pointers is unchecked, and the report says so; a body
      that casts a `const` away is reported and its pointer checked as written.
    * CUDA C++ launches, tile kernels and PyTorch work chain on one stream, into graphs, and
      onto one roofline.
    '''),
]


# ==============================================================================================
# 11 -- a Qwen3 decode step
# ==============================================================================================

NB11 = [
    md('''
    # 11 · A Qwen3 decode step at the HBM roofline

    Generating one token with a language model at batch 1 multiplies every weight matrix by
    *one* vector. Each weight is read once and used for one multiply-add: about one flop per
    byte, two orders of magnitude under an H100's ridge point. So the speed of decode is set
    by bytes, and its ceiling is simple to write down:

    $$\\text{tokens/s} \\le \\frac{\\text{HBM bandwidth}}{\\text{bytes of weights} + \\text{bytes of KV cache read per token}}$$

    `cutile_lab.models.qwen3` builds the Qwen3 decoder (RMSNorm, rotary embeddings,
    grouped-query attention with q/k norms, SwiGLU MLP) from the lab's safe kernels
    (`cutile_lab.kernels.decode`), six per layer:

    | kernel | what it fuses |
    | --- | --- |
    | `rms_gemv` | RMSNorm of the residual stream, then the q, k and v projections as one GEMV |
    | `attention_decode` | q/k RMSNorm, RoPE, the new key and value into the KV cache, attention over one block of the cache |
    | `attention_combine` | the blocks' partial results (log-sum-exp) |
    | `gemv_residual` | the output projection, plus the residual |
    | `rms_gemv_swiglu` | RMSNorm, the gate and up projections and `silu(g) * u` in one pass |
    | `gemv_residual` | the down projection, plus the residual |

    and around them the embedding gather, the LM head (with the final norm and each tile's
    maximum) and the greedy `argmax`. The step's position lives in device memory, so nothing
    a launch is given changes from one token to the next, and the whole step is **one CUDA
    graph**, replayed once per token.
    '''),
    SETUP,
    md('''
    ## A tiny Qwen3, on whatever is here

    The same architecture at toy size: 2 layers, hidden size 64, 4 query heads sharing 2 KV
    heads of dimension 16, a vocabulary of 128. Random weights in the Hugging Face names
    (`Qwen3.from_checkpoint(folder)` reads a real checkpoint the same way).
    '''),
    code('''
    from cutile_lab.models import reference
    from cutile_lab.models.qwen3 import Qwen3, Qwen3Config, random_weights

    tiny = Qwen3Config(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, intermediate_size=128, vocab_size=128,
                       head_dim=16, name="tiny")
    weights = random_weights(tiny, seed=7)
    model = Qwen3(tiny, weights, dtype="f32", max_seq=32, chunk=8)
    for launch in model.launches[:8]:
        print(f"{launch.name:<14} {launch.kernel:<26} {launch.bytes:>7} bytes")
    print("...", len(model.launches), "launches per step")
    '''),
    md('''
    ## Logits against a reference

    `cutile_lab.models.reference` is the same architecture written directly in NumPy (float64,
    the whole sequence at once, no cache). Run a prompt through the model one token per step,
    keep each step's logits, and compare.
    '''),
    code('''
    prompt = [3, 14, 15, 92]
    logits = []
    tokens = model.generate(prompt, 6, logits=logits)
    ours = np.concatenate(logits)
    ref = reference.logits(tiny, weights, prompt + tokens[0].tolist()[:-1])
    err = np.abs(ours - ref).max() / np.abs(ref).max()
    print("steps:", len(logits), " logits within 1e-5 of the reference:", bool(err < 1e-5))
    print("greedy tokens:   ", tokens[0].tolist())
    print("reference greedy:", reference.greedy(tiny, weights, prompt, 6))
    '''),
    md('''
    ## One graph per step

    `model.graph()` captures the step once; every later `step()` (and `generate`) replays
    it. The KV cache's write position and the attention's length are read from a device
    scalar that the last kernel (`argmax_step`) advances, which is what lets one graph serve
    every position. On the simulator a replay re-runs the launches.
    '''),
    code('''
    graph = model.graph()
    again = model.generate(prompt, 6)
    print("the graph replays give the same tokens:", (again == tokens).all())
    '''),
    md('''
    ## Every kernel checks clean

    Each kernel of the step is in the safe subset: it stores only its own tile of each
    output, and the checker has nothing to say about it. The KV cache is partitioned into the
    blocks the attention instances own: the instance whose block holds the new position
    merges the new row in, and every instance stores its block back.

    The one `unsafe` kernel in `decode.py` is an alternative kept to measure that choice:
    `attention_decode_unsafe` writes only the one new row (`Qwen3(..., unsafe_append=True)`),
    justified in its comment; the benchmark times one against the other.
    '''),
    code('''
    from cutile_lab.kernels import decode as D

    for name in sorted({launch.kernel for launch in model.launches}):
        template = {t.kernel(dt="f32").name: t for t in (
            D.EMBED, D.RMS_GEMV, D.ATTENTION_DECODE, D.ATTENTION_COMBINE, D.GEMV_RESIDUAL,
            D.RMS_GEMV_SWIGLU, D.RMS_GEMV_ARGMAX)}.get(name)
        kernel = template.kernel(dt="f32") if template else D.ARGMAX.kernel()
        text = kernel.source.text
        print(f"{name:<26} diagnostics: {len(kernel.check())}   unsafe blocks: "
              f"{text.count('with unsafe():')}")
    unsafe = D.ATTENTION_DECODE_UNSAFE.kernel(dt="f32")
    print(f"{unsafe.name:<26} diagnostics: {len(unsafe.check())}   unsafe blocks: "
          f"{unsafe.source.text.count('with unsafe():')}  (the measured alternative)")
    '''),
    md('''
    ## The roofline of Qwen3-4B

    The bytes of a step need no GPU: every weight once (the LM head is the tied embedding
    table, read whole) and the KV cache up to the position. On an H100 SXM (3.35 TB/s):
    '''),
    code('''
    from cutile_lab.performance import lookup_device

    big = Qwen3Config.named("Qwen3-4B")
    h100 = lookup_device("NVIDIA H100 80GB HBM3")
    for context in (1, 1024, 8192):
        nbytes = big.weight_bytes(2) + big.kv_bytes(context, 2)
        print(f"context {context:>5}: {nbytes / 1e9:6.3f} GB per token -> "
              f"{h100.mem_bw / nbytes:6.1f} tokens/s at most")
    '''),
    md('''
    ## On a GPU: tokens/s and each kernel on the roofline

    With a GPU, the cell below builds Qwen3-0.6B with random weights in bf16, fills 1024
    positions of its cache, times the replayed step, then times each kind of kernel alone
    (all its launches, one per layer, in one graph: no layer finds its weights still in L2)
    and puts each on the roofline with its share of the step. `benchmarks/bench_qwen3.py`
    does the same for Qwen3-4B against PyTorch; without a GPU the cell after shows the
    results it recorded, if there are any.
    '''),
    code('''
    import time

    def kernel_table(m, step_s):
        from cutile_lab.performance import Measurement
        rows, ms = [], []
        for kind in m.kinds():
            g, n = m.graph_of(kind)
            g.replay(2)
            t0 = time.perf_counter()
            g.replay(10)
            t = (time.perf_counter() - t0) / 10 / n
            launch = next(x for x in m.launches if x.kind == kind)
            rows.append((kind, n, launch.bytes, t))
            ms.append(Measurement(name=kind, kernel=launch.kernel, precision="bf16",
                                  flops=max(launch.flops, 1), bytes=launch.bytes, seconds=t))
        return rows, ms

    if ON_GPU:
        small = Qwen3.random("Qwen3-0.6B", seed=0, dtype="bf16", max_seq=1024 + 64)
        g = small.graph()
        small.reset(np.random.default_rng(0).integers(0, small.config.vocab_size, 1024))
        g.replay(1024)
        t0 = time.perf_counter()
        g.replay(32)
        step_s = (time.perf_counter() - t0) / 32
        peaks = lookup_device(cl.device_info().name)
        roof = peaks.mem_bw / small.bytes_per_token(1040)
        print(f"Qwen3-0.6B bf16, context 1024: {1 / step_s:.0f} tokens/s, roofline "
              f"{roof:.0f} tokens/s ({100 / step_s / roof:.0f}%)")
        rows, ms = kernel_table(small, step_s)
        for kind, n, nbytes, t in rows:
            print(f"{kind:<10} x{n:<3} {nbytes / 1e6:8.2f} MB {t * 1e6:8.1f} us "
                  f"{100 * nbytes / t / peaks.mem_bw:5.0f}% of HBM  "
                  f"{100 * n * t / step_s:5.1f}% of the step")
        from cutile_lab.performance import roofline_figure
        roofline_figure(ms, peaks, title="Qwen3-0.6B decode: each kernel alone")
    else:
        print("no GPU here: the timings, the per-kernel roofline and the shares need one")
    ''', IGNORE),
    code('''
    import json
    from pathlib import Path

    recorded = sorted(Path("../benchmarks/results").glob("qwen3-*.json"))
    for path in recorded:
        r = json.loads(path.read_text())
        lab = r.get("lab", {})
        print(f"{r['model']} on {r['device']} ({r['date']}), context {r['context']}:")
        if "tokens_per_s" in lab:
            print(f"  lab: {lab['tokens_per_s']:.1f} tokens/s = {lab['pct_of_roofline']:.1f}% "
                  f"of the roofline ({r['roofline']['tokens_per_s']:.1f} tokens/s)")
        for name in ("lab_unsafe_append", "torch_eager", "torch_compile"):
            if "tokens_per_s" in r.get(name, {}):
                print(f"  {name}: {r[name]['tokens_per_s']:.1f} tokens/s")
        for k in r.get("kernels", []):
            if "seconds" in k:
                print(f"    {k['kernel']:<10} {k['pct_of_hbm']:5.1f}% of HBM "
                      f"{k['share_of_step']:5.1f}% of the step")
    if not recorded:
        print("no recorded results yet: run benchmarks/bench_qwen3.py on a GPU")
    ''', IGNORE),
    md('''
    ## What limits a step

    * **The GEMVs**: four per layer and the LM head hold almost all the bytes. Each instance
      owns a few rows of the output and streams its slice of the weight in wide tiles,
      accumulating in f32 registers; enough instances to fill every SM twice over, and a last
      wave that is nearly full (`Qwen3._tile`, swept per projection by the benchmark).
    * **Launches**: 6 kernels per layer, about 220 per step for Qwen3-4B. Inside a graph the
      gap between two kernels is small but not zero, and each kernel starts and drains; the
      fusions above (norms into the projections, SwiGLU and the residual into their GEMVs,
      q/k norm, RoPE and the cache append into attention) keep the count down.
    * **Attention** at batch 1 has one query row per head: the cache is split along the
      sequence so that every SM has a block, and a small combine merges the blocks.

    ## Recap

    * A real model's decode step from safe tile kernels: every kernel clean in the checker,
      the one `unsafe` alternative measured against the safe one.
    * Its logits match an independent reference, and its greedy tokens too.
    * The roofline of decode is bytes per token over bandwidth; each kernel's point on it, and
      its share of the step, say where the time goes.
    '''),
]


NOTEBOOKS = {
    "01-hello-tile.ipynb": lambda: NB01,
    "02-ownership.ipynb": lambda: NB02,
    "03-thinking-in-tiles.ipynb": lambda: NB03,
    "04-tensor-cores-and-the-roofline.ipynb": lambda: NB04,
    "05-pipelines.ipynb": lambda: NB05,
    "06-fused-kernels.ipynb": lambda: NB06,
    "07-puzzles.ipynb": lambda: nb07(False),
    "07-puzzles-solutions.ipynb": lambda: nb07(True),
    "09-cuda-cpp.ipynb": lambda: NB09,
    "11-qwen3-decode.ipynb": lambda: NB11,
}


# --- writing and executing ------------------------------------------------------------------------

def make_notebook(name: str, cells: list[dict]):
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    stem = name.split("-")[0] + ("s" if "solutions" in name else "")
    for i, c in enumerate(cells):
        if c["kind"] == "markdown":
            cell = nbformat.v4.new_markdown_cell(c["source"])
        else:
            cell = nbformat.v4.new_code_cell(c["source"])
            if c["tags"]:
                cell.metadata["tags"] = list(c["tags"])
        cell["id"] = f"nb{stem}-{i:03d}"      # stable ids: rebuilding does not churn them
        nb.cells.append(cell)
    return nb


def execution_env(cache_dir: str) -> dict:
    """The environment the stored outputs are made in (and the test runs in): no GPU, a fresh
    compile cache, the repository importable."""
    env = dict(os.environ)
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["CUTILE_LAB_CACHE_DIR"] = cache_dir
    env.pop("CUTILE_LAB_BACKEND", None)
    env.pop("CUTILE_LAB_NO_CACHE", None)
    root = str(HERE.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    return env


def execute(path: Path) -> float:
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(path, as_version=4)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cutile-lab-nb-cache-") as cache:
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(execution_env(cache))
        try:
            client = NotebookClient(nb, timeout=900, kernel_name="python3", record_timing=False,
                                    resources={"metadata": {"path": str(HERE)}})
            client.execute()
        finally:
            os.environ.clear()
            os.environ.update(saved)
    nbformat.write(nb, path)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--execute", action="store_true",
                    help="run the notebooks (CPU, fresh cache) and store their outputs")
    ap.add_argument("only", nargs="*", help="prefixes of the notebooks to build (default: all)")
    args = ap.parse_args(argv)
    import nbformat
    for name, cells in NOTEBOOKS.items():
        if args.only and not any(name.startswith(p) for p in args.only):
            continue
        path = HERE / name
        nb = make_notebook(name, cells())
        nbformat.validate(nb)
        nbformat.write(nb, path)
        msg = f"wrote {path.relative_to(HERE.parent)}"
        if args.execute:
            msg += f", executed in {execute(path):.1f} s"
        print(msg, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
