"""CUDA C++ -> cubin and PTX with NVRTC (cuda.core's ``Program``), cached like tile kernels.

Owns ``compile_cuda`` and its result ``CompiledCuda``: one NVRTC compile of the user's source for
one architecture gives the cubin (``Program.compile("cubin")``) and, from the same NVRTC
program, its PTX; resources are read out of the cubin (``compiling.cubin``), SASS comes from the
same disassembler as for tile kernels. Compiles are cached in memory and on disk
(``compiling.cache``) under a key of everything that changes the binary: the source, the
kernel's name, the options, the architecture and NVRTC's version.

NVRTC's diagnostics are read back to the user's text: ``cell.cu(4): error: ...`` becomes a
``CompileError`` at line 4 of the cell (plus the cell's ``line_offset``), at the caret's column
when NVRTC draws one; warnings become notes of the result. Everything here runs on a CPU (NVRTC
needs no GPU; the ``nvidia-cuda-nvrtc`` wheel provides it).
"""
from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field
from typing import Sequence

from cutile_lab.compiling.driver import LAB_VERSION, normalize_arch
from cutile_lab.diagnostics import Span
from cutile_lab.errors import CompileError, ToolchainError

#: NVRTC options the lab passes through (as ``ProgramOptions`` fields)
OPTIONS = ("use_fast_math", "ftz", "prec_div", "prec_sqrt", "fma", "max_register_count",
           "std", "define_macro", "include_path", "lineinfo", "debug")


@dataclass
class CompiledCuda:
    """A compiled CUDA C++ kernel: what the launch loads (``cubin``, ``symbol``) and what the
    report shows (PTX, resources, SASS, warnings, timings)."""

    name: str
    symbol: str
    arch: str
    cubin: bytes
    ptx: str
    resources: dict
    options: dict
    warnings: list[str] = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    cache: str = "miss"
    toolchain_version: str | None = None
    key: str = ""
    # what the compile report reads off a tile kernel; a CUDA C++ kernel has none of these
    tileir = None
    tileir_line_map: tuple = ()
    lowered_source = ""
    remarks: tuple = ()
    consts: dict = field(default_factory=dict)
    _sass: str | None = None

    @property
    def max_threads_per_block(self) -> int | None:
        return self.resources.get("max_threads_per_block")

    @property
    def sass(self) -> str | None:
        """SASS from nvdisasm/cuobjdump when one is installed (computed on first use)."""
        if self._sass is None:
            from cutile_lab.compiling.toolchain import disassemble_sass
            self._sass = disassemble_sass(self.cubin) or ""
        return self._sass or None

    def summary(self) -> str:
        r = self.resources
        t = self.timings
        return (f"{self.name} [{self.arch}] CUDA C++ (NVRTC {self.toolchain_version}) — "
                f"registers {r.get('registers')}, shared {r.get('shared_bytes')} B, "
                f"local {r.get('local_bytes')} B; cache {self.cache}, "
                f"{t.get('total', 0) * 1e3:.1f} ms")

    def metadata(self) -> dict:
        return {"name": self.name, "symbol": self.symbol, "arch": self.arch,
                "resources": self.resources, "options": self.options,
                "warnings": self.warnings, "toolchain_version": self.toolchain_version,
                "key": self.key, "build_timings": self.timings}

    @classmethod
    def from_cache(cls, meta: dict, blobs: dict) -> "CompiledCuda":
        return cls(name=meta["name"], symbol=meta["symbol"], arch=meta["arch"],
                   cubin=blobs["cubin"], ptx=blobs["ptx"].decode(), resources=meta["resources"],
                   options=meta["options"], warnings=list(meta["warnings"]),
                   toolchain_version=meta["toolchain_version"], key=meta["key"])


def nvrtc_version() -> str | None:
    """NVRTC's version ("13.4"), or None when the library cannot be loaded."""
    try:
        from cuda.bindings import nvrtc
        err, major, minor = nvrtc.nvrtcVersion()
        if int(err) != 0:
            return None
        return f"{major}.{minor}"
    except Exception:
        return None


def _require_nvrtc() -> str:
    v = nvrtc_version()
    if v is None:
        raise ToolchainError(
            "NVRTC (the CUDA C++ runtime compiler) cannot be loaded",
            help="install the `nvidia-cuda-nvrtc` wheel of CUDA 13 into this environment "
                 "(it is a dependency of cutile-lab)")
    return v


def compile_cuda(source: str, name: str, arch: str = "sm_90", *, filename: str = "<cuda>",
                 line_offset: int = 0, symbol: str | None = None,
                 options: dict | None = None, use_cache: bool = True) -> CompiledCuda:
    """Compile the ``__global__`` function ``name`` of ``source`` for ``arch``.

    ``filename`` / ``line_offset`` say where ``source`` sits in the user's file or cell (errors
    point there); ``symbol`` is the kernel's symbol when it is not ``extern "C"`` (None: the
    name, or the mangled name NVRTC reports); ``options`` are NVRTC options (``OPTIONS``)."""
    from cutile_lab.compiling.cache import default_cache, make_key

    t_start = time.perf_counter()
    arch = normalize_arch(arch)
    options = dict(options or {})
    bad = sorted(set(options) - set(OPTIONS))
    if bad:
        raise CompileError(f"unknown NVRTC option{'s' * (len(bad) > 1)}: {', '.join(bad)}",
                           help=f"options are: {', '.join(OPTIONS)}")
    version = _require_nvrtc()
    key = make_key(lab=LAB_VERSION, kind="cuda-c++", nvrtc=version, text=source, name=name,
                   symbol=symbol, arch=arch, options=sorted((k, repr(v))
                                                            for k, v in options.items()))
    cache = default_cache() if use_cache else None
    if cache is not None:
        t = time.perf_counter()
        hit = cache.get(key, version)
        if hit is not None:
            compiled = CompiledCuda.from_cache(hit.meta, hit.blobs)
            compiled.cache = hit.where
            compiled.timings = {"cache_lookup": time.perf_counter() - t,
                                "total": time.perf_counter() - t_start}
            return compiled

    from cuda.core import Program, ProgramOptions
    t = time.perf_counter()
    unit = _unit_name(filename)
    popts = ProgramOptions(arch=arch, name=unit, **options)
    name_expressions = (name,) if symbol is None and not _is_extern_c(source, name) else ()
    program = Program(source, "c++", popts)
    failure = log = ptx = None
    try:
        obj = program.compile("cubin", name_expressions=name_expressions)
        log = _program_log(program)
        ptx = _program_ptx(program)
    except Exception as e:
        failure = str(e)
    # closed here, not by a traceback that keeps the program alive until interpreter exit
    # (cuda.core's finalizer then fails on a half torn-down module)
    program.close()
    del program
    if failure is not None:
        raise _located_error(failure, name, unit, filename, line_offset)
    compile_s = time.perf_counter() - t
    if symbol is None:
        symbol = name
        if name_expressions:
            mapping = getattr(obj, "symbol_mapping", None) or {}
            symbol = mapping.get(name, name)
            if isinstance(symbol, bytes):
                symbol = symbol.decode()
    cubin = bytes(obj.code)
    from cutile_lab.compiling.cubin import read_resources
    t = time.perf_counter()
    found = read_resources(cubin)
    res = next((r for r in found if r.kernel == symbol), found[0] if found else None)
    resources = asdict(res) if res is not None else {}
    warnings = _warnings(log, unit, filename, line_offset)
    compiled = CompiledCuda(
        name=name, symbol=symbol, arch=arch, cubin=cubin, ptx=ptx, resources=resources,
        options={k: repr(v) for k, v in options.items()}, warnings=warnings,
        timings={"nvrtc": compile_s, "resources": time.perf_counter() - t,
                 "total": time.perf_counter() - t_start},
        cache="miss", toolchain_version=version, key=key)
    if cache is not None:
        cache.put(key, compiled.metadata(), {"cubin": cubin, "ptx": ptx.encode()})
    return compiled


def _is_extern_c(source: str, name: str) -> bool:
    from cutile_lab.language.cuda_signature import parse_cuda_kernels
    try:
        sig = next((s for s in parse_cuda_kernels(source) if s.name == name), None)
    except Exception:
        return False
    return sig is not None and sig.extern_c


def _unit_name(filename: str) -> str:
    """A name NVRTC prints in its messages for the user's file (no angle brackets or spaces,
    which would make its messages harder to read back)."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", filename.strip("<>")) or "cuda"


def _program_log(program) -> str:
    try:
        from cuda.bindings import nvrtc
        err, n = nvrtc.nvrtcGetProgramLogSize(program.handle)
        if int(err) != 0 or n <= 1:
            return ""
        buf = b" " * n
        nvrtc.nvrtcGetProgramLog(program.handle, buf)
        return buf.rstrip(b"\0").decode(errors="replace")
    except Exception:
        return ""


def _program_ptx(program) -> str:
    """The PTX NVRTC made on the way to the cubin (the same program: no second compile)."""
    from cuda.bindings import nvrtc
    err, n = nvrtc.nvrtcGetPTXSize(program.handle)
    if int(err) != 0:
        return ""
    buf = b" " * n
    (err,) = nvrtc.nvrtcGetPTX(program.handle, buf)
    return buf.rstrip(b"\0").decode(errors="replace") if int(err) == 0 else ""


_MESSAGE = re.compile(r"^(?P<file>[^\s(][^(]*)\((?P<line>\d+)\): (?P<kind>error|warning|"
                      r"catastrophic error|remark)(?: #\S+)?: (?P<msg>.*)$")


@dataclass
class NvrtcMessage:
    line: int
    col: int | None
    kind: str
    message: str
    source_line: str = ""


def parse_log(log: str, unit: str) -> list[NvrtcMessage]:
    """NVRTC's messages about ``unit``: line (of the compiled text), column (from the caret
    line NVRTC draws under the quoted source line, when there is one), kind, message."""
    out: list[NvrtcMessage] = []
    lines = log.splitlines()
    for i, text in enumerate(lines):
        m = _MESSAGE.match(text.strip())
        if m is None or m.group("file").strip() != unit:
            continue
        msg = NvrtcMessage(int(m.group("line")), None, m.group("kind"), m.group("msg").strip())
        # the quoted line, then a line holding only the caret
        if i + 2 < len(lines) and lines[i + 2].strip() == "^":
            msg.source_line = lines[i + 1]
            msg.col = max(0, lines[i + 2].index("^") - _indent_shift(lines[i + 1]))
        out.append(msg)
    return out


def _indent_shift(quoted: str) -> int:
    """NVRTC indents the quoted source line by a fixed amount of spaces (beyond the user's)."""
    return 2 if quoted.startswith("  ") else 0


def _located_error(text: str, name: str, unit: str, filename: str, line_offset: int
                   ) -> CompileError:
    log = text.split("compilation log:", 1)[-1].strip().rstrip("\0")
    msgs = [m for m in parse_log(log, unit) if "error" in m.kind]
    if not msgs:
        return CompileError(f"NVRTC could not compile `{name}`", compiler_output=log,
                            stage="nvrtc", help="see NVRTC's output below")
    first = msgs[0]
    line = first.line + line_offset
    col = first.col or 0
    span = Span(filename, line, col, line, col + 1)
    more = f" (and {len(msgs) - 1} more error{'s' * (len(msgs) > 2)})" if len(msgs) > 1 else ""
    err = CompileError(f"{first.message}{more}", span=span, compiler_output=log, stage="nvrtc",
                       help=_help(first.message))
    err.messages = [(Span(filename, m.line + line_offset, m.col or 0, m.line + line_offset,
                          (m.col or 0) + 1), m.message) for m in msgs]
    return err


def _help(message: str) -> str | None:
    if "is undefined" in message and "identifier" in message:
        return "declare it, or include the header that does (NVRTC has no default include " \
               "path beyond CUDA's own device headers)"
    if "cannot open source file" in message:
        return "NVRTC compiles the cell alone: inline the code, or pass include_path=[...]"
    return None


def _warnings(log: str, unit: str, filename: str, line_offset: int) -> list[str]:
    return [f"{filename}:{m.line + line_offset}: {m.kind}: {m.message}"
            for m in parse_log(log, unit) if m.kind in ("warning", "remark")]


def error_diagnostics(err: CompileError) -> Sequence:
    """Every NVRTC error of ``err`` as a ``Diagnostic`` (the first one first)."""
    from cutile_lab.diagnostics import Diagnostic
    msgs = getattr(err, "messages", None)
    if not msgs:
        return [Diagnostic(err.code, "error", err.message, err.span, help=err.help)]
    return [Diagnostic(err.code, "error", m, span, help=_help(m)) for span, m in msgs]


__all__ = ["CompiledCuda", "compile_cuda", "nvrtc_version", "parse_log", "error_diagnostics",
           "OPTIONS"]
