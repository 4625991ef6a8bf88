"""Packing a launch's arguments in the calling convention (cutile_python_v1) and handing them to
the driver: the packing template of a cached launch (arrays fixed by the entry's key, scalars
filled in per launch), ``pack_args`` for a one-off, the ``driver.RawLaunch`` of an entry (the
ctypes ``cuLaunchKernel`` with the parameters packed once) and the ``cuda.core.launch`` path
(``launch_core``: while a graph is captured, for foreign memory, wherever ctypes cannot be
used). Knows nothing of ownership: the checks (``checks``) ran before anything here is called.
"""
from __future__ import annotations

import numpy as np

from cutile_lab.runtime import driver
from cutile_lab.runtime import ownership
from cutile_lab.runtime.dtypes import scalar_value
from cutile_lab.runtime.launch.binding import pad3
from cutile_lab.runtime.partition import Partition

_CORE_LAUNCH: list = [None]


def core_launch(*args):
    """``cuda.core.launch(*args)`` (imported on first use: cuda.core needs a driver)."""
    launch = _CORE_LAUNCH[0]
    if launch is None:
        from cuda.core import launch
        _CORE_LAUNCH[0] = launch
    return launch(*args)


def raw_launch(plan, entry):
    """The entry's RawLaunch, or False where one cannot be had (then ``cuda.core.launch``
    launches it)."""
    raw, plan.function = driver.raw_launch(plan.kernel, pad3(entry.grid), plan.block,
                                           entry.template, plan.function)
    entry.raw = raw
    return raw


def launch_core(values, entry, ctx, args=None):
    """Launch ``entry`` through ``cuda.core.launch`` on ``ctx``'s stream; returns the packed
    arguments (for reuse). Foreign memory is ordered after its producer's stream first."""
    plan = entry.plan
    if args is None:
        if entry.scalars or entry.fresh is not None:
            args = list(entry.template)
            for i, name, dtype in entry.scalars:
                args[i] = scalar_value(values[name], dtype)
            if entry.fresh is not None:
                i, name = entry.fresh
                args[i] = values[name].tensor.ptr
        else:
            args = entry.template
    stream = ctx.stream
    if entry.foreign:
        for name, _ in entry.arrays:
            v = values[name]
            st = (v.tensor if type(v) is Partition else v).storage
            if getattr(st, "ready", None) is not None:
                ownership.wait_ready(st, stream, capturing=ctx.capture is not None)
    core_launch(stream, entry.config, plan.kernel, *args)
    if ctx.capture is not None:
        ctx.capture.kernels += 1
    return args


def pack_args(params, values) -> list:
    """Kernel arguments in calling-convention order (cutile_python_v1): for an array its pointer
    (a Python int: cuda.core passes ints as 64-bit pointers), then each extent, then each stride
    in elements, as int32 (int64 when the layout has 64-bit indices); a scalar as a NumPy scalar of
    exactly its dtype's width (a Python float would be passed as a double)."""
    out, scalars = pack_template(params, values)
    for index, name, dtype in scalars:
        out[index] = scalar_value(values[name], dtype)
    return out


def pointer_index(params, values, name: str) -> int:
    """Where the array ``name``'s pointer sits in ``pack_template(params, values)``."""
    index = 0
    for p in params:
        if p.name == name:
            return index
        if p.kind == "array":
            v = values[p.name]
            index += 1 + 2 * (v.tensor if isinstance(v, Partition) else v).ndim
        else:
            index += 1
    raise KeyError(name)


def pack_template(params, values) -> tuple[list, list]:
    """``pack_args`` for a cached launch: the arrays' part is fixed by the cache key, scalars
    are filled in per launch. Returns (template, [(index, name, dtype)])."""
    from cutile_lab.language.dtypes import DTYPES
    template, scalars = [], []
    for p in params:
        v = values[p.name]
        if p.kind == "array":
            t = v.tensor if isinstance(v, Partition) else v
            it = np.int64 if p.index_bits == 64 else np.int32
            template.append(t.ptr)
            template.extend(it(n) for n in t.shape)
            template.extend(it(s) for s in t.strides)
        else:
            scalars.append((len(template), p.name, DTYPES[p.dtype]))
            template.append(None)
    return template, scalars



__all__ = ["pack_args", "pack_template", "pointer_index", "raw_launch", "launch_core", "core_launch"]
