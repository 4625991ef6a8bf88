"""Binding a launch's arguments to the kernel's parameters: what is known per kernel
(``KernelInfo``: parameter names, roles, const parameters — computed once per kernel and kept on
it), the arguments bound by name (``bind_arguments``, with the checker's wording of a bad call),
the const generics (``bind_consts``: explicit ones, the partition's tile shape, the actual dims of
shared tensors) and the grid (``grid_of``: tiles per axis of the ``Mut`` partition, one axis in
grouped tile order, one instance per SM for a persistent schedule).

Owns nothing that talks to a device or checks ownership; the op (``op``) calls these once per
argument layout, their results are kept in the launch's entry (``plan.LaunchEntry``).
"""
from __future__ import annotations

import numpy as np

from cutile_lab.errors import LaunchError
from cutile_lab.runtime.backend import GPU, backend_object
from cutile_lab.runtime.backend import backend as current_backend
from cutile_lab.runtime.callsite import as_span, user_call_site
from cutile_lab.runtime.ops import DeviceOp
from cutile_lab.runtime.ownership import OwnershipError
from cutile_lab.runtime.partition import Partition
from cutile_lab.runtime.tensor import Tensor

def _const_params(kdef) -> set[str]:
    # plain cuTile kernels too: language.constants marks them by what the annotation evaluates to
    return {p.name for p in kdef.params if p.role == "const"}


class KernelInfo:
    """What a launch needs to know about a kernel, computed once per kernel."""

    __slots__ = ("kdef", "name", "names", "consts", "generics", "checked", "plans", "roles",
                 "entries", "recent", "bindings", "tensor_mut")

    def __init__(self, kernel):
        kdef = kernel.definition
        self.kdef = kdef
        self.name = kdef.name
        self.names = [p.name for p in kdef.params]
        self.consts = _const_params(kdef)
        self.generics = set(kdef.const_generics)
        self.roles = {p.name: ("const" if p.name in self.consts else p.role)
                      for p in kdef.params}
        self.checked = False
        self.plans: dict = {}
        self.entries: dict = {}     # argument layout -> _Entry (checked, specialized, packed)
        # (number of positional arguments, keyword names) -> (the parameters bound by position,
        # the keywords that bind parameters): the calls ``bind_arguments`` found right
        self.bindings: dict = {}
        # a weak reference to the _ReusableStart of the latest launch built from positional arguments:
        # a new op of the very same argument objects reuses it (it lives while an op or
        # in-flight work holds it)
        self.recent = None
        # parameter name -> whether a tensor (not a partition) passed as it is written: what
        # ``checks.is_mut`` says, asked once per kernel (``checks.tensor_mut``)
        self.tensor_mut = None


def kernel_info(kernel) -> KernelInfo:
    """The kernel's ``KernelInfo`` (made again when its definition was replaced)."""
    info = kernel.__dict__.get("_launch_info")
    if info is None or info.kdef is not kernel.definition:
        info = KernelInfo(kernel)
        kernel.__dict__["_launch_info"] = info
    return info



# a plain argument: passed as it is (tensors and partitions are tested by exact type first)
SCALARS = (bool, int, float, np.generic)
PLAIN_SCALARS = frozenset((bool, int, float))     # the exact types tested first


def bind_arguments(info: KernelInfo, args, kwargs, where) -> tuple[dict, dict]:
    """(parameter name -> argument, const name -> value) of ``kernel(*args, **kwargs)``; a call
    that does not fit the signature raises ``OwnershipError`` with the checker's diagnostics at
    ``where`` (the call's ``user_site``, made a ``Span`` only then)."""
    names = info.names
    if not kwargs and not info.consts and len(args) == len(names):
        return dict(zip(names, args)), {}
    shape = (len(args), tuple(kwargs))       # how the call binds depends on this alone
    split = info.bindings.get(shape)
    if split is not None:                    # a binding seen before, and found right
        positional, keywords = split
        bound = dict(zip(positional, args))
        consts = {}
        for k, v in kwargs.items():
            if k in keywords:
                bound[k] = v
            else:
                consts[k] = v
        for name in list(bound):
            if name in info.consts:
                consts[name] = bound.pop(name)
        return bound, consts
    bound: dict = {}
    given = list(names[:len(args)])
    for name, a in zip(names, args):
        bound[name] = a
    consts: dict = {}
    for k, v in kwargs.items():
        if k in info.generics and k not in names:
            consts[k] = v
        else:
            given.append(k)
            bound.setdefault(k, v)
    for name in list(bound):
        if name in info.consts:
            consts[name] = bound.pop(name)
    missing = [p.name for p in info.kdef.params if p.name not in bound
               and p.name not in consts and p.name not in info.consts]
    if missing or len(given) != len(set(given)) or len(args) > len(names) \
            or any(k not in names for k in kwargs if k not in info.generics):
        from cutile_lab.checking.launch_rules import argument_problems
        diags = argument_problems(info.kdef, [g for g in given if g not in info.generics],
                                  as_span(where),
                                  extra_positional=max(0, len(args) - len(names)))
        if diags:
            raise OwnershipError(diags)
    elif len(given) == len(set(given)):
        # remembered: which positions and keywords bind parameters (the rest are consts)
        if len(info.bindings) > 64:
            info.bindings.clear()
        info.bindings[shape] = (names[:len(args)],
                                frozenset(k for k in kwargs
                                          if not (k in info.generics and k not in names)))
    return bound, consts


def bind_consts(info: KernelInfo, explicit: dict, values: dict) -> dict:
    """The const generics of a launch: ``explicit`` ones, then names of the partitions' tile
    shapes, then shape names of shared tensors from their actual dims."""
    consts = dict(explicit)
    params = {p.name: p for p in info.kdef.params}
    for name, v in values.items():
        if isinstance(v, Partition):
            p = params[name]
            for d, n in zip(p.shape, v.tile_shape):
                if isinstance(d, str):
                    consts.setdefault(d, n)
    for name, v in values.items():
        if isinstance(v, Tensor):
            p = params[name]
            for d, n in zip(p.shape, v.shape):
                if isinstance(d, str) and d not in consts:
                    consts[d] = n
    for k, v in consts.items():
        if isinstance(v, (np.integer,)):
            consts[k] = int(v)
    return consts

def as_arg(v):
    """A launch argument as the runtime handles it: Tensor, Partition or scalar."""
    if isinstance(v, (Tensor, Partition)):
        return v
    if isinstance(v, (bool, int, float, np.generic)):
        return v
    if hasattr(v, "__cuda_array_interface__") or hasattr(v, "__dlpack__") \
            or isinstance(v, np.ndarray):
        from cutile_lab.runtime.creation import asarray
        return asarray(v)
    raise LaunchError(f"cannot pass {type(v).__name__} to a kernel",
                      help="pass cutile_lab tensors and partitions, torch/CuPy/JAX arrays, or "
                           "numbers")


def backend_of(values) -> str | None:
    for v in values:
        t = type(v)
        if t is Tensor:
            return v.storage.backend
        if t is Partition:
            return v.tensor.storage.backend
        if isinstance(v, DeviceOp) and v.backend:
            return v.backend
        if hasattr(v, "__cuda_array_interface__") or (
                hasattr(v, "is_cuda") and getattr(v, "is_cuda", False)):
            return GPU
    return None


def plain_backend(values) -> tuple:
    """(backend, plain) of a launch's arguments: the backend of the first tensor or partition
    and True when every argument is a tensor, a partition or a number (passed as it is); else
    ``backend_of(values)`` and False (some argument must be resolved when the launch starts)."""
    backend = None
    for v in values:
        t = type(v)
        if t is Tensor:
            if backend is None:
                backend = v.storage.backend
        elif t is Partition:
            if backend is None:
                backend = v.tensor.storage.backend
        elif t not in PLAIN_SCALARS and not isinstance(v, SCALARS):
            return backend_of(values), False
    return backend, True


def normalize_grid(grid) -> tuple[int, ...]:
    if isinstance(grid, (int, np.integer)):
        grid = (grid,)
    if not isinstance(grid, (tuple, list)) \
            or not all(isinstance(g, (int, np.integer)) and not isinstance(g, bool) for g in grid):
        raise LaunchError(f"bad grid {grid!r}: one to three non-negative integer sizes",
                          span=user_call_site(), help="e.g. grid=8 or grid=(8, 4); or leave grid out: a partition's "
                               "tiles give it")
    grid = tuple(int(g) for g in grid)
    if not 1 <= len(grid) <= 3 or any(g < 0 for g in grid):
        raise LaunchError(f"bad grid {grid}: one to three non-negative sizes",
                          span=user_call_site(), help="e.g. grid=8 or grid=(8, 4); or leave grid out: a partition's "
                               "tiles give it")
    return grid


def pad3(grid) -> tuple[int, int, int]:
    return tuple(grid) + (1,) * (3 - len(grid))


def grid_of(values, info) -> tuple[int, ...] | None:
    """Tiles per axis of the ``Mut`` partition; one axis of all of them for a kernel in grouped
    tile order (it maps the launch index back to a tile itself); for a persistent schedule, one
    instance per SM (times the occupancy hint; per cluster of SMs with ``num_ctas``), each
    looping over its share of the tiles (the backend's ``grid_instances``)."""
    from cutile_lab.compiling.lowering import is_persistent, tile_order
    for name in info.names:
        v = values.get(name)
        if isinstance(v, Partition):
            if is_persistent(info.kdef):
                tiles = int(np.prod(v.grid))
                where = backend_object(backend_of(values.values()) or current_backend())
                return (where.grid_instances(tiles, info.kdef),)
            if tile_order(info.kdef) is not None:
                return (int(np.prod(v.grid)),)
            return v.grid
    return None


__all__ = ["KernelInfo", "kernel_info", "bind_arguments", "bind_consts", "as_arg", "backend_of",
           "normalize_grid", "pad3", "grid_of", "plain_backend", "SCALARS", "PLAIN_SCALARS"]
