"""Where the user is: the first stack frame outside cutile_lab, as a ``Span``.

Every ownership error names the user's own line (where a tensor was moved, where an in-flight
op was launched), never a line inside the lab.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import sys

from cutile_lab.diagnostics import Span

# frames in these files are the lab's (or the event loop's), never the user's
_INTERNAL_PREFIXES = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep
                           for m in (sys.modules["cutile_lab"], asyncio)) + \
    (os.path.abspath(contextlib.__file__),)


def user_site(depth: int = 1) -> tuple | None:
    """Where the first caller outside cutile_lab is, cheaply, for the hot path: (filename, code,
    instruction offset) of its frame. The line is found from them only when a message needs it
    (``as_span``): a frame's ``f_lineno`` scans its code's line table from the start on every
    call, which costs more the longer the user's function or cell."""
    try:
        f = sys._getframe(depth)
    except ValueError:
        return None
    prefixes = _INTERNAL_PREFIXES
    while f is not None:
        code = f.f_code
        if not code.co_filename.startswith(prefixes):
            return code.co_filename, code, f.f_lasti
        f = f.f_back
    return None


def site_line(code, offset: int) -> int | None:
    """The line of the instruction at byte ``offset`` of ``code`` (what the frame's
    ``f_lineno`` says while it runs that instruction)."""
    for start, end, line in code.co_lines():
        if start <= offset < end:
            return line
    return code.co_firstlineno


def as_span(site) -> Span | None:
    """A ``Span`` of a site: ``user_site``'s (filename, code, offset), a (filename, line), or a
    ``Span`` already."""
    if site is None or isinstance(site, Span):
        return site
    if len(site) == 3:
        return Span(site[0], site_line(site[1], site[2]))
    return Span(site[0], site[1])


def user_call_site(depth: int = 1) -> Span | None:
    """The span (file, line) of the first caller outside cutile_lab."""
    return as_span(user_site(depth + 1))


def describe(span) -> str:
    if span is None:
        return "<unknown>"
    if isinstance(span, tuple):
        span = as_span(span)
    return f"{span.filename}:{span.line}"


def source_line(span: Span | None) -> str:
    if span is None:
        return ""
    import linecache
    return linecache.getline(span.filename, span.line).strip()


__all__ = ["user_call_site", "describe", "source_line", "site_line"]


def user_name_of(obj) -> str | None:
    """The name the user's frame binds to ``obj`` (for messages; error paths only)."""
    try:
        f = sys._getframe(1)
    except ValueError:
        return None
    while f is not None and f.f_code.co_filename.startswith(_INTERNAL_PREFIXES):
        f = f.f_back
    if f is None:
        return None
    for scope in (f.f_locals, f.f_globals):
        for k, v in list(scope.items()):
            if v is obj and not k.startswith("_"):
                return k
    return None
