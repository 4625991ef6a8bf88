"""How library kernels are written: tile-language source templates, one per kernel family,
instantiated per dtype (``{dt}``) and compiled like any user kernel, with positions in this
package's own files so that diagnostics and Tile IR locations point at the library source."""
from __future__ import annotations

import functools
import inspect

from cutile_lab.kernel import Kernel, kernels_from_source


class KernelTemplate:
    """A kernel's source with ``{dt}`` (and other) placeholders, as written in a library file."""

    def __init__(self, text: str, filename: str, line_offset: int, defaults: dict | None = None):
        self.text = text
        self.defaults = dict(defaults or {})
        self.filename = filename
        self.line_offset = line_offset

    def kernel(self, **subs: str) -> Kernel:
        """The kernel for these substitutions; ``hints`` (the decorator's extra options, as
        ``tuning.hints_text`` writes them) defaults to none."""
        return self._kernel(**{"hints": "", **self.defaults, **subs})

    @functools.lru_cache(maxsize=None)
    def _kernel(self, **subs: str) -> Kernel:
        text = self.text.format(**subs)
        [kernel] = kernels_from_source(text, self.filename, line_offset=self.line_offset,
                                       globals_={}).values()
        return kernel


def template(text: str, **defaults: str) -> KernelTemplate:
    """Record ``text`` with the file and line it was written at; ``defaults`` fill placeholders
    a caller leaves out (so that a template can grow a placeholder without changing its
    callers)."""
    caller = inspect.stack()[1]
    filename = caller.filename
    with open(filename, encoding="utf-8") as f:
        source = f.read()
    start = source.find(text)
    line_offset = source.count("\n", 0, start) if start >= 0 else 0
    return KernelTemplate(text, filename, line_offset, defaults)
