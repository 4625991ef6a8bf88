"""IPython magics: ``%load_ext cutile_lab``, ``%%tilekernel`` and the timing/device/roofline
line magics.

Owns: option parsing (``magic_arguments``, so ``%%tilekernel?`` documents every option), turning
a cell into kernels defined in the user's namespace, and displaying one report per kernel. The
work itself is done by the other stages (``kernel``, ``checking``, ``compiling``, ``runtime``,
``performance``); reports are built by ``notebook.report``.

Errors are shown, never thrown at the user as a traceback from inside the lab: a kernel with
error diagnostics (or one the compiler rejects) is reported at the cell's own line, is not
defined, and the cell ends with a one-line ``TileCellError`` so "Run All" stops there.
"""
from __future__ import annotations

import os
import sys
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from cutile_lab.errors import (CompileError, CutileLabError, KernelDiagnosticsError,
                               ToolchainError)

SHOW_CHOICES = ("diagnostics", "tileir", "resources", "sass", "remarks", "timings", "lowered")
DEFAULT_ARCH = "sm_90"
DEBUG_ENV = "CUTILE_LAB_DEBUG"


class TileCellError(Exception):
    """A ``%%tilekernel`` cell had errors; its report above says which and where."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def _render_traceback_(self) -> list[str]:   # IPython shows this instead of a traceback
        return [f"\x1b[0;31m{type(self).__name__}\x1b[0m: {self.message}"]


class FailedKernel:
    """What a kernel's name refers to after its ``%%tilekernel`` cell failed: using it says so,
    instead of silently running the last version that compiled."""

    def __init__(self, name: str, filename: str):
        self.name = name
        self.filename = filename
        self.message = (f"`{name}` is unusable: its last %%tilekernel cell ({filename}) did not "
                        "compile, and the kernel defined before it is not used. Fix the errors "
                        "in that cell's report and run it again.")

    def __call__(self, *args, **kwargs):
        raise TileCellError(self.message)

    def __repr__(self) -> str:
        return f"<FailedKernel {self.name}: {self.message}>"


def _failed_names(cell: str) -> list[str]:
    """The kernels a cell that could not be parsed as kernels was defining (its ``def`` names)."""
    import re
    return re.findall(r"^def\s+([A-Za-z_]\w*)\s*\(", cell, flags=re.MULTILINE)


# --- option parsing -----------------------------------------------------------------------------

def parse_spec(text: str | None) -> dict[str, int]:
    """``"B=128,BK=64"`` -> ``{"B": 128, "BK": 64}`` (UsageError when malformed)."""
    from cutile_lab.compiling.specialization import parse_spec as parse
    try:
        return parse(text)
    except CompileError as e:
        raise UsageError(f"{e.message}; {e.help}") from None


def parse_show(text: str | None) -> tuple[str, ...]:
    if not text or text.strip() == "all":
        return SHOW_CHOICES
    if text.strip() == "none":
        return ()
    items = tuple(s.strip() for s in text.split(",") if s.strip())
    bad = [s for s in items if s not in SHOW_CHOICES]
    if bad:
        raise UsageError(f"--show: unknown section{'s' * (len(bad) > 1)} "
                         f"{', '.join(map(repr, bad))}; choose from {','.join(SHOW_CHOICES)} "
                         "(or all, none)")
    return items


def parse_arch(text: str | None) -> str:
    if not text:
        return default_arch()
    from cutile_lab.compiling.driver import normalize_arch
    try:
        return normalize_arch(text)
    except CompileError as e:
        raise UsageError(f"--arch: {e.message}; {e.help}") from None


_default_arch: str | None = None


def default_arch() -> str:
    """The architecture of the GPU present, else sm_90 (decided once per process)."""
    global _default_arch
    if _default_arch is not None:
        return _default_arch
    arch = _arch_from_proc()
    if arch is not None:
        _default_arch = arch
        return arch
    arch = DEFAULT_ARCH
    # Skip probing the driver on machines that plainly have no NVIDIA device: it costs time.
    if sys.platform != "linux" or os.path.exists("/dev/nvidiactl"):
        try:
            from cutile_lab.runtime.device import current_arch, gpu_available
            if gpu_available():
                arch = current_arch()
        except Exception:     # no runtime, no driver, a broken device: compile for sm_90
            arch = DEFAULT_ARCH
    _default_arch = arch
    return arch


def _arch_from_proc() -> str | None:
    """The GPUs' architecture from the driver's /proc files and the peaks table, without
    initialising CUDA (which costs a few hundred milliseconds); None when unsure."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") not in (None, ""):
        visible = os.environ["CUDA_VISIBLE_DEVICES"]
        if visible.strip() in ("-1", "none"):
            return None
    root = "/proc/driver/nvidia/gpus"
    try:
        entries = os.listdir(root)
    except OSError:
        return None
    models = set()
    for e in entries:
        try:
            with open(os.path.join(root, e, "information"), encoding="utf-8") as f:
                for line in f:
                    if line.startswith("Model:"):
                        models.add(line.split(":", 1)[1].strip())
        except OSError:
            return None
    if len(models) != 1:
        return None
    from cutile_lab.performance.peaks import lookup_device
    peaks = lookup_device(models.pop())
    if peaks is None or not peaks.compute_capability:
        return None
    return "sm_" + peaks.compute_capability.replace(".", "")


def _debug() -> bool:
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


# --- the cell magic -----------------------------------------------------------------------------

class _Outcome:
    __slots__ = ("name", "kernel", "compiled", "diagnostics", "notes", "status", "defined",
                 "sass", "sass_hint")

    def __init__(self, name, kernel):
        self.name = name
        self.kernel = kernel
        self.compiled = None
        self.diagnostics: list = []
        self.notes: list[str] = []
        self.status = "checked"
        self.defined = False
        self.sass = None
        self.sass_hint = None


def _unbound_generics(kernel, consts: dict) -> list[str]:
    out = []
    for g in kernel.const_generics:
        if g in consts:
            continue
        p = kernel.definition.param(g)
        if p is None or p.default is None:
            out.append(g)
    return out


def running_count(shell) -> int:
    """The execution count of the cell that is running, as the front end shows it (``[3]``).
    IPython 9 counts the cell before running it; IPython 8 after."""
    n = getattr(shell, "execution_count", None) or 0
    import IPython
    return max(0, n - 1) if IPython.version_info[0] >= 9 else n


def _cell_filename(shell, used: set) -> str:
    n = running_count(shell)
    name = f"<tilekernel-cell-{n}>"
    k = 1
    while name in used:
        k += 1
        name = f"<tilekernel-cell-{n}.{k}>"
    used.add(name)
    return name


def _cell_id(shell) -> str | None:
    """The front end's id of the running cell (JupyterLab and nbclient send it), or None."""
    kernel = getattr(shell, "kernel", None)
    try:
        parent = kernel.get_parent("shell") if kernel is not None else None
        cell_id = ((parent or {}).get("metadata") or {}).get("cellId")
        return str(cell_id) if cell_id else None
    except Exception:
        return None


def _compile_one(out: _Outcome, kernel, args, consts: dict, show: tuple[str, ...]) -> None:
    from cutile_lab.notebook.diagnostics import error_to_diagnostic
    try:
        compiled = kernel.compile(args.arch, use_cache=not args.no_cache, **consts)
    except KernelDiagnosticsError as e:
        out.diagnostics = list(e.diagnostics)
        out.status = "error"
        return
    except ToolchainError as e:
        out.notes.append(f"not compiled: {e.message}" + (f" ({e.help})" if e.help else "") +
                         "; the simulator backend can still run it")
        return
    except CutileLabError as e:
        out.diagnostics.append(error_to_diagnostic(e, kernel.definition.span))
        out.status = "error"
        return
    except Exception as e:    # a bug in the lab or in the compiler's Python front end
        if _debug():
            raise
        out.diagnostics.append(error_to_diagnostic(e, kernel.definition.span))
        out.notes.append(f"set {DEBUG_ENV}=1 to see the internal traceback")
        out.status = "error"
        return
    out.compiled = compiled
    out.status = "compiled"
    if "sass" in show:
        out.sass, out.sass_hint = sass_of(compiled)


def sass_of(compiled) -> tuple[str | None, str | None]:
    """(the SASS of a compiled kernel, or None and why). The SASS is kept in the compile
    cache, so only a kernel's first compile pays for the disassembler run."""
    try:
        text = compiled.sass
    except Exception as e:      # a broken disassembler: say so, keep the report
        return None, f"the disassembler failed: {e}"
    if text:
        return text, None
    from cutile_lab.compiling.toolchain import SASS_HINT
    return None, SASS_HINT


def _bind_backend(kernel, backend: str | None):
    """Make launches of ``kernel`` use ``backend`` ('sim'), whatever the session's default."""
    if backend != "sim":
        return kernel
    from cutile_lab.notebook.simkernel import SimKernel
    return SimKernel(kernel.definition, kernel.globals)


def _check(kernel, namespace) -> list:
    """Kernel-level diagnostics, with the notebook's names known to the unknown-name rule."""
    from cutile_lab.checking import check_kernel
    return list(check_kernel(kernel.definition, namespace))     # = kernel.check() here


def _run_top_level(shell, cell: str, filename: str, kernel_names: set):
    """Run the cell's statements other than its kernels (constants, imports, helpers) in the
    notebook's namespace, as Python would; a failure becomes a diagnostic at its line."""
    import ast
    from cutile_lab.diagnostics import Diagnostic, Span
    tree = ast.parse(cell, filename=filename)
    body = [n for n in tree.body
            if not (isinstance(n, ast.FunctionDef) and n.name in kernel_names)]
    if not body:
        return None
    try:
        exec(compile(ast.Module(body=body, type_ignores=[]), filename, "exec"), shell.user_ns)
    except Exception as e:
        import traceback
        line = None
        for frame in traceback.extract_tb(e.__traceback__):
            if frame.filename == filename:
                line = frame.lineno
        span = Span(filename, line, 0) if line else None
        return Diagnostic("CL011", "error", f"{type(e).__name__}: {e}", span,
                          help="the cell's code outside its kernels runs as ordinary Python "
                               "before the kernels are defined")
    return None


def run_tilekernel(shell, args, cell: str, *, filenames: set | None = None) -> list[_Outcome]:
    """The body of ``%%tilekernel``: parse, check, compile, define, report."""
    from cutile_lab.kernel import kernels_from_source
    from cutile_lab.notebook.diagnostics import error_to_diagnostic
    from cutile_lab.notebook.report import compile_report_bundle, publish

    show = parse_show(args.show)
    spec = parse_spec(args.spec)
    args.arch = parse_arch(args.arch)
    filename = _cell_filename(shell, filenames if filenames is not None else set())
    cell_id = _cell_id(shell)
    from cutile_lab.language.frontend import KernelSource
    source = KernelSource(cell, filename)

    try:
        # none is not an error yet: the cell's top level may make them (`f = ct.kernel(g)`)
        kernels = kernels_from_source(cell, filename, globals_=shell.user_ns, allow_empty=True)
    except CutileLabError as e:
        source.register()
        for name in _failed_names(cell):
            if name in shell.user_ns:
                shell.user_ns[name] = FailedKernel(name, filename)
        diag = error_to_diagnostic(e)
        publish(compile_report_bundle(None, None, [diag], source, arch=args.arch, show=show,
                                      cell_id=cell_id, status="error",
                                      cell_first_line=2))
        raise TileCellError(f"{e.message} (see the report above)") from None

    if args.kernel and args.kernel not in kernels:
        raise UsageError(f"--kernel: no kernel named {args.kernel!r} in this cell; "
                         f"kernels found: {', '.join(kernels)}")
    if spec:
        known = {g for k in kernels.values() for g in k.const_generics}
        unknown = [n for n in spec if n not in known]
        if unknown:
            raise UsageError(
                f"--spec: {', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not a "
                f"const generic of any kernel in this cell; const generics: "
                f"{', '.join(sorted(known)) or 'none'}")

    problem = _run_top_level(shell, cell, filename, set(kernels))
    if problem is None:
        # the cell's own top level (``ConstInt = ct.Constant[int]``) is now in the namespace:
        # constants are judged again by what their annotations evaluate to there
        import ast
        from cutile_lab.kernel import cutile_kernels_in
        from cutile_lab.language.constants import resolve_constants
        for k in kernels.values():
            resolve_constants(k.definition, k.globals)
        assigned = [t.id for n in ast.parse(cell).body if isinstance(n, ast.Assign)
                    for t in n.targets if isinstance(t, ast.Name)]
        for name, k in cutile_kernels_in(shell.user_ns, assigned, source).items():
            kernels.setdefault(name, k)        # `add = ct.kernel(add_impl)` in the cell
        if not kernels:
            from cutile_lab.kernel import no_kernel_error
            problem = error_to_diagnostic(no_kernel_error(filename))
    if problem is not None:
        publish(compile_report_bundle(None, None, [problem], source, arch=args.arch, show=show,
                                      cell_id=cell_id, status="error",
                                      cell_first_line=2))
        raise TileCellError(f"{problem.message} (see the report above)")

    outcomes: list[_Outcome] = []
    for name, kernel in kernels.items():
        out = _Outcome(name, kernel)
        outcomes.append(out)
        try:
            out.diagnostics = _check(kernel, shell.user_ns)
        except CutileLabError as e:
            out.diagnostics = [error_to_diagnostic(e, kernel.definition.span)]
        except Exception as e:
            if _debug():
                raise
            out.diagnostics = [error_to_diagnostic(e, kernel.definition.span)]
        if any(d.is_error for d in out.diagnostics):
            out.status = "error"
            continue
        consts = {k: v for k, v in spec.items() if k in kernel.const_generics}
        unbound = _unbound_generics(kernel, consts)
        if kernel.definition.kind == "cutile":
            out.notes.append("a plain cuTile kernel: it compiles at launch, when the types of "
                             "its arguments are known")
        elif unbound and args.sim:
            out.notes.append(f"{', '.join(unbound)} bound at launch from the partition's tile "
                             "shape; the simulator runs it without compiling (--spec "
                             f"{','.join(f'{u}=128' for u in unbound)} also compiles it now, "
                             "to show its Tile IR)")
        elif unbound:
            names = ", ".join(unbound)
            out.notes.append(f"will compile at launch: {names} "
                             f"{'is' if len(unbound) == 1 else 'are'} bound from the partition's "
                             f"tile shape (or compile now with --spec "
                             f"{','.join(f'{u}=128' for u in unbound)})")
        else:
            _compile_one(out, kernel, args, consts, show)
        if out.status != "error":
            if args.sim:
                out.notes.append("launches of this kernel run on the CPU simulator (--sim)")
            shell.user_ns[name] = _bind_backend(kernel, "sim" if args.sim else None)
            out.defined = True

    for out in outcomes:
        if out.status == "error":
            old = shell.user_ns.get(out.name)
            if old is not None and old is not out.kernel and hasattr(old, "definition"):
                out.notes.append(f"`{out.name}` is unusable until this cell compiles (the "
                                 f"kernel defined in {old.source.filename} is not used)")
            elif old is None:
                out.notes.append(f"`{out.name}` was not defined")
            if old is not None:
                shell.user_ns[out.name] = FailedKernel(out.name, filename)
        if args.kernel and out.name != args.kernel:
            continue
        publish(compile_report_bundle(out.compiled, out.kernel, out.diagnostics, source,
                                      arch=args.arch, show=show, notes=out.notes,
                                      cell_id=cell_id, status=out.status, sass=out.sass,
                                      sass_hint=out.sass_hint, cell_first_line=2))

    failed = [o for o in outcomes if o.status == "error"]
    if failed:
        n_err = sum(d.is_error for o in failed for d in o.diagnostics)
        names = ", ".join(f"`{o.name}`" for o in failed)
        raise TileCellError(f"{n_err} error{'s' * (n_err != 1)} in {names}; "
                            f"{'it was' if len(failed) == 1 else 'they were'} not defined "
                            "(see the report above)")
    return outcomes


@magics_class
class TileMagics(Magics):
    """The magics of ``%load_ext cutile_lab``."""

    def __init__(self, shell=None, **kwargs):
        super().__init__(shell=shell, **kwargs)
        self._filenames: set[str] = set()

    @magic_arguments()
    @argument("--arch", default=None, metavar="ARCH",
              help="target architecture, e.g. sm_90 or sm_100 (default: the GPU present, "
                   "else sm_90)")
    @argument("--spec", default=None, metavar="B=128,BK=64",
              help="compile now with these const generics; without it a kernel compiles now "
                   "only when it has no unbound const generics, else at launch")
    @argument("--show", default=None, metavar="SECTIONS",
              help="comma list of report sections: " + ",".join(SHOW_CHOICES) +
                   " (default: all available)")
    @argument("--sim", action="store_true",
              help="launches of this cell's kernels run on the CPU simulator")
    @argument("--no-cache", action="store_true", dest="no_cache",
              help="compile from scratch (ignore the compile cache)")
    @argument("--kernel", default=None, metavar="NAME",
              help="report only this kernel when the cell has several (all are defined)")
    @cell_magic
    def tilekernel(self, line: str, cell: str):
        """Check and compile the tile kernels of this cell and define them as launchable
        kernels in the notebook's namespace.

        Every top-level function whose parameters are typed ``Tensor[...]`` / ``Mut[...]``
        (and every ``@kernel`` function) is a kernel. Each is checked for the ownership
        discipline; a kernel with errors is reported at its line in this cell and is not
        defined. A kernel compiles now when its const generics are all known (``--spec``, or
        defaults); otherwise it compiles at launch. The report shows diagnostics first, then
        Tile IR linked to the source, resources, compile timings, remarks and SASS.

        Example::

            %%tilekernel --spec B=128
            def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
                z.store(load_tile_like(x, z) + load_tile_like(y, z))
        """
        args = parse_argstring(self.tilekernel, line)
        run_tilekernel(self.shell, args, cell, filenames=self._filenames)

    # --- line magics (implemented in notebook.timing / notebook.device_view) ----------------

    @magic_arguments()
    @argument("-n", "--repeats", type=int, default=20, help="timed runs (median reported)")
    @argument("-w", "--warmup", type=int, default=3, help="untimed warm-up runs")
    @argument("--flops", type=float, default=None, help="flops per run (default: derived "
                                                         "from the kernel)")
    @argument("--bytes", type=float, default=None, dest="bytes_",
              help="bytes moved per run (default: derived from the kernel)")
    @argument("--name", default=None, help="label of the measurement on plots")
    @argument("--precision", default=None, help="precision of the compute roof (default: "
                                                 "the kernel's widest input dtype)")
    @argument("expr", nargs="*", help="a launch (DeviceOp), a captured graph (cl.graph), or "
                                      "a callable returning a launch")
    @line_magic
    def tile_time(self, line: str):
        """Time a launch on the GPU and record it for ``%tile_roofline``.

        ``%tile_time [-n 20] [-w 3] [--flops N] [--bytes N] [--name LABEL] EXPR``

        EXPR is evaluated in the notebook's namespace: a launch such as
        ``add(z.partition([128]), x, y)``, a graph captured with ``cl.graph(...)`` (replayed
        once per run), or a callable that returns a launch. The launch runs
        ``-w`` times untimed and ``-n`` times between CUDA events; the median is reported
        with the bandwidth, flop rate and percent of the device's roof. Flops and bytes are
        derived from the kernel (tile loads and stores over the argument shapes, mma shapes
        times loop trips) unless given. Without a GPU the launch runs once in the simulator.
        """
        from cutile_lab.notebook.timing import run_tile_time
        opts, expr = split_line_options(line, self.tile_time)
        return run_tile_time(self.shell, opts, expr)

    @line_magic
    def tile_device(self, line: str = ""):
        """Show the GPU: name, SMs, clocks, datasheet peaks per precision and measured
        ceilings. Without a GPU, shows the H100's datasheet peaks as an example."""
        from cutile_lab.notebook.timing import run_tile_device
        run_tile_device(self.shell, line)

    @line_magic
    def tile_roofline(self, line: str = ""):
        """Draw the roofline of everything measured so far (``%tile_time``, ``sweep``)
        against the device's datasheet peaks and measured ceilings. ``%tile_roofline clear``
        forgets the measurements."""
        from cutile_lab.notebook.timing import run_tile_roofline
        return run_tile_roofline(self.shell, line)

    @line_magic
    def tile_diff(self, line: str = ""):
        """Compare two compiles of a kernel side by side: Tile IR diff, SASS diff, resources
        and compile times (what Compiler Explorer's diff view shows).

        ``%tile_diff KERNEL LEFT RIGHT``; each side is a comma list of const generics,
        ``arch=`` and compiler hints (``opt_level``, ``occupancy``, ``num_ctas``)::

            %tile_diff add B=128 B=256                     # two specializations
            %tile_diff add B=128,arch=sm_90 B=128,arch=sm_100   # two architectures
            %tile_diff add B=128 B=128,opt_level=1         # two option sets
        """
        from cutile_lab.notebook.compare import run_tile_diff
        run_tile_diff(self.shell, line)

    @line_magic
    def tile_bandwidth(self, line: str = ""):
        """Plot achieved bandwidth against bytes moved, one line per kernel, for everything
        measured so far, against the datasheet bandwidth and the measured copy ceiling."""
        from cutile_lab.notebook.timing import run_tile_bandwidth
        return run_tile_bandwidth(self.shell, line)


def split_line_options(line: str, magic_func) -> tuple[Any, str]:
    """Options at the start of ``line`` parsed with the magic's own parser; the rest, verbatim,
    is the expression (so quotes and spaces inside it are kept)."""
    parser = magic_func.parser
    flags_with_value = set()
    flags = set()
    for action in parser._actions:
        for s in action.option_strings:
            (flags_with_value if action.nargs != 0 else flags).add(s)
    def word(text: str) -> tuple[str, str]:
        """The first word of ``text`` (a quoted one keeps its spaces) and the rest."""
        text = text.lstrip()
        if text[:1] in ("'", '"'):
            end = text.find(text[0], 1)
            if end > 0:
                return text[1:end], text[end + 1:].lstrip()
        head, _, tail = text.partition(" ")
        return head, tail.lstrip()

    rest = line.strip()
    taken: list[str] = []
    while rest.startswith("-"):
        head, tail = word(rest)
        name = head.split("=", 1)[0]
        if name in flags:
            taken.append(head)
            rest = tail
        elif name in flags_with_value:
            if "=" in head:
                taken.append(head)
                rest = tail
            else:
                value, rest = word(tail)
                taken.extend([head, value])
        else:
            break
    try:
        opts = parser.parse_args(taken)
    except SystemExit:   # argparse already printed the problem
        raise UsageError(f"bad options: {' '.join(taken)}") from None
    if not rest:
        raise UsageError(f"%{magic_func.__name__}: give an expression to run, e.g. "
                         f"%{magic_func.__name__} add(z.partition([128]), x, y)")
    return opts, rest


_prewarm_thread = None


def _prewarm() -> None:
    """Import what a ``%%tilekernel`` cell needs and find the toolchain, off the main thread,
    while the user writes the first cell (a warm cell then costs milliseconds), and the
    compiler's front end last (``cuda.tile``, the slow part of a first compile).
    ``CUTILE_LAB_NO_PREWARM=1`` turns it off."""
    try:
        from cutile_lab.checking import check_kernel  # noqa: F401
        from cutile_lab.diagnostics import render  # noqa: F401
        from cutile_lab.compiling import cache, driver, lowering  # noqa: F401
        from cutile_lab.compiling.toolchain import toolchain_or_none
        from cutile_lab.notebook import diagnostics, highlight, report  # noqa: F401
        driver.cuda_tile_version()
        toolchain_or_none()
        cache.default_cache()
        default_arch()
        # check and lower a tiny kernel: loads the rule modules and compiles their regexes
        from cutile_lab.kernel import kernels_from_source
        k = kernels_from_source('def _prewarm(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'
                                '    z.store(load_tile_like(x, z) + 1.0)\n',
                                "<cutile-lab-prewarm>")["_prewarm"]
        k.check()
        lowering.lower(k.definition)
        # last, the compiler's front end: its import is the slow part of a first compile
        # (hundreds of milliseconds; more where it finds PyTorch to map dtypes from)
        import cuda.tile._compile  # noqa: F401
    except Exception:      # only a head start: the cell does (and reports) it all again
        pass


def wait_prewarm(timeout: float = 10.0) -> None:
    t = _prewarm_thread
    if t is not None and t.is_alive():
        t.join(timeout)


def load_ipython_extension(ipython) -> None:
    """Register the magics (``%load_ext cutile_lab`` calls this, then puts the language's names
    and ``cl`` in the user's namespace: ``cutile_lab.load_ipython_extension``)."""
    global _prewarm_thread
    ipython.register_magics(TileMagics)
    from cutile_lab.notebook.cuda_magic import CudaMagics
    ipython.register_magics(CudaMagics)
    from cutile_lab.notebook import launch_view, live
    launch_view.install(ipython)
    live.register(ipython)
    if _prewarm_thread is None and os.environ.get("CUTILE_LAB_NO_PREWARM", "") in ("", "0"):
        import threading
        _prewarm_thread = threading.Thread(target=_prewarm, name="cutile-lab-prewarm",
                                           daemon=True)
        _prewarm_thread.start()


def unload_ipython_extension(ipython) -> None:
    pass
