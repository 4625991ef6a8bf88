"""The specialization of a launch and its compiled, loaded kernel, cached per device.

Owns ``LaunchEntry`` (one checked argument layout: consts, grid, the launch rules' verdict, which
arrays are written, the loaded plan and the packing template — what a repeated launch with the
same layout reuses, kept per kernel in ``KernelInfo.entries``), ``prepare_entry`` (the slow path
that makes one), the layouts of the arguments (dtype, rank, contiguous inner dimension, base and
stride alignment, index width: what changes the binary) and ``LaunchPlan``: a specialization
compiled through ``compile_kernel`` (itself cached in memory and on disk) and loaded, memoised
per (architecture, consts, layouts) in ``KernelInfo.plans``, as CuPy memoises a loaded function
per device.
"""
from __future__ import annotations

import threading

import numpy as np

from cutile_lab.errors import LaunchError
from cutile_lab.runtime.launch.binding import bind_consts, grid_of
from cutile_lab.runtime.launch.checks import is_mut, launch_rules, tile_grid, warn
from cutile_lab.runtime.ownership import OwnershipError
from cutile_lab.runtime.partition import Partition
from cutile_lab.runtime.tensor import Tensor

INT32_MAX = 2**31 - 1

_PLAN_LOCK = threading.RLock()

class LaunchPlan:
    """A compiled, loaded specialization: everything a cached launch needs."""

    __slots__ = ("compiled", "kernel", "block", "params", "configs", "arch", "module",
                 "function")

    def __init__(self, compiled, kernel, block, arch):
        self.compiled = compiled
        self.kernel = kernel          # cuda.core Kernel (None on the simulator)
        self.function = None          # its CUfunction as a c_void_p, once the fast path asks
        self.block = block
        self.params = compiled.params if compiled is not None else []
        self.configs: dict = {}
        self.arch = arch

    def config(self, grid):
        cfg = self.configs.get(grid)
        if cfg is None:
            from cuda.core import LaunchConfig
            cfg = self.configs[grid] = LaunchConfig(grid=grid, block=self.block)
        return cfg



class LaunchEntry:
    """One checked launch shape: what a repeated launch with the same argument layout reuses."""

    __slots__ = ("consts", "grid", "diagnostics", "arrays", "plan", "config", "template",
                 "scalars", "run", "foreign", "raw", "fresh", "words")

    def __init__(self, consts, grid, diagnostics):
        self.consts = consts
        self.grid = grid
        self.diagnostics = diagnostics
        self.arrays: list = []
        self.plan = None
        self.config = None
        self.template: list = []
        self.scalars: list = []
        self.run = all(n > 0 for n in grid)
        self.foreign = False
        self.raw = None               # gpu: the _RawLaunch (False: launch through cuda.core)
        # gpu: (template index, parameter) of a new output's pointer, written per launch: the
        # entry of a library call serves every new output of its layout (``LaunchOp._fresh``)
        self.fresh = None
        # gpu: (scalar arguments, their slots' words) of the latest launch (``gpu.launch``)
        self.words = None



def prepare_entry(op, values: dict, ctx, key) -> LaunchEntry:
    """The slow path of ``op``'s launch, once per argument layout ``key``: one backend for every
    argument, the launch-level rules, const generics, grid and (gpu) the compiled, loaded
    kernel with its packing template. The entry is kept in the kernel's ``entries``."""
    info = op.info
    for name, v in values.items():
        b = getattr(v, "backend", None)
        if b is not None and b != ctx.backend:
            raise LaunchError(
                f"`{name}` is a {b} tensor but this launch runs on the {ctx.backend} backend",
                span=op.where,
                help="create every tensor of a launch on one backend (cl.set_backend)")
    diags = launch_rules(info, values, op.where, op.explicit_consts, op.grid,
                         getattr(op.kernel, "globals", None))
    if any(d.is_error for d in diags):
        op.diagnostics = diags
        raise OwnershipError(diags)
    warn(diags)
    consts = bind_consts(info, op.explicit_consts, values)
    grid = op.grid or grid_of(values, info)
    if op.grid is not None and info.kdef.kind == "tile":
        bad = tile_grid(info, op, values)
        if bad:
            op.diagnostics = bad
            raise OwnershipError(bad)
    if grid is None:
        raise LaunchError(
            f"cannot infer the grid of `{op.label}`: no argument is a partition",
            span=op.where,
            help="pass a partition for the `Mut` output (t.partition(tile)) or grid=(...)")
    entry = LaunchEntry(consts, grid, diags)
    entry.arrays = [(name, is_mut(info, name, values[name])) for name in info.names
                    if isinstance(values.get(name), (Tensor, Partition))]
    entry.foreign = any(getattr((values[n].tensor if isinstance(values[n], Partition)
                                 else values[n]).storage, "foreign", False)
                        for n, _ in entry.arrays)
    ctx.backend.prepare_launch(op, entry, values, ctx)    # compiled, loaded, packed (gpu)
    if len(info.entries) > 256:
        info.entries.clear()
    info.entries[key] = entry
    return entry


def layouts_of(info, values: dict) -> dict:
    """Each argument's layout (``ArrayLayout`` / ``ScalarLayout``): part of the compile key."""
    from cutile_lab.compiling.specialization import ArrayLayout, ScalarLayout
    layouts = {}
    params = {p.name: p for p in info.kdef.params}
    for name, v in values.items():
        p = params[name]
        t = v.tensor if isinstance(v, Partition) else v
        if isinstance(t, Tensor):
            dtype = p.dtype.name if p.dtype is not None else t.dtype.name
            layouts[name] = ArrayLayout(dtype, t.ndim, contiguous(t), align(t.ptr),
                                        index_bits(t), stride_align(t))
        else:
            dtype = p.dtype.name if p.dtype is not None else scalar_dtype(v)
            layouts[name] = ScalarLayout(dtype)
    return layouts


def plan_for(kernel, info, values: dict, consts: dict, arch: str) -> LaunchPlan:
    """The loaded specialization of ``kernel`` for these arguments on ``arch``."""
    layouts = layouts_of(info, values)
    key = (arch, tuple(sorted(consts.items())), tuple(layouts.items()))
    plan = info.plans.get(key)
    if plan is None:
        with _PLAN_LOCK:          # threads launching the same new shape compile it once
            plan = info.plans.get(key)
            if plan is None:
                plan = _load_plan(kernel, info, key, consts, layouts, arch)
    return plan


def _load_plan(kernel, info, key, consts, layouts, arch) -> LaunchPlan:
    """Compile (cached in memory and on disk) and load one specialization."""
    from cutile_lab.compiling.driver import compile_kernel
    compiled = compile_kernel(kernel.definition, arch, consts=consts,
                              layouts=layouts, globals_=kernel.globals)
    from cuda.core import ObjectCode
    module = ObjectCode.from_cubin(compiled.cubin)
    k = module.get_kernel(compiled.symbol)
    block = compiled.max_threads_per_block
    if not block:
        block = k.attributes.max_threads_per_block()
    plan = info.plans[key] = LaunchPlan(compiled, k, int(block), arch)
    plan.module = module                   # keeps the module loaded
    return plan


def contiguous(t: Tensor) -> bool:
    return t.ndim == 0 or t.strides[-1] == 1


def align(ptr: int) -> int:
    if ptr == 0:
        return 16
    low = ptr & -ptr
    return 16 if low >= 16 else low


def stride_align(t: Tensor) -> int:
    """Bytes (up to 16) every stride but a unit innermost one is divisible by: what lets the
    compiler use TMA on 2-D and higher tiles; claiming more than is true would be unsound."""
    align = 16
    strides = t.strides[:-1] if contiguous(t) else t.strides
    for stride in strides:
        b = abs(stride) * t.dtype.itemsize
        if b:
            align = min(align, b & -b)
    return align


def index_bits(t: Tensor) -> int:
    if t.size == 0:
        return 32
    far = sum((n - 1) * s for n, s in zip(t.shape, t.strides))
    if far > INT32_MAX or any(n > INT32_MAX for n in t.shape) \
            or any(s > INT32_MAX for s in t.strides):
        return 64
    return 32


def scalar_dtype(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, np.generic):
        from cutile_lab.runtime.dtypes import as_dtype
        return as_dtype(v.dtype).name
    if isinstance(v, int):
        return "i32" if -2**31 <= v <= INT32_MAX else "i64"
    if isinstance(v, float):
        return "f32"
    raise LaunchError(f"cannot pass {type(v).__name__} as a scalar")



__all__ = ["LaunchPlan", "LaunchEntry", "prepare_entry", "plan_for", "layouts_of", "contiguous",
           "align", "stride_align", "index_bits", "scalar_dtype"]
