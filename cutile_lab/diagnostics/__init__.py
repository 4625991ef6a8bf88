"""Diagnostics: the values every stage reports problems with, and their rendering.

The leaf of the package: every stage (language, checking, compiling, runtime, simulation,
kernels, performance, notebook) imports it, and it imports none of them, nor
``cutile_lab.errors`` (whose exception classes carry its spans and render with it).

- ``values``: ``Span``, ``Label``, ``Diagnostic``, ``Severity`` and the order diagnostics are
  shown in (``sort_diagnostics``);
- ``codes``: the registry of stable codes (``CODES``), with each code's severity and title;
- ``explain``: the catalog of codes (``docs/diagnostics.md``) read as text, one entry per code,
  like ``rustc --explain``;
- ``render``: rustc-style text (plain or ANSI), self-contained HTML and JSON;
- ``suggest``: "did you mean ...?" for a misspelt name.

Running the catalog's examples through the pipeline is ``cutile_lab.catalog``'s job.
"""
from __future__ import annotations

from importlib import import_module

from cutile_lab.diagnostics.values import Diagnostic, Label, Severity, Span, sort_diagnostics

__all__ = ["CODES", "Code", "Diagnostic", "Label", "Severity", "Span", "render_html",
           "render_text", "sort_diagnostics", "to_json"]

# The registry and the renderer load on first use, so that `import cutile_lab` (which needs only
# the values) stays as cheap as it was.
_LAZY = {"CODES": "codes", "Code": "codes", "render_text": "render", "render_html": "render",
         "to_json": "render"}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
