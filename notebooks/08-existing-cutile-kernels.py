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
# # 8 · Existing cuTile Python kernels
#
# Not every kernel starts in a `%%tilekernel` cell. Kernels already written for cuTile Python
# (`@ct.kernel`, explicit `ct.load`/`ct.store` indices, `ConstInt = ct.Constant[int]`
# aliases, `@ct.function` helpers) come into the lab **as they are written**: the lab loads
# the file the way `import` does, checks what it can prove about each kernel, compiles it,
# runs it on the CPU simulator, and on the GPU when there is one.
#
# The file `existing_kernels.py` next to this notebook knows nothing about the lab:

# %%
# %load_ext cutile_lab
# %matplotlib inline
import numpy as np

ON_GPU = cl.backend() == "gpu"
print("launches run on the", "GPU" if ON_GPU else "CPU simulator (no GPU found)")

# %%
print(open("existing_kernels.py").read())

# %% [markdown]
# ## Load
#
# `cl.load_kernels(path)` runs the file's top level as `import` would (its `if __name__ ==
# "__main__":` part excepted), so the module's aliases, constants and helpers are what the
# kernels see. A parameter is a compile-time constant when its annotation *evaluates* to
# `ct.Constant[...]`, whatever it is called.

# %%
kernels = cl.load_kernels("existing_kernels.py")
for name, k in kernels.items():
    consts = [p.name for p in k.definition.params if p.role == "const"]
    print(f"{name:13} constants: {', '.join(consts)}")

# %% [markdown]
# ## Check
#
# A plain cuTile kernel says nothing about ownership, so the checker reports what it can
# prove from the body: a store indexed by the block's own id is race-free; any other store is
# flagged at its line.

# %% tags=["nbval-ignore-output"]
from cutile_lab.diagnostics import render_text

for name, k in kernels.items():
    diags = k.check()
    print(f"{name}: {len(diags)} diagnostic(s)")
    if diags:
        print(render_text(diags))

# %% [markdown]
# ## Compile
#
# From the command line, `--arg` gives what the signature leaves open: an array's dtype and
# rank (`a=f32[?]`), a scalar's dtype (`n=i32`) and the constants' values (`TILE=256`,
# `eps=1e-6`, `causal=true`):

# %% tags=["nbval-ignore-output"]
import subprocess, sys
r = subprocess.run([sys.executable, "-m", "cutile_lab", "compile", "existing_kernels.py",
                    "--kernel", "vector_add", "--arch", "sm_90", "--arg", "a=f32[?]",
                    "--arg", "b=f32[?]", "--arg", "c=f32[?]", "--arg", "TILE=256"],
                   capture_output=True, text=True)
print(r.stdout or r.stderr)

# %% [markdown]
# The same from Python: `compile` takes the layouts of the arguments and the constants.

# %% tags=["nbval-ignore-output"]
from cutile_lab.compiling.specialization import ArrayLayout

compiled = kernels["softmax_rows"].compile(
    "sm_90", layouts={"x": ArrayLayout("f32", 2), "out": ArrayLayout("f32", 2)},
    BLOCK_N=1024)
print(compiled.tileir.splitlines()[0][:100], "...")
print("registers:", compiled.resources.get("registers"))

# %% [markdown]
# ## Run on the simulator
#
# `cl.launch(kernel, *args, grid=..., **constants)` launches a plain kernel with an explicit
# grid, exactly as `ct.launch` would. On the simulator backend every tile runs with NumPy:

# %%
rng = np.random.default_rng(8)
x = rng.standard_normal((300, 1000)).astype(np.float32)

cl.set_backend("sim")
xs, out = cl.from_numpy(x).sync(), cl.zeros((300, 1000)).sync()
cl.launch(kernels["softmax_rows"], xs, out, BLOCK_N=1024, grid=(300,)).sync()
want = np.exp(x - x.max(1, keepdims=True))
want /= want.sum(1, keepdims=True)
print("max |simulator - NumPy| =", f"{np.abs(out.to_numpy() - want).max():.1e}")

# %% [markdown]
# The simulator also sees what the GPU cannot show. The racy `total` kernel is flagged by the
# checker above; launched on the simulator, the race is found as it happens, and `.sync()`
# raises with the report (`cutile_lab.simulation.set_on_error("warn")` turns it into a
# warning):

# %% tags=["raises-exception"]
v = cl.from_numpy(rng.standard_normal(1024).astype(np.float32)).sync()
s = cl.zeros(1).sync()
cl.launch(kernels["total"], v, s, TILE=256, grid=(4,)).sync()

# %% [markdown]
# ## Run on the GPU
#
# The very same call runs on the GPU backend. With PyTorch there, the result is compared
# with `torch.softmax`:

# %% tags=["nbval-ignore-output"]
if ON_GPU:
    import torch
    cl.set_backend("gpu")
    xg, og = cl.from_numpy(x).sync(), cl.zeros((300, 1000)).sync()
    cl.launch(kernels["softmax_rows"], xg, og, BLOCK_N=1024, grid=(300,)).sync()
    ref = torch.softmax(torch.from_numpy(x).cuda(), dim=1).cpu().numpy()
    print("max |GPU - torch.softmax| =", f"{np.abs(og.to_numpy() - ref).max():.1e}")
else:
    print("no GPU here: the GPU run is skipped (the simulator ran the same kernel above)")
