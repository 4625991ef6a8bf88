"""Diagnostics as values: where (``Span``), what else is involved (``Label``), and the
diagnostic itself (code, severity, message, primary span, labelled secondary spans, help,
notes), plus the order they are shown in.

Every stage reports problems with these; none of them knows how a diagnostic is rendered
(``render``) or which codes exist (``codes``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Literal

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


def sort_diagnostics(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Errors first, then warnings, then notes; each in source order."""
    rank = {"error": 0, "warning": 1, "note": 2}
    return sorted(diags, key=lambda d: (rank.get(d.severity, 3),
                                        d.span.filename if d.span else "",
                                        d.span.line if d.span else 0,
                                        d.span.col if d.span else 0))
