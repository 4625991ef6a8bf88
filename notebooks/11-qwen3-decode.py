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
# # 11 · A Qwen3 decode step at the HBM roofline
#
# Generating one token with a language model at batch 1 multiplies every weight matrix by
# *one* vector. Each weight is read once and used for one multiply-add: about one flop per
# byte, two orders of magnitude under an H100's ridge point. So the speed of decode is set
# by bytes, and its ceiling is simple to write down:
#
# $$\text{tokens/s} \le \frac{\text{HBM bandwidth}}{\text{bytes of weights} + \text{bytes of KV cache read per token}}$$
#
# `cutile_lab.models.qwen3` builds the Qwen3 decoder (RMSNorm, rotary embeddings,
# grouped-query attention with q/k norms, SwiGLU MLP) from the lab's safe kernels
# (`cutile_lab.kernels.decode`), six per layer:
#
# | kernel | what it fuses |
# | --- | --- |
# | `rms_gemv` | RMSNorm of the residual stream, then the q, k and v projections as one GEMV |
# | `attention_decode` | q/k RMSNorm, RoPE, the new key and value into the KV cache, attention over one block of the cache |
# | `attention_combine` | the blocks' partial results (log-sum-exp) |
# | `gemv_residual` | the output projection, plus the residual |
# | `rms_gemv_swiglu` | RMSNorm, the gate and up projections and `silu(g) * u` in one pass |
# | `gemv_residual` | the down projection, plus the residual |
#
# and around them the embedding gather, the LM head (with the final norm and each tile's
# maximum) and the greedy `argmax`. The step's position lives in device memory, so nothing
# a launch is given changes from one token to the next, and the whole step is **one CUDA
# graph**, replayed once per token.

# %%
# %load_ext cutile_lab
# %matplotlib inline
import numpy as np

ON_GPU = cl.backend() == "gpu"
print("launches run on the", "GPU" if ON_GPU else "CPU simulator (no GPU found)")

# %% [markdown]
# ## A tiny Qwen3, on whatever is here
#
# The same architecture at toy size: 2 layers, hidden size 64, 4 query heads sharing 2 KV
# heads of dimension 16, a vocabulary of 128. Random weights in the Hugging Face names
# (`Qwen3.from_checkpoint(folder)` reads a real checkpoint the same way).

# %%
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

# %% [markdown]
# ## Logits against a reference
#
# `cutile_lab.models.reference` is the same architecture written directly in NumPy (float64,
# the whole sequence at once, no cache). Run a prompt through the model one token per step,
# keep each step's logits, and compare.

# %%
prompt = [3, 14, 15, 92]
logits = []
tokens = model.generate(prompt, 6, logits=logits)
ours = np.concatenate(logits)
ref = reference.logits(tiny, weights, prompt + tokens[0].tolist()[:-1])
err = np.abs(ours - ref).max() / np.abs(ref).max()
print("steps:", len(logits), " logits within 1e-5 of the reference:", bool(err < 1e-5))
print("greedy tokens:   ", tokens[0].tolist())
print("reference greedy:", reference.greedy(tiny, weights, prompt, 6))

# %% [markdown]
# ## One graph per step
#
# `model.graph()` captures the step once; every later `step()` (and `generate`) replays
# it. The KV cache's write position and the attention's length are read from a device
# scalar that the last kernel (`argmax_step`) advances, which is what lets one graph serve
# every position. On the simulator a replay re-runs the launches.

# %%
graph = model.graph()
again = model.generate(prompt, 6)
print("the graph replays give the same tokens:", (again == tokens).all())

# %% [markdown]
# ## Every kernel checks clean
#
# Each kernel of the step is in the safe subset: it stores only its own tile of each
# output, and the checker has nothing to say about it. The KV cache is partitioned into the
# blocks the attention instances own: the instance whose block holds the new position
# merges the new row in, and every instance stores its block back.
#
# The one `unsafe` kernel in `decode.py` is an alternative kept to measure that choice:
# `attention_decode_unsafe` writes only the one new row (`Qwen3(..., unsafe_append=True)`),
# justified in its comment; the benchmark times one against the other.

# %%
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

# %% [markdown]
# ## The roofline of Qwen3-4B
#
# The bytes of a step need no GPU: every weight once (the LM head is the tied embedding
# table, read whole) and the KV cache up to the position. On an H100 SXM (3.35 TB/s):

# %%
from cutile_lab.performance import lookup_device

big = Qwen3Config.named("Qwen3-4B")
h100 = lookup_device("NVIDIA H100 80GB HBM3")
for context in (1, 1024, 8192):
    nbytes = big.weight_bytes(2) + big.kv_bytes(context, 2)
    print(f"context {context:>5}: {nbytes / 1e9:6.3f} GB per token -> "
          f"{h100.mem_bw / nbytes:6.1f} tokens/s at most")

# %% [markdown]
# ## On a GPU: tokens/s and each kernel on the roofline
#
# With a GPU, the cell below builds Qwen3-0.6B with random weights in bf16, fills 1024
# positions of its cache, times the replayed step, then times each kind of kernel alone
# (all its launches, one per layer, in one graph: no layer finds its weights still in L2)
# and puts each on the roofline with its share of the step. `benchmarks/bench_qwen3.py`
# does the same for Qwen3-4B against PyTorch; without a GPU the cell after shows the
# results it recorded, if there are any.

# %% tags=["nbval-ignore-output"]
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

# %% tags=["nbval-ignore-output"]
import json

from recorded import RESULTS        # a checkout's benchmarks/results, or the shipped copy

recorded = sorted(RESULTS.glob("qwen3-*.json"))
for path in recorded:
    r = json.loads(path.read_text())
    if "roofline" not in r:         # the GEMV tile grids and --explore tries: benchmarks/NOTES.md
        continue
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

# %% [markdown]
# ## Tuning the GEMVs, per device
#
# The GEMVs carry almost every byte of a step, and how fast one streams its weight depends on
# its tile: the rows an instance owns (`BM`), the width of a load (`BK`) and how many
# instances share an SM (the `occupancy` hint). The best choice differs between two cards of
# one architecture, so the model keeps what a sweep measured on each device:
# `python benchmarks/bench_qwen3.py --store-tiles` times a few tiles per projection on the GPU
# and stores the fastest in `cutile_lab/kernels/tuned.json`, under the device's name and
# bandwidth and the projection's shape. `Qwen3.measured_tile` reads them back on that device
# (at batch 1); anywhere else a rule sizes the tiles — here, on the simulator, the rule:

# %%
print("measured qkv tile here:", model.measured_tile("qkv"))      # None: the rule sizes it

# %% [markdown]
# What the devices that were swept have stored (the file grows with every device a sweep
# runs on):

# %% tags=["nbval-ignore-output"]
from cutile_lab.kernels.tuning import stored

for device, families in stored().items():
    tiles = families.get("gemv", {})
    if tiles:
        print(f"{device}: {len(tiles)} projections measured, e.g.")
        for variant in sorted(tiles)[:5]:
            t = tiles[variant]
            print(f"  {variant:<22} BM={t['BM']:<3} BK={t['BK']:<5} occupancy={t['occupancy']}")

# %% [markdown]
# What the sweep is up against: the recorded grids time each projection of Qwen3-4B over
# many tiles, beside cuBLAS on the same shape (`F.linear` of one row, every layer's weight in
# one CUDA graph). With the right tile the lab's safe GEMV matches or beats it; the rule's
# tile on the same card can be half as fast.

# %% tags=["nbval-ignore-output"]
for path in sorted(RESULTS.glob("qwen3-gemv-grid*.json")):
    grid = json.loads(path.read_text())
    print(f"{path.name}: {grid['device']} ({grid['date']})")
    kinds: dict = {}
    for t in grid["tries"]:
        if "seconds" in t:
            kinds.setdefault(t["kernel"], []).append(t)
    for kind, tries in kinds.items():
        ref = next((t for t in tries if t.get("what")), None)
        tiles = sorted((t for t in tries if "BM" in t), key=lambda t: t["seconds"])
        if not tiles:
            continue
        best, worst = tiles[0], tiles[-1]
        vendor = f"cuBLAS {ref['seconds'] * 1e6:5.1f} us" if ref else "cuBLAS not timed"
        print(f"  {kind:<8} {vendor}; {len(tiles)} tiles from {worst['seconds'] * 1e6:5.1f} "
              f"to {best['seconds'] * 1e6:5.1f} us (best {best['BM']}x{best['BK']}, "
              f"occupancy {best['occupancy']}: {best['pct_of_hbm']:.0f}% of HBM)")

# %% [markdown]
# ## What limits a step
#
# * **The GEMVs**: four per layer and the LM head hold almost all the bytes. Each instance
#   owns a few rows of the output and streams its slice of the weight in wide tiles,
#   accumulating in f32 registers, in tiles measured per device (above). What is left is
#   each launch's ramp and tail, ~3 us a GEMV: weights already in L2 save only part of it,
#   and cutting along K too does not help (`benchmarks/NOTES.md`).
# * **Launches**: 6 kernels per layer, about 220 per step for Qwen3-4B. Inside a graph the
#   gap between two kernels is small but not zero, and each kernel starts and drains; the
#   fusions above (norms into the projections, SwiGLU and the residual into their GEMVs,
#   q/k norm, RoPE and the cache append into attention) keep the count down.
# * **Attention** at batch 1 has one query row per head: the cache is split along the
#   sequence so that every SM has a block, and a small combine merges the blocks.
#
# ## Recap
#
# * A real model's decode step from safe tile kernels: every kernel clean in the checker,
#   the one `unsafe` alternative measured against the safe one.
# * Its logits match an independent reference, and its greedy tokens too.
# * The roofline of decode is bytes per token over bandwidth; each kernel's point on it, and
#   its share of the step, say where the time goes.
