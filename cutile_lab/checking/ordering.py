"""The order diagnostics are shown in: errors, then warnings, then notes, each in source order.
Every pass and the launch checks sort with it, so a report reads the same wherever it came from.
"""
from __future__ import annotations

from cutile_lab.errors import Diagnostic


def sort_diagnostics(diags) -> list[Diagnostic]:
    """Errors first, then warnings, then notes; each in source order."""
    rank = {"error": 0, "warning": 1, "note": 2}
    return sorted(diags, key=lambda d: (rank.get(d.severity, 3),
                                        d.span.filename if d.span else "",
                                        d.span.line if d.span else 0,
                                        d.span.col if d.span else 0))
