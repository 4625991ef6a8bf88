"""Error classes with stable codes, and the source spans and diagnostics every stage reports with.

Owns: ``Span`` (a place in the user's own file or notebook cell), ``Diagnostic`` (a value:
code, severity, message, primary span, labelled secondary spans, help) and the exception
hierarchy (``CutileLabError`` and one subclass per stage). Rendering diagnostics as text, HTML or
JSON belongs to ``cutile_lab.checking.render``; this module only holds the data.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Sequence

Severity = Literal["error", "warning", "note"]


@dataclass(frozen=True)
class Span:
    """A range in the user's source. Lines are 1-based, columns 0-based (as in ``ast``)."""

    filename: str
    line: int
    col: int = 0
    end_line: int | None = None
    end_col: int | None = None

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.col + 1}"

    @classmethod
    def of_node(cls, node, filename: str, line_offset: int = 0) -> "Span":
        """The span of an ``ast`` node parsed from text that starts at ``line_offset + 1``."""
        end_line = getattr(node, "end_lineno", None)
        return cls(filename, node.lineno + line_offset, node.col_offset,
                   None if end_line is None else end_line + line_offset,
                   getattr(node, "end_col_offset", None))


@dataclass(frozen=True)
class Label:
    """A secondary span with a short explanation, like rustc's ``-- value moved here``."""

    span: Span
    message: str


@dataclass(frozen=True)
class Diagnostic:
    code: str
    severity: Severity
    message: str
    span: Span | None
    labels: tuple[Label, ...] = ()
    help: str | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def is_error(self) -> bool:
        return self.severity == "error"


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
        from cutile_lab.checking.render import render_text
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
    code = "CL040"


class LaunchError(CutileLabError):
    """A launch was refused before anything ran (bad arguments, no device, ownership)."""

    code = "CL050"


class NoDeviceError(LaunchError):
    code = "CL051"


class SimulationError(CutileLabError):
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
        import linecache
        from cutile_lab.checking.render import render_text
        try:
            return render_text([self.diagnostic],
                               lambda f, n: linecache.getline(f, n).rstrip("\r\n"))
        except Exception:       # the value is what matters; the text is a nicety
            return self.args[0]
