"""Finding and running the Tile IR toolchain: tileiras, tileirdisasm and (for SASS) nvdisasm.

Owns: where the binaries are (``find_toolchain``), their version, the clean environment they run
in, and turning their failures into ``ToolchainError`` (missing or broken tools) and
``CompileError`` (the compiler rejected the input, with its own message and location). It must
not know about kernels, the cache or the GPU: it takes bytes and returns bytes or text.

Search order for tileiras:

1. ``CUTILE_LAB_TILEIRAS``: path to a tileiras binary (or to the folder holding it);
2. the pip wheels (``nvidia-cuda-tileiras``, ``nvidia-cuda-nvcc``, ``nvidia-nvvm``, which
   ``cuda-tile[tileiras]`` installs) when all three have the same major.minor version;
3. ``tileiras`` on ``PATH``;
4. ``$CUDA_HOME/bin`` (or ``$CUDA_PATH/bin``).

Every tool runs with ``CUDA_HOME``/``CUDA_PATH`` removed and its own ``bin`` folder first on
``PATH``: tileiras looks for ptxas under ``$CUDA_HOME`` when that is set, and an older CUDA
there (for example 13.0 beside a 13.4 tileiras) makes it fail with no useful message.
"""
from __future__ import annotations

import functools
import importlib.metadata
import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from cutile_lab.errors import CompileError, ToolchainError

__all__ = ["Toolchain", "TileirasResult", "TileirasError", "find_toolchain", "toolchain_or_none",
           "run_tileiras", "disassemble_tileir", "disassemble_sass", "supported_archs",
           "parse_tileiras_errors", "clean_env", "INSTALL_HINT", "SASS_HINT"]

log = logging.getLogger(__name__)

INSTALL_HINT = ('install the toolchain with `pip install "cuda-tile[tileiras]==1.7.0"`, '
                "or set CUTILE_LAB_TILEIRAS to the path of a tileiras binary (CUDA 13.1 or newer)")
SASS_HINT = ("no SASS disassembler found: install the nvdisasm wheel that matches the toolchain "
             "with `pip install \"cuda-toolkit[nvdisasm,cuobjdump]>=13.2,<13.5\"` (a dependency of "
             "cutile-lab), or put nvdisasm on PATH")
WHEEL_PACKAGES = ("nvidia-cuda-tileiras", "nvidia-cuda-nvcc", "nvidia-nvvm")
FALLBACK_ARCHS = ("sm_80", "sm_86", "sm_87", "sm_88", "sm_89", "sm_90", "sm_100", "sm_103",
                  "sm_107", "sm_110", "sm_120", "sm_121")
_GENERIC_FAILURE = "failed to compile Tile IR program"


@dataclass(frozen=True)
class Toolchain:
    """One Tile IR toolchain: tileiras and the tools found with it."""

    tileiras: Path
    tileirdisasm: Path | None
    bin_dir: Path
    version: str                        # "13.4.92"
    source: str                         # "env", "wheel", "PATH" or "CUDA_HOME"
    nvdisasm: Path | None = None
    cuobjdump: Path | None = None
    lib_dirs: tuple[Path, ...] = ()

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return tuple(int(p) for p in re.findall(r"\d+", self.version)[:3])

    @property
    def supports_remarks(self) -> bool:
        """``--remarks`` and ``--remark-format`` arrived in tileiras 13.4."""
        return self.version_tuple >= (13, 4)

    def env(self) -> dict[str, str]:
        return clean_env(self.bin_dir, self.lib_dirs)


@dataclass(frozen=True)
class TileirasResult:
    cubin: bytes
    remarks_yaml: str
    stderr: str
    seconds: float


class TileirasError(CompileError):
    """tileiras rejected the bytecode. ``location`` is ``(file, line, col)`` of the first error
    that has one, in the file the bytecode's debug info names (the lowered source)."""

    def __init__(self, message: str, *, location: tuple[str, int, int] | None = None,
                 compiler_output: str = "", returncode: int | None = None,
                 command: Sequence[str] = (), stage: str = "tileiras", help: str | None = None):
        super().__init__(message, compiler_output=compiler_output, stage=stage, help=help)
        self.location = location
        self.returncode = returncode
        self.command = list(command)


class ToolFailure(ToolchainError):
    """A tool of the toolchain crashed, exited non-zero without a diagnostic, or hung: a failure
    of the toolchain, not of the kernel. ``tool`` names it, ``returncode`` is its exit status
    (negative: killed by that signal; ``None``: it hung and was stopped), ``output`` what it
    printed."""

    def __init__(self, message: str, *, tool: str, returncode: int | None, output: str = "",
                 command: Sequence[str] = (), help: str | None = None):
        super().__init__(message, help=help)
        self.tool = tool
        self.returncode = returncode
        self.output = output
        self.command = list(command)


TOOL_FAILURE_HELP = ("this is a failure of the Tile IR toolchain, not of your kernel: the "
                     "simulator backend can still run the kernel; please report it with the "
                     "kernel's source and `cutile-lab info`")
# what a crashing LLVM/MLIR tool prints, even when it also printed an `error:` line
_CRASH_RE = re.compile(r"PLEASE submit a bug report|Stack dump:|LLVM ERROR:|Assertion .* failed|"
                       r"Segmentation fault|core dumped|terminate called", re.I)


def _last_lines(output: str, n: int = 8) -> str:
    lines = [ln.rstrip() for ln in (output or "").splitlines() if ln.strip()]
    return "\n".join("  | " + ln for ln in lines[-n:])


def _exit_text(returncode: int) -> str:
    if returncode < 0:
        try:
            import signal
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


def tool_failure(tool: str, returncode: int | None, output: str, cmd: Sequence[str] = (),
                 timeout: float | None = None) -> ToolFailure:
    """The error for a tool that crashed (``returncode``), or hung (``returncode`` None: it was
    stopped after ``timeout`` seconds), with the last lines it printed."""
    if returncode is None:
        head = f"{tool} hung: it was stopped after {timeout:g} s without finishing"
    else:
        head = f"{tool} crashed ({_exit_text(returncode)})"
    tail = _last_lines(output)
    text = head + (f"; the last lines it printed:\n{tail}" if tail else
                   "; it printed nothing")
    return ToolFailure(text, tool=tool, returncode=returncode, output=output or "",
                       command=cmd, help=TOOL_FAILURE_HELP)


# --------------------------------------------------------------------------- discovery

def clean_env(bin_dir: Path, lib_dirs: Sequence[Path] = ()) -> dict[str, str]:
    """The environment tools run in: no CUDA_HOME/CUDA_PATH, their own bin and lib dirs first."""
    env = dict(os.environ)
    env.pop("CUDA_HOME", None)
    env.pop("CUDA_PATH", None)
    env["PATH"] = os.pathsep.join([str(bin_dir)] + [p for p in env.get("PATH", "").split(os.pathsep)
                                                    if p])
    libs = [str(d) for d in lib_dirs] + [p for p in env.get("LD_LIBRARY_PATH", "").split(os.pathsep)
                                         if p]
    if libs:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(libs)
    return env


@functools.lru_cache(maxsize=1)
def find_toolchain() -> Toolchain:
    """The toolchain to use (see the module docstring for the order). Cached; raises
    ``ToolchainError`` saying what is missing and how to install it."""
    notes: list[str] = []

    override = os.environ.get("CUTILE_LAB_TILEIRAS")
    if override:
        path = Path(override).expanduser()
        if path.is_dir():
            path = path / "tileiras"
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ToolchainError(f"CUTILE_LAB_TILEIRAS={override} is not an executable tileiras",
                                 help=INSTALL_HINT)
        return _make(path, "env")

    wheel = _wheel_tileiras(notes)
    if wheel is not None:
        return _make(wheel, "wheel")

    on_path = shutil.which("tileiras")
    if on_path:
        return _make(Path(on_path), "PATH")
    notes.append("no tileiras on PATH")

    for var in ("CUDA_HOME", "CUDA_PATH"):
        home = os.environ.get(var)
        if home:
            candidate = Path(home) / "bin" / "tileiras"
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return _make(candidate, "CUDA_HOME")
            notes.append(f"no tileiras in ${var}/bin ({home}/bin; CUDA 13.1+ has it)")
    raise ToolchainError("the Tile IR compiler (tileiras) was not found: " + "; ".join(notes),
                         help=INSTALL_HINT)


def toolchain_or_none() -> Toolchain | None:
    """``find_toolchain()``, or ``None`` where there is no usable toolchain."""
    try:
        return find_toolchain()
    except ToolchainError as e:
        log.debug("no toolchain: %s", e)
        return None


def _wheel_tileiras(notes: list[str]) -> Path | None:
    versions: dict[str, str] = {}
    for pkg in WHEEL_PACKAGES:
        try:
            versions[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            pass
    if not versions:
        notes.append("the pip wheels " + ", ".join(WHEEL_PACKAGES) + " are not installed")
        return None
    missing = [p for p in WHEEL_PACKAGES if p not in versions]
    if missing:
        notes.append("pip wheels incomplete: " + ", ".join(missing) + " not installed")
        return None
    if len({_major_minor(v) for v in versions.values()}) != 1:
        found = ", ".join(f"{p}=={v}" for p, v in versions.items())
        raise ToolchainError(
            f"the Tile IR toolchain wheels have mismatched versions ({found}); tileiras needs "
            "the ptxas and libnvvm of its own CUDA release",
            help='reinstall them together: pip install --force-reinstall "cuda-tile[tileiras]==1.7.0"')
    try:
        files = importlib.metadata.files("nvidia-cuda-tileiras") or []
        dist = importlib.metadata.distribution("nvidia-cuda-tileiras")
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in files:
        if f.name in ("tileiras", "tileiras.exe") and f.parent.name == "bin":
            path = Path(str(dist.locate_file(f)))
            if path.is_file():
                return path
    notes.append("the nvidia-cuda-tileiras wheel has no tileiras binary")
    return None


def _major_minor(version: str) -> tuple[str, ...]:
    return tuple(version.split(".")[:2])


def _make(tileiras: Path, source: str) -> Toolchain:
    tileiras = tileiras.resolve()
    bin_dir = tileiras.parent
    lib_dirs = tuple(d for d in (bin_dir.parent / "lib", bin_dir.parent / "lib64") if d.is_dir())
    version = _version(tileiras, bin_dir, lib_dirs)
    disasm = bin_dir / "tileirdisasm"
    return Toolchain(
        tileiras=tileiras,
        tileirdisasm=disasm if disasm.is_file() else None,
        bin_dir=bin_dir,
        version=version,
        source=source,
        nvdisasm=_find_tool("nvdisasm", bin_dir),
        cuobjdump=_find_tool("cuobjdump", bin_dir),
        lib_dirs=lib_dirs,
    )


def _version(tileiras: Path, bin_dir: Path, lib_dirs: Sequence[Path]) -> str:
    try:
        out = subprocess.run([str(tileiras), "--version"], capture_output=True, text=True,
                             timeout=30, env=clean_env(bin_dir, lib_dirs))
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ToolchainError(f"could not run {tileiras} --version: {e}", help=INSTALL_HINT) from None
    m = re.search(r"\bV(\d+\.\d+(?:\.\d+)?)", out.stdout + out.stderr)
    if out.returncode != 0 or not m:
        raise ToolchainError(f"{tileiras} --version failed (exit {out.returncode}): "
                             f"{(out.stderr or out.stdout).strip()[:300]}", help=INSTALL_HINT)
    return m.group(1)


def _find_tool(name: str, bin_dir: Path) -> Path | None:
    candidates = [bin_dir / name]
    found = shutil.which(name)
    if found:
        candidates.append(Path(found))
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            candidates.append(Path(os.environ[var]) / "bin" / name)
    candidates.append(Path("/usr/local/cuda/bin") / name)
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    return None


# --------------------------------------------------------------------------- running

def run_tileiras(bytecode: bytes, arch: str, *, opt_level: int = 3, lineinfo: bool = True,
                 remarks: bool = True, timeout: float = 120,
                 extra_args: Sequence[str] = (), toolchain: Toolchain | None = None
                 ) -> TileirasResult:
    """Compile Tile IR bytecode to a cubin for ``arch`` (``"sm_90"``).

    Raises ``TileirasError`` (a ``CompileError``) with tileiras' own message and, where it gave
    one, the source ``location``; ``ToolchainError`` where there is no tileiras.
    """
    tc = toolchain or find_toolchain()
    with tempfile.TemporaryDirectory(prefix="cutile_lab-") as tmp:
        src, out, rem = Path(tmp, "in.tileirbc"), Path(tmp, "out.cubin"), Path(tmp, "remarks.yaml")
        src.write_bytes(bytecode)
        cmd = [str(tc.tileiras), str(src), "-o", str(out), "--gpu-name", arch, f"-O{opt_level}"]
        if lineinfo:
            cmd.append("--lineinfo")
        want_remarks = remarks and tc.supports_remarks
        if want_remarks:
            cmd += ["--remark-format=yaml", "--remarks=all", f"--remarks-output-file={rem}"]
        cmd += list(extra_args)
        t0 = time.perf_counter()
        proc = _run(cmd, tc, timeout, stage="tileiras", cwd=tmp)
        seconds = time.perf_counter() - t0
        if proc.returncode != 0 or not out.is_file():
            raise _compile_error(proc, cmd, stage="tileiras", arch=arch)
        remarks_yaml = ""
        if want_remarks and rem.is_file():
            remarks_yaml = rem.read_text(encoding="utf-8", errors="replace")
        return TileirasResult(out.read_bytes(), remarks_yaml, proc.stderr, seconds)


def disassemble_tileir(bytecode: bytes, debug_info: bool = True, *,
                       toolchain: Toolchain | None = None, timeout: float = 60) -> str:
    """Tile IR text of ``bytecode`` (``tileirdisasm``; with ``-g``, debug locations too)."""
    tc = toolchain or find_toolchain()
    if tc.tileirdisasm is None:
        raise ToolchainError(f"tileirdisasm was not found beside {tc.tileiras}; Tile IR text "
                             "needs CUDA 13.4 or newer", help=INSTALL_HINT)
    with tempfile.TemporaryDirectory(prefix="cutile_lab-") as tmp:
        src = Path(tmp, "in.tileirbc")
        src.write_bytes(bytecode)
        cmd = [str(tc.tileirdisasm)] + (["-g"] if debug_info else []) + [str(src)]
        proc = _run(cmd, tc, timeout, stage="tileirdisasm", cwd=tmp)
        if proc.returncode != 0:
            raise _compile_error(proc, cmd, stage="tileirdisasm")
        return proc.stdout


def disassemble_sass(cubin: bytes, *, toolchain: Toolchain | None = None,
                     timeout: float = 60) -> str | None:
    """SASS of ``cubin`` from nvdisasm (or ``cuobjdump -sass``), or ``None`` without either."""
    tc = toolchain or toolchain_or_none()
    if tc is not None:
        nvdisasm, cuobjdump, env = tc.nvdisasm, tc.cuobjdump, tc.env()
    else:
        nvdisasm, cuobjdump = shutil.which("nvdisasm"), shutil.which("cuobjdump")
        env = dict(os.environ)
        env.pop("CUDA_HOME", None)
        env.pop("CUDA_PATH", None)
    attempts = []
    if nvdisasm:
        attempts += [[str(nvdisasm), "-c", "-gi"], [str(nvdisasm), "-c"]]
    if cuobjdump:
        attempts.append([str(cuobjdump), "-sass"])
    if not attempts:
        return None
    with tempfile.TemporaryDirectory(prefix="cutile_lab-") as tmp:
        path = Path(tmp, "kernel.cubin")
        path.write_bytes(cubin)
        for cmd in attempts:
            try:
                proc = subprocess.run(cmd + [str(path)], capture_output=True, text=True,
                                      timeout=timeout, env=env, cwd=tmp)
            except (OSError, subprocess.TimeoutExpired) as e:
                log.debug("%s failed: %s", cmd[0], e)
                continue
            if proc.returncode == 0 and proc.stdout.strip():
                return proc.stdout
            log.debug("%s exited %s: %s", " ".join(cmd), proc.returncode, proc.stderr.strip())
    return None


def supported_archs(toolchain: Toolchain | None = None) -> list[str]:
    """Targets tileiras accepts (``--gpu-name`` values), or a built-in list without one."""
    tc = toolchain or toolchain_or_none()
    if tc is None:
        return list(FALLBACK_ARCHS)
    return list(_archs_of(tc))


@functools.lru_cache(maxsize=8)
def _archs_of(tc: Toolchain) -> tuple[str, ...]:
    try:
        proc = subprocess.run([str(tc.tileiras), "--help"], capture_output=True, text=True,
                              timeout=30, env=tc.env())
        archs = re.findall(r"^\s*=(sm_\d+[a-z]?)\b", proc.stdout, re.M)
    except (OSError, subprocess.TimeoutExpired):
        archs = []
    return tuple(dict.fromkeys(archs)) or FALLBACK_ARCHS


def _run(cmd: list[str], tc: Toolchain, timeout: float, *, stage: str, cwd: str
         ) -> subprocess.CompletedProcess:
    log.debug("running %s", " ".join(cmd))
    try:
        return subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                              timeout=timeout, env=tc.env(), cwd=cwd)
    except subprocess.TimeoutExpired as e:
        output = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
                         for x in (e.stderr, e.stdout))
        raise tool_failure(stage, None, output, cmd, timeout) from None
    except OSError as e:
        raise ToolchainError(f"could not run {cmd[0]}: {e}", help=INSTALL_HINT) from None


# --------------------------------------------------------------------------- errors

_LOC_RE = re.compile(r'(?:loc\(|\[)"([^"]+)":(\d+):(\d+)[)\]]')  # loc("f":1:2), fused<..>["f":1:2]
_ERROR_RE = re.compile(r"(?:^|:\s)error:\s*(.*)$")


def parse_tileiras_errors(stderr: str) -> tuple[list[str], tuple[str, int, int] | None]:
    """The error messages in tileiras' output, and the first source location among them.

    Handles ``loc("f.py":3:4): error: msg``, ``#cuda_tile.di_loc<loc("f.py":3:4) in ...>: error:
    msg`` and plain ``error: msg`` lines. The generic trailer ("failed to compile Tile IR
    program") is dropped when there is anything more specific.
    """
    messages: list[str] = []
    location: tuple[str, int, int] | None = None
    for line in stderr.splitlines():
        m = _ERROR_RE.search(line)
        if not m:
            continue
        msg = m.group(1).strip()
        head = line[:m.start()]
        loc = _LOC_RE.search(head)
        if loc and location is None:
            location = (loc.group(1), int(loc.group(2)), int(loc.group(3)))
        if msg and msg not in messages:
            messages.append(msg)
    specific = [m for m in messages if m != _GENERIC_FAILURE]
    return (specific or messages), location


def _compile_error(proc: subprocess.CompletedProcess, cmd: list[str], *, stage: str,
                   arch: str | None = None) -> TileirasError | ToolFailure:
    """What a failed run means: the compiler rejected the input (``TileirasError``, with its
    message and location), or the tool itself failed (``ToolFailure``: killed by a signal, a
    crash report, or a non-zero exit without any diagnostic)."""
    output = (proc.stderr or "") + (proc.stdout if stage == "tileiras" else "")
    messages, location = parse_tileiras_errors(output)
    rc = proc.returncode
    if rc < 0 or _CRASH_RE.search(output) or (rc != 0 and not messages and
                                                not (arch and "--gpu-name" in output)):
        return tool_failure(stage, rc, output, cmd)
    if rc == 0:          # "succeeded" without writing its output
        return tool_failure(stage, rc, output + "\n(exit status 0, but no output file)", cmd)
    hint = None
    if messages:
        text = "; ".join(messages)
    elif arch and "--gpu-name" in output:
        text = f"unknown target {arch!r}"
        hint = "use one of: " + ", ".join(supported_archs())
    else:
        lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
        text = lines[-1] if lines else f"failed (exit status {proc.returncode}) without a message"
    return TileirasError(f"{stage}: {text}", location=location, compiler_output=output,
                         returncode=proc.returncode, command=cmd, stage=stage, help=hint)
