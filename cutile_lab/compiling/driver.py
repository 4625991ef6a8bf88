"""The compile pipeline: check -> lower -> cuTile front end (bytecode) -> tileirdisasm -> tileiras.

Each stage is timed; results are cached in memory and on disk under a key made of everything that
changes the binary. Errors from any stage come back as ``CompileError`` at the user's own line.
"""
from __future__ import annotations

import ast
import importlib.metadata
import inspect
import re
import time
from typing import Mapping

from cutile_lab.compiling.artifact import CompiledKernel, LaunchParam
from cutile_lab.compiling.lowering import LoweredKernel, lower
from cutile_lab.compiling.specialization import (ArrayLayout, ScalarLayout, Specialization,
                                                 dtype_of, make_specialization)
from cutile_lab.compiling.tileir import clean_tileir, parse_remarks
from cutile_lab.diagnostics import Span
from cutile_lab.errors import CompileError, KernelDiagnosticsError, ToolchainError
from cutile_lab.language.frontend import KernelDef

KNOWN_ARCHS = ("sm_80", "sm_86", "sm_87", "sm_88", "sm_89", "sm_90", "sm_100", "sm_103",
               "sm_107", "sm_110", "sm_120", "sm_121")
LAB_VERSION = "0.1.0"


def cuda_tile_version() -> str:
    try:
        return importlib.metadata.version("cuda-tile")
    except importlib.metadata.PackageNotFoundError:
        return "missing"


def normalize_arch(arch: str | int) -> str:
    text = str(arch).strip().lower().replace("compute_", "sm_")
    if re.fullmatch(r"\d+", text):
        text = f"sm_{text}"
    if re.fullmatch(r"\d+\.\d+", text):
        text = "sm_" + text.replace(".", "")
    if text not in KNOWN_ARCHS:
        raise CompileError(f"unknown target architecture {arch!r}",
                           help=f"use one of: {', '.join(KNOWN_ARCHS)} (an H100 is sm_90)")
    return text


def compile_kernel(kdef: KernelDef, arch: str = "sm_90", *, consts: Mapping[str, int] | None = None,
                   layouts: Mapping | None = None, options: Mapping | None = None,
                   globals_: Mapping | None = None, use_cache: bool = True,
                   cached_only: bool = False) -> CompiledKernel | None:
    """Compile one kernel for ``arch`` with its const generics bound to ``consts``.
    ``cached_only``: the cached compile, or None where there is none (nothing is compiled)."""
    from cutile_lab.checking import check_kernel
    from cutile_lab.compiling.cache import default_cache, make_key
    from cutile_lab.compiling.toolchain import toolchain_or_none

    t_start = time.perf_counter()
    timings: dict = {}
    arch = normalize_arch(arch)
    diagnostics = check_kernel(kdef, globals_)
    timings["check"] = time.perf_counter() - t_start
    if any(d.is_error for d in diagnostics):
        raise KernelDiagnosticsError(diagnostics, _source_lookup(kdef))
    hints = dict(kdef.options)
    hints.update(options or {})
    spec = make_specialization(kdef, dict(consts or {}), dict(layouts or {}), hints)

    t = time.perf_counter()
    lowered = lower(kdef)
    timings["lower"] = time.perf_counter() - t

    toolchain = toolchain_or_none()
    key = make_key(lab=LAB_VERSION, cuda_tile=cuda_tile_version(), kernel=kdef.name,
                   text=lowered.text, spec=spec.key(), arch=arch,
                   globals=_referenced_globals(kdef, globals_))
    cache = default_cache() if use_cache else None
    if cache is not None:
        compiled = _from_cache(cache, key, toolchain, diagnostics, timings, t_start)
        if compiled is not None:
            return compiled
    if cached_only:
        return None
    if toolchain is None:
        from cutile_lab.compiling.toolchain import find_toolchain
        find_toolchain()   # raises the ToolchainError that says what is missing
        raise ToolchainError("no Tile IR toolchain found")
    compiled = _compile_lowered(kdef, lowered, spec, hints, globals_, arch, toolchain, timings)
    timings["total"] = time.perf_counter() - t_start
    compiled.key = key
    compiled.diagnostics = diagnostics
    if cache is not None:
        cache.put(key, compiled.metadata(), {"cubin": compiled.cubin,
                                             "bytecode": compiled.bytecode})
    return compiled


def _from_cache(cache, key, toolchain, diagnostics, timings: dict,
                t_start: float) -> CompiledKernel | None:
    """The cached compile for ``key`` (made by this toolchain), or None."""
    t = time.perf_counter()
    hit = cache.get(key, toolchain.version if toolchain else None)
    if hit is None:
        return None
    meta, blobs, where = hit
    compiled = CompiledKernel.from_cache(meta, blobs)
    compiled.cache = where
    compiled.diagnostics = diagnostics
    compiled.timings = {"check": timings["check"], "lower": timings["lower"],
                        "cache_lookup": time.perf_counter() - t,
                        "total": time.perf_counter() - t_start}
    return compiled


def _compile_lowered(kdef: KernelDef, lowered, spec, hints: dict, globals_, arch: str, toolchain,
                     timings: dict) -> CompiledKernel:
    """Bytecode, its Tile IR text, the cubin (tileiras) and its resources, each step timed."""
    t = time.perf_counter()
    bytecode, symbol, params = _bytecode(kdef, lowered, spec, hints, globals_, toolchain.version)
    timings["bytecode"] = time.perf_counter() - t

    from cutile_lab.compiling.toolchain import disassemble_tileir, run_tileiras
    t = time.perf_counter()
    ir = clean_tileir(disassemble_tileir(bytecode, debug_info=True))
    timings["disasm"] = time.perf_counter() - t

    t = time.perf_counter()
    opt_level = int(hints.get("opt_level", 3) or 3)
    try:
        result = run_tileiras(bytecode, arch, opt_level=opt_level)
    except CompileError as e:
        raise _located(e, lowered) from None
    timings["tileiras"] = time.perf_counter() - t

    from cutile_lab.compiling.cubin import read_resources
    t = time.perf_counter()
    resources = _resources_of(read_resources(result.cubin), symbol)
    timings["resources"] = time.perf_counter() - t

    return CompiledKernel(
        name=kdef.name, symbol=symbol, arch=arch, cubin=result.cubin, bytecode=bytecode,
        tileir=ir.text, tileir_line_map=ir.line_map, lowered_source=lowered.text,
        params=params, consts=spec.const_values, resources=resources,
        remarks=parse_remarks(result.remarks_yaml), timings=timings, cache="miss",
        toolchain_version=toolchain.version)


def _resources_of(all_resources, symbol: str) -> dict:
    for r in all_resources:
        if r.kernel == symbol:
            return _as_dict(r)
    return _as_dict(all_resources[0]) if all_resources else {}


def _as_dict(r) -> dict:
    from dataclasses import asdict, is_dataclass
    return asdict(r) if is_dataclass(r) else dict(r)


def _source_lookup(kdef: KernelDef):
    def lookup(filename: str, line: int) -> str:
        if filename == kdef.source.filename:
            return kdef.source.line(line)
        import linecache
        return linecache.getline(filename, line).rstrip("\n")
    return lookup


def _referenced_globals(kdef: KernelDef, globals_: Mapping | None) -> list:
    """Values of module-level names the body reads: they change the binary too."""
    if not globals_:
        return []
    names = sorted({n.id for n in ast.walk(kdef.node) if isinstance(n, ast.Name)
                    and isinstance(n.ctx, ast.Load) and n.id in globals_})
    out = []
    for n in names:
        v = globals_[n]
        if isinstance(v, (int, float, bool, str, tuple)) or v is None:
            out.append((n, repr(v)))
        elif inspect.isfunction(v) or hasattr(v, "__wrapped__"):
            try:
                out.append((n, inspect.getsource(inspect.unwrap(v))))
            except (OSError, TypeError):
                out.append((n, f"<function {getattr(v, '__qualname__', n)}>"))
    return out


def _bytecode_version(toolchain_version: str | None):
    from cuda.tile._compile import _SUPPORTED_VERSIONS
    best = _SUPPORTED_VERSIONS[-1]
    if toolchain_version:
        m = re.match(r"(\d+)\.(\d+)", toolchain_version)
        if m:
            want = (int(m.group(1)), int(m.group(2)))
            fitting = [v for v in _SUPPORTED_VERSIONS
                       if tuple(int(x) for x in v.as_string().split(".")) <= want]
            best = fitting[-1] if fitting else _SUPPORTED_VERSIONS[0]
    return best


def _bytecode(kdef: KernelDef, lowered: LoweredKernel, spec: Specialization, hints: dict,
              globals_: Mapping | None, toolchain_version: str | None):
    """Run cuTile's front end on the lowered text; return (bytecode, symbol, launch params)."""
    import cuda.tile as ct
    from cuda.tile._compile import compile_tile
    from cuda.tile._exception import TileError
    from cuda.tile.compilation import (ArrayConstraint, CallingConvention, KernelSignature,
                                       ScalarConstraint)

    import linecache
    linecache.cache[lowered.filename] = (len(lowered.text), None,
                                         lowered.text.splitlines(keepends=True), lowered.filename)
    namespace: dict = dict(globals_ or {})
    namespace.update({"ct": ct, "__name__": f"cutile_lab.lowered.{kdef.name}"})
    code = compile(lowered.text, lowered.filename, "exec")
    exec(code, namespace)
    pyfunc = namespace[kdef.name]
    kernel_hints = {k: v for k, v in hints.items()
                    if k in ("num_ctas", "occupancy", "opt_level", "num_worker_warps")}
    try:
        ct_kernel = ct.kernel(pyfunc, **kernel_hints)
    except TypeError as e:
        raise CompileError(f"bad compiler hint: {e}", span=kdef.span,
                           help="hints are num_ctas, occupancy, opt_level") from None

    layouts = spec.layout_of
    consts = spec.const_values
    constraints, params = [], []
    for name in lowered.param_names:
        if name in consts:
            constraints.append(consts[name])
            continue
        lay = layouts.get(name)
        if isinstance(lay, ArrayLayout):
            dt = getattr(ct, dtype_of(lay.dtype).cutile)
            itemsize = dtype_of(lay.dtype).itemsize
            stride_const = tuple([None] * (lay.ndim - 1) + [1]) if lay.contiguous else None
            outer_div = max(1, lay.stride_align // itemsize)
            stride_div = tuple([outer_div] * (lay.ndim - 1) + [1 if lay.contiguous else outer_div])
            constraints.append(ArrayConstraint(
                dt, lay.ndim, index_dtype=ct.int64 if lay.index_bits == 64 else ct.int32,
                stride_lower_bound_incl=0, alias_groups=(), may_alias_internally=False,
                stride_constant=stride_const, stride_divisible_by=stride_div,
                base_addr_divisible_by=lay.base_align))
            params.append(LaunchParam(name, "array", lay.dtype, lay.ndim, lay.index_bits))
        elif isinstance(lay, ScalarLayout):
            constraints.append(ScalarConstraint(getattr(ct, dtype_of(lay.dtype).cutile)))
            params.append(LaunchParam(name, "scalar", lay.dtype))
        else:
            raise CompileError(
                f"don't know the type of parameter `{name}` of `{kdef.name}`",
                span=kdef.span,
                help=f"give its type: from the command line --arg {name}=f32[?,?] (an array: "
                     f"dtype and rank) or --arg {name}=i32 (a scalar); from Python, layouts= "
                     "with an ArrayLayout/ScalarLayout; a launch takes them from its arguments")
    signature = KernelSignature(constraints, CallingConvention.cutile_python_v1())
    try:
        result = compile_tile(ct_kernel._annotated_function, [signature], sm_arch=None,
                              compiler_options=ct_kernel._compiler_options,
                              bytecode_version=_bytecode_version(toolchain_version),
                              return_bytecode=True, return_cubin=False)
    except TileError as e:
        loc = getattr(e, "loc", None)
        span = None
        if loc is not None and not loc.is_unknown():
            span = lowered.user_span(loc.line, loc.col)
        raise CompileError(_first_line(e.message), span=span, compiler_output=str(e),
                           stage="cutile",
                           help=_compile_help(e.message)) from None
    symbol = result.kernel_signatures[0].symbol
    return bytes(result.bytecode), symbol, params


def _first_line(message: str) -> str:
    return message.strip().split("\n")[0]


def _compile_help(message: str) -> str | None:
    if "power of two" in message or "power of 2" in message:
        return "tile sizes must be powers of two, e.g. 64, 128, 256"
    if "dtype" in message.lower() or "type" in message.lower():
        return "convert explicitly with `.astype(f32)` (or the dtype you mean)"
    return None


def _located(e: CompileError, lowered: LoweredKernel) -> CompileError:
    loc = getattr(e, "location", None)
    if loc and loc[1]:
        e.span = lowered.user_span(int(loc[1]), int(loc[2] or 0))
    elif e.span is None:
        e.span = Span(lowered.user_filename, 0)
    return e
