"""The lab's exception classes, each with a stable code: ``CutileLabError`` and one subclass per
stage, plus ``LaunchWarning``.

The values they carry (``Span``, ``Diagnostic``) and the rendering of diagnostics as text, HTML
or JSON belong to ``cutile_lab.diagnostics``, which this module imports and which never imports
it.
"""
from __future__ import annotations

import linecache
from typing import Sequence

from cutile_lab.diagnostics.values import Diagnostic, Span


class CutileLabError(Exception):
    """Base of every error the lab raises on purpose. ``code`` is stable and documented."""

    code = "CL000"

    def __init__(self, message: str, *, help: str | None = None, span: Span | None = None):
        super().__init__(message)
        self.message = message
        self.help = help
        self.span = span

    def __str__(self) -> str:
        where = f"{self.span}: " if self.span else ""
        text = f"{where}{self.message}"
        if self.help:
            text += f"\n  help: {self.help}"
        return text

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of a traceback: the error is about the user's code, so
        the lab's own frames would only hide it."""
        return [f"{type(self).__name__}: {line}" if i == 0 else line
                for i, line in enumerate(str(self).splitlines() or [""])]


class KernelDiagnosticsError(CutileLabError):
    """A kernel (or a launch) has error diagnostics; they are in ``diagnostics``."""

    code = "CL001"

    def __init__(self, diagnostics: Sequence[Diagnostic], source_lookup=None):
        self.diagnostics = tuple(diagnostics)
        errors = [d for d in self.diagnostics if d.is_error]
        first = errors[0] if errors else self.diagnostics[0]
        super().__init__(f"{len(errors)} error(s); first: [{first.code}] {first.message}",
                         span=first.span, help=first.help)
        self._source_lookup = source_lookup

    def __str__(self) -> str:
        from cutile_lab.diagnostics.render import render_text   # loaded when first shown
        return render_text(self.diagnostics, self._source_lookup)


class LanguageError(CutileLabError):
    """Source that is not a tile kernel at all (no function, syntax error, unknown kernel name)."""

    code = "CL010"


class ToolchainError(CutileLabError):
    """The Tile IR toolchain (tileiras, tileirdisasm) is missing, mismatched or broken."""

    code = "CL020"


class CompileError(CutileLabError):
    """The compiler rejected a kernel; ``span`` is the user's own line where one is known."""

    code = "CL030"

    def __init__(self, message: str, *, span: Span | None = None, help: str | None = None,
                 compiler_output: str = "", stage: str = ""):
        super().__init__(message, span=span, help=help)
        self.compiler_output = compiler_output
        self.stage = stage


class CacheError(CutileLabError):
    """The compile cache cannot be used (its folder cannot be made or written); the compile
    itself is fine: set ``CUTILE_LAB_CACHE_DIR`` to a writable folder, or
    ``CUTILE_LAB_NO_CACHE=1``."""

    code = "CL040"


class LaunchError(CutileLabError):
    """A launch was refused before anything ran (bad arguments, no device, ownership)."""

    code = "CL050"


class TensorIndexError(LaunchError, IndexError):
    """An index a tensor cannot take (out of bounds, a string, a new axis): the lab's located
    error, and still an ``IndexError``, so ``except IndexError`` and iteration over a tensor
    (which ends on one) work as with any Python sequence."""


class NoDeviceError(LaunchError):
    """No GPU (or no usable driver) for work that needs one; ``cl.set_backend("sim")`` runs
    launches on the CPU simulator instead."""

    code = "CL051"


class SimulationError(CutileLabError):
    """The CPU simulator cannot run a kernel (an operation it does not model, a value it cannot
    compute); ``span`` is the kernel's line."""

    code = "CL060"


class SimulationProblemError(SimulationError):
    """The simulator found an error in a launch on the simulator backend (a race, an
    out-of-bounds access, a failed assert, a deadlock): ``.diagnostics`` holds them and
    ``.result`` the whole ``SimResult``."""

    code = "CL061"

    def __init__(self, message: str, diagnostics, result, **kw):
        super().__init__(message, **kw)
        self.diagnostics = diagnostics
        self.result = result


class TileCellError(Exception):
    """A notebook cell (``%%tilekernel``, ``%%cuda``, ``%tile_time``...) stopped on an error whose
    report is shown above it; the cell ends with this one line so that "Run All" stops there.

    Not a ``CutileLabError``: it carries no diagnostic of its own (the report above has them),
    and the notebook's handler for lab errors would show that report a second time."""

    code = "CL070"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def _render_traceback_(self) -> list[str]:   # IPython shows this instead of a traceback
        return [f"\x1b[0;31m{type(self).__name__}\x1b[0m: {self.message}"]


class LaunchWarning(UserWarning):
    """A launch that runs, but likely not as meant (a ``warning`` launch diagnostic such as
    TL120). Issued with ``warnings.warn_explicit`` at the user's launch line; its text is the
    rendered diagnostic, and ``diagnostic`` is the value (the notebook shows it as a panel)."""

    def __init__(self, diagnostic: Diagnostic):
        super().__init__(f"[{diagnostic.code}] {diagnostic.message}")
        self.diagnostic = diagnostic

    def __str__(self) -> str:
        from cutile_lab.diagnostics.render import render_text
        try:
            return render_text([self.diagnostic],
                               lambda f, n: linecache.getline(f, n).rstrip("\r\n"))
        except Exception:       # the value is what matters; the text is a nicety
            return self.args[0]


def error_code_text(code: str) -> str | None:
    """What a ``CLxxx`` code (an error class's, as in ``error[CL050]: ...``) means: each class
    of the lab that carries it, with its description; None for any other code. Classes of the
    stages loaded so far are found (``import cutile_lab`` loads them all)."""
    code = code.strip().upper()
    if not code.startswith("CL"):
        return None
    found, todo = [], [CutileLabError, TileCellError]
    while todo:
        cls = todo.pop(0)
        todo.extend(cls.__subclasses__())
        if getattr(cls, "code", None) == code and cls not in found:
            found.append(cls)
    if not found:
        return None
    import inspect
    out = [f"{code}: an error of the lab (not a checker diagnostic: its message and help line "
           "say what was wrong and what to do)", ""]
    for cls in found:
        doc = " ".join((inspect.getdoc(cls) or "").split("\n\n")[0].split())
        out.append(f"- {cls.__name__}: {doc}" if doc else f"- {cls.__name__}")
    return "\n".join(out) + "\n"
