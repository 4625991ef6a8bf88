"""The body of ``%%tilekernel``: a cell's kernels checked, compiled when their const generics
are known, defined in the notebook's namespace, and reported one by one.

Owns the cell's steps -- parse (a cell that is not Python, or holds no kernel, is one error
report), run the cell's other top-level code, check each kernel, compile it (or say when it
will compile), bind it to the simulator under ``--sim``, define it or mark its name unusable
(``FailedKernel``), then publish one report per kernel -- and ``TileCellError``, the one-line
error that ends a failed cell so "Run All" stops there. The stages do the work (``kernel``,
``checking``, ``compiling``); reports are ``notebook.report``'s.
"""
from __future__ import annotations

import builtins

import os
from typing import NamedTuple

from IPython.core.error import UsageError

from cutile_lab.errors import (CutileLabError, KernelDiagnosticsError, TileCellError,
                               ToolchainError)
from cutile_lab.notebook.cells import cell_filename, cell_id
from cutile_lab.notebook.options import parse_arch, parse_show, parse_spec

DEBUG_ENV = "CUTILE_LAB_DEBUG"


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


def _holds_a_kernel(value) -> bool:
    """Whether a name holds a kernel (the lab's, a %%cuda cell's, a cuTile one, or an earlier
    failure), which a failed cell marks unusable; anything else is the user's own data or
    function and is left as it was."""
    if value is None or isinstance(value, FailedKernel) or hasattr(value, "definition"):
        return value is not None
    module = type(value).__module__ or ""
    return callable(value) and module.split(".")[0] in ("cutile_lab", "cuda")


def _failed_names(cell: str) -> list[str]:
    """The kernels a cell that could not be parsed as kernels was defining (its ``def`` names)."""
    import re
    return re.findall(r"^def\s+([A-Za-z_]\w*)\s*\(", cell, flags=re.MULTILINE)


def _debug() -> bool:
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


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


class _CellReport(NamedTuple):
    """What every report of one cell shares."""
    arch: str
    show: tuple[str, ...]
    cell_id: str | None


def _parse_cell(shell, cell: str, source, ctx: _CellReport) -> dict:
    """The cell's kernels by name; a cell that does not parse is one error report, and the
    kernels it was defining become unusable."""
    from cutile_lab.kernel import kernels_from_source
    from cutile_lab.notebook.diagnostics import error_to_diagnostic
    filename = source.filename
    try:
        # none is not an error yet: the cell's top level may make them (`f = ct.kernel(g)`)
        return kernels_from_source(cell, filename, globals_=shell.user_ns, allow_empty=True)
    except CutileLabError as e:
        source.register()
        for name in _failed_names(cell):
            if _holds_a_kernel(shell.user_ns.get(name)):
                shell.user_ns[name] = FailedKernel(name, filename)
        _fail(error_to_diagnostic(e), source, ctx)


def _fail(diag, source, ctx: _CellReport):
    """Publish a cell-level error as the cell's one report and end the cell."""
    from cutile_lab.notebook.report import compile_report_bundle, publish
    publish(compile_report_bundle(None, None, [diag], source, arch=ctx.arch,
                                  show=ctx.show, cell_id=ctx.cell_id, status="error",
                                  cell_first_line=2))
    raise TileCellError(f"{diag.message} (see the report above)") from None


def _check_options(args, spec: dict, kernels: dict) -> None:
    """``--kernel`` names a kernel of the cell; ``--spec`` only const generics it has."""
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


def _after_top_level(shell, cell: str, source, kernels: dict):
    """Run the cell's top level; then its constants are judged again by what their
    annotations evaluate to, and kernels it made (``add = ct.kernel(add_impl)``) join.
    Returns the diagnostic that stops the cell, or None."""
    import ast

    from cutile_lab.kernel import cutile_kernels_in, no_kernel_error
    from cutile_lab.language.constants import resolve_constants
    from cutile_lab.notebook.diagnostics import error_to_diagnostic
    problem = _run_top_level(shell, cell, source.filename, set(kernels))
    if problem is not None:
        return problem
    for k in kernels.values():
        resolve_constants(k.definition, k.globals)
    assigned = [t.id for n in ast.parse(cell).body if isinstance(n, ast.Assign)
                for t in n.targets if isinstance(t, ast.Name)]
    for name, k in cutile_kernels_in(shell.user_ns, assigned, source).items():
        kernels.setdefault(name, k)
    return error_to_diagnostic(no_kernel_error(source.filename)) if not kernels else None


def _when_compiled(kernel, unbound: list[str], sim: bool) -> str | None:
    """Why a kernel does not compile now (a note), or None when it does."""
    fill = ",".join(f"{u}=128" for u in unbound)
    if kernel.definition.kind == "cutile":
        return ("a plain cuTile kernel: it compiles at launch, when the types of its "
                "arguments are known")
    if unbound and sim:
        return (f"{', '.join(unbound)} bound at launch from the partition's tile shape; the "
                f"simulator runs it without compiling (--spec {fill} also compiles it now, "
                "to show its Tile IR)")
    if unbound:
        return (f"will compile at launch: {', '.join(unbound)} "
                f"{'is' if len(unbound) == 1 else 'are'} bound from the partition's tile "
                f"shape (or compile now with --spec {fill})")
    return None


def _check_and_compile(shell, name: str, kernel, args, spec: dict, show) -> _Outcome:
    """Check one kernel, compile it when its const generics are known, and define it."""
    from cutile_lab.notebook.diagnostics import error_to_diagnostic
    out = _Outcome(name, kernel)
    try:
        out.diagnostics = _check(kernel, shell.user_ns)
    except Exception as e:
        if _debug() and not isinstance(e, CutileLabError):
            raise
        out.diagnostics = [error_to_diagnostic(e, kernel.definition.span)]
    if any(d.is_error for d in out.diagnostics):
        out.status = "error"
        return out
    consts = {k: v for k, v in spec.items() if k in kernel.const_generics}
    note = _when_compiled(kernel, _unbound_generics(kernel, consts), args.sim)
    if note:
        out.notes.append(note)
    else:
        _compile_one(out, kernel, args, consts, show)
    if out.status != "error":
        if args.sim:
            out.notes.append("launches of this kernel run on the CPU simulator (--sim)")
        shell.user_ns[name] = _bind_backend(kernel, "sim" if args.sim else None)
        out.defined = True
        if hasattr(builtins, name):
            out.notes.append(f"`{name}` now names this kernel in the notebook, hiding "
                             f"Python's builtin `{name}`: rename the kernel, or `del {name}` "
                             "to get the builtin back")
    return out


def _publish_outcomes(shell, outcomes: list[_Outcome], args, source,
                      ctx: _CellReport) -> None:
    """One report per kernel (``--kernel``: only that one's); a failed kernel's name is
    marked unusable, and its note says what became of the name."""
    from cutile_lab.notebook.report import compile_report_bundle, publish
    for out in outcomes:
        if out.status == "error":
            old = shell.user_ns.get(out.name)
            if old is not None and old is not out.kernel and hasattr(old, "definition"):
                out.notes.append(f"`{out.name}` is unusable until this cell compiles (the "
                                 f"kernel defined in {old.source.filename} is not used)")
            elif old is None:
                out.notes.append(f"`{out.name}` was not defined")
            if _holds_a_kernel(old):
                shell.user_ns[out.name] = FailedKernel(out.name, source.filename)
            elif old is not None:
                out.notes.append(f"`{out.name}` was not defined: it still holds your "
                                 f"{type(old).__name__}, as before this cell")
        if args.kernel and out.name != args.kernel:
            continue
        publish(compile_report_bundle(out.compiled, out.kernel, out.diagnostics, source,
                                      arch=ctx.arch, show=ctx.show, notes=out.notes,
                                      cell_id=ctx.cell_id, status=out.status,
                                      sass=out.sass, sass_hint=out.sass_hint,
                                      cell_first_line=2))


def run_tilekernel(shell, args, cell: str, *, filenames: set | None = None) -> list[_Outcome]:
    """The body of ``%%tilekernel``: parse, check, compile, define, report."""
    from cutile_lab.language.frontend import KernelSource
    spec = parse_spec(args.spec)
    args.arch = parse_arch(args.arch)
    ctx = _CellReport(args.arch, parse_show(args.show), cell_id(shell))
    source = KernelSource(cell, cell_filename(shell, filenames if filenames is not None
                                              else set()))
    kernels = _parse_cell(shell, cell, source, ctx)
    _check_options(args, spec, kernels)
    problem = _after_top_level(shell, cell, source, kernels)
    if problem is not None:
        _fail(problem, source, ctx)
    outcomes = [_check_and_compile(shell, name, kernel, args, spec, ctx.show)
                for name, kernel in kernels.items()]
    _publish_outcomes(shell, outcomes, args, source, ctx)
    failed = [o for o in outcomes if o.status == "error"]
    if failed:
        n_err = sum(d.is_error for o in failed for d in o.diagnostics)
        names = ", ".join(f"`{o.name}`" for o in failed)
        raise TileCellError(f"{n_err} error{'s' * (n_err != 1)} in {names}; "
                            f"{'it was' if len(failed) == 1 else 'they were'} not defined "
                            "(see the report above)")
    return outcomes
