"""The arguments of a simulated launch: binding them (and the const generics) to the lowered
kernel's parameters, checking them against a tile-language kernel's signature (dtype, rank, tile
shapes, the grid the partitions infer), turning them into what the kernel sees (``SimArray``s
over the caller's arrays, written in place, and 0-d tiles for scalars), and one recording tracker
per distinct memory.
"""
from __future__ import annotations

import ast
from typing import Any, Mapping, Sequence

import numpy as np

from cutile_lab.diagnostics import Diagnostic
from cutile_lab.errors import SimulationError
from cutile_lab.simulation import dtypes as D
from cutile_lab.simulation.memory import SimArray, Tracker
from cutile_lab.simulation.tiles import Tile


def grid_of(grid) -> tuple[int, ...]:
    g = (grid,) if isinstance(grid, (int, np.integer)) else tuple(grid)
    if not 1 <= len(g) <= 3 or any(isinstance(n, bool) or not isinstance(n, (int, np.integer))
                                   or n < 1 for n in g):
        raise SimulationError(f"the grid must be 1 to 3 positive integers, got {grid!r}",
                              help="e.g. grid=(8,) or grid=(4, 4)")
    return tuple(int(n) for n in g)


def _user_params(kdef, lowered) -> tuple[list[str], set[str]]:
    """(declared parameter names in order, the const ones among them and the implicit ones)."""
    if kdef.kind == "cutile":
        return list(lowered.param_names), set(lowered.const_params)
    declared = [p.name for p in kdef.params]
    return declared, set(lowered.const_params)


def bind_arguments(kdef, lowered, args: Sequence, consts: Mapping[str, int] | None):
    declared, const_names = _user_params(kdef, lowered)
    runtime = [n for n in declared if n not in const_names]
    consts = dict(consts or {})
    args = list(args)
    if len(args) == len(runtime):
        by_name = dict(zip(runtime, args))
    elif len(args) == len(declared) and len(declared) != len(runtime):
        by_name = dict(zip(declared, args))
        for n in declared:
            if n in const_names:
                if n in consts and consts[n] != by_name[n]:
                    raise SimulationError(f"const `{n}` is given twice ({by_name[n]!r} and "
                                          f"{consts[n]!r})", span=kdef.span)
                consts[n] = by_name.pop(n)
    else:
        raise SimulationError(
            f"`{kdef.name}` takes {len(runtime)} argument(s) ({', '.join(runtime) or 'none'}), "
            f"got {len(args)}", span=kdef.span,
            help="pass arrays and scalars in the kernel's parameter order; const generics go in "
                 "consts={...}" + (f" ({', '.join(sorted(const_names))})" if const_names
                                      else ""))
    unknown = sorted(set(consts) - const_names)
    if unknown:
        raise SimulationError(
            f"`{kdef.name}` has no const generic named {', '.join(f'`{u}`' for u in unknown)}",
            span=kdef.span, help=f"its const generics are: "
                                 f"{', '.join(sorted(const_names)) or 'none'}")
    bound_consts: dict[str, Any] = {}
    missing = []
    for n in lowered.param_names:
        if n not in const_names:
            continue
        if n in consts:
            v = consts[n]
        else:
            p = kdef.param(n) if kdef.kind == "tile" else None
            default = p.default if p is not None else _cutile_default(kdef, n)
            if default is None:
                missing.append(n)
                continue
            v = default
        if kdef.kind == "tile" and (isinstance(v, bool) or not isinstance(v, (int, np.integer))):
            raise SimulationError(f"const generic `{n}` must be an integer, got {v!r}",
                                  span=kdef.span, help=f"e.g. consts={{'{n}': 128}}")
        bound_consts[n] = int(v) if isinstance(v, np.integer) else v
    if missing:
        raise SimulationError(
            f"`{kdef.name}` needs a value for {', '.join(f'`{m}`' for m in missing)}",
            span=kdef.span,
            help="give it in consts, e.g. consts={" + ", ".join(f"'{m}': 128" for m in missing)
                 + "} (a GPU launch binds tile shapes from the output's partition)")
    return by_name, bound_consts


def _cutile_default(kdef, name):
    a = kdef.node.args
    defaults = [None] * (len(a.args) - len(a.defaults)) + list(a.defaults)
    for arg, d in zip(a.args, defaults):
        if arg.arg == name and d is not None:
            try:
                return ast.literal_eval(d)
            except ValueError:
                return None
    return None


def _scalar_value(name: str, v, dtype: D.SimDType | None, span) -> Tile:
    if isinstance(v, Tile):
        return v
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    if dtype is None:          # plain cuTile kernel: infer as cuTile's launcher does
        if isinstance(v, np.generic):
            d = D.of_numpy(v.dtype)
            if d is None:
                raise SimulationError(f"argument `{name}`: unsupported scalar type {v.dtype}",
                                      span=span)
            return Tile(np.asarray(v), d)
        if isinstance(v, (bool, int, float)):
            d = D.constant_dtype(v) if not isinstance(v, float) else D.float32
            return Tile(np.asarray(v, dtype=d.np), d)
        raise SimulationError(f"argument `{name}` must be an array or a number, got "
                              f"{type(v).__name__}", span=span)
    if not isinstance(v, (bool, int, float, np.generic)):
        raise SimulationError(f"argument `{name}` is a {dtype.short} scalar, got "
                              f"{type(v).__name__}", span=span)
    if dtype.category == D.INT:
        if isinstance(v, (float, np.floating)):
            raise SimulationError(f"argument `{name}` is an integer ({dtype.short}), got {v!r}",
                                  span=span)
        lo, hi = D.int_range(dtype)
        if not lo <= int(v) <= hi:
            raise SimulationError(f"argument `{name}` = {v} is out of range of {dtype.short}",
                                  span=span)
        v = int(v)
    if isinstance(v, np.generic):
        v = v.item()
    return Tile(np.asarray(D.convert(v, None, dtype)), dtype)


def _array_value(name, v, param, span) -> np.ndarray:
    if param is not None and param.role == "mut":
        if not isinstance(v, np.ndarray):
            raise SimulationError(f"argument `{name}` is an output: pass a NumPy array (it is "
                                  f"written in place), got {type(v).__name__}", span=span)
        if not v.flags.writeable:
            raise SimulationError(f"argument `{name}` is an output but its array is read-only",
                                  span=span)
        return v
    if isinstance(v, np.ndarray):
        return v
    if hasattr(v, "__array__") or isinstance(v, (list, tuple)):
        return np.asarray(v)
    raise SimulationError(f"argument `{name}` must be a NumPy array, got {type(v).__name__}",
                          span=span)


def _check_tile_kernel_array(kdef, p, a: np.ndarray, consts: dict, grid, diags: list) -> None:
    want = p.dtype
    got = D.of_numpy(a.dtype)
    if want is not None and (got is None or got.name != want.cutile and
                             not (want.name == "tf32" and got is D.float32)):
        raise SimulationError(
            f"argument `{p.name}` has dtype {a.dtype}, but the kernel declares {want.name}",
            span=p.span, help=f"convert it, e.g. `{p.name}.astype(np.{want.numpy})`"
            if want.numpy in ("float16", "float32", "float64", "int32", "int64") else None)
    if a.ndim != len(p.shape):
        raise SimulationError(
            f"argument `{p.name}` has {a.ndim} dimension(s), but the kernel declares "
            f"{len(p.shape)} ({', '.join('?' if d is None else str(d) for d in p.shape)})",
            span=p.span)
    if p.role == "mut":
        tile = []
        for d in p.shape:
            n = consts.get(d, d) if isinstance(d, str) else d
            if not isinstance(n, int) or n <= 0 or n & (n - 1):
                raise SimulationError(
                    f"the tile shape of `{p.name}` is {tuple(consts.get(x, x) for x in p.shape)}:"
                    f" dimension {d}={n} is not a power of two", span=p.span,
                    help="tile dimensions must be powers of two, e.g. 64, 128, 256")
            tile.append(n)
        inferred = tuple(-(-s // t) for s, t in zip(a.shape, tile))
        from cutile_lab.compiling import lowering
        if getattr(lowering, "tile_order", lambda _k: None)(kdef) is not None:
            inferred = (int(np.prod(inferred)),)      # grouped tile order: a 1-D launch
        if tuple(grid) != inferred:
            diags.append(Diagnostic(
                "SIM030", "note",
                f"the grid {tuple(grid)} is not the one the partition of `{p.name}` (shape "
                f"{a.shape}, tiles {tuple(tile)}) infers: {inferred}", p.span,
                help="a launch on the GPU infers the grid from the Mut outputs' partitions"))
    else:
        for i, d in enumerate(p.shape):
            n = consts.get(d) if isinstance(d, str) else d
            if isinstance(n, int) and a.shape[i] != n:
                raise SimulationError(
                    f"argument `{p.name}` has shape {a.shape}, but the kernel declares "
                    f"dimension {i} to be {d}" + (f" = {n}" if isinstance(d, str) else ""),
                    span=p.span)


def _trackers(names_arrays: list[tuple[str, np.ndarray]]) -> dict[str, Tracker]:
    """One tracker per distinct memory: two arguments that are the same array share one."""
    out: dict[str, Tracker] = {}
    seen: list[tuple[tuple, Tracker]] = []
    for name, a in names_arrays:
        ident = (a.__array_interface__["data"][0], a.shape, a.strides, a.dtype.str)
        tr = next((t for i, t in seen if i == ident), None)
        if tr is None:
            tr = Tracker(name, a.shape)
            seen.append((ident, tr))
        else:
            tr.names.append(name)
        out[name] = tr
    return out


def kernel_arguments(kdef, by_name: dict, bound_consts: dict, grid: tuple[int, ...], launch,
                     record: bool, diags: list):
    """(arrays as (name, ndarray), every parameter's value as the kernel sees it, trackers by
    argument name) for the bound arguments; notes about them go to ``diags``."""
    arrays: list[tuple[str, np.ndarray]] = []
    values: dict[str, Any] = {}
    for name, v in by_name.items():
        p = kdef.param(name) if kdef.kind == "tile" else None
        span = p.span if p is not None else kdef.span
        is_array = p.is_array if p is not None else (
            isinstance(v, np.ndarray) and v.ndim > 0 or isinstance(v, (list, tuple)))
        if is_array:
            a = _array_value(name, v, p, span)
            if D.of_numpy(a.dtype) is None:
                raise SimulationError(f"argument `{name}` has dtype {a.dtype}, which cuTile "
                                      "does not have", span=span)
            if p is not None:
                _check_tile_kernel_array(kdef, p, a, bound_consts, grid, diags)
            arrays.append((name, a))
        else:
            sd = D.as_dtype(p.dtype) if p is not None and p.dtype is not None else None
            values[name] = _scalar_value(name, v, sd, span)
    trackers = _trackers(arrays) if record else {}
    if record:
        diags.extend(_overlap_notes(kdef, arrays, trackers))
    for name, a in arrays:
        values[name] = SimArray(a, D.of_numpy(a.dtype), name, trackers.get(name), (),
                                launch.memory)
    values.update(bound_consts)
    return arrays, values, trackers


def _overlap_notes(kdef, arrays: list, trackers: dict) -> list[Diagnostic]:
    """SIM040 for two arguments over overlapping (not identical) memory: recorded apart."""
    notes = []
    noted: set = set()
    for i, (n1, a1) in enumerate(arrays):
        for n2, a2 in arrays[i + 1:]:
            if trackers[n1] is trackers[n2]:
                continue
            pair = frozenset((id(trackers[n1]), id(trackers[n2])))
            if pair not in noted and np.may_share_memory(a1, a2):
                noted.add(pair)
                notes.append(Diagnostic(
                    "SIM040", "note",
                    f"arguments `{n1}` and `{n2}` overlap in memory; the simulator records "
                    "them separately, so races between them are not detected", kdef.span,
                    help="pass distinct arrays (the launch checker rejects a mutable "
                         "argument that aliases another)"))
    return notes
