"""The public face of a kernel: ``@cl.kernel`` on a function in a ``.py`` file, or
``kernels_from_source(text)`` for a notebook cell. A ``Kernel`` checks, compiles and launches.
"""
from __future__ import annotations

import inspect
import textwrap
from typing import Any, Mapping

from cutile_lab.errors import Diagnostic, LanguageError
from cutile_lab.language.frontend import KernelDef, KernelSource, parse_kernels


_LAUNCH_OP: list = [None]


class Kernel:
    """A tile kernel. Calling it with arguments builds a lazy launch (a ``DeviceOp``)."""

    def __init__(self, definition: KernelDef, globals_: Mapping[str, Any] | None = None):
        self.definition = definition
        self.globals = globals_ if globals_ is not None else {}
        self._compiled: dict = {}

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def const_generics(self) -> list[str]:
        return list(self.definition.const_generics)

    @property
    def source(self) -> KernelSource:
        return self.definition.source

    def check(self) -> list[Diagnostic]:
        """Kernel-level ownership diagnostics (no GPU, no specialisation needed)."""
        from cutile_lab.checking import check_kernel
        return check_kernel(self.definition, self.globals)

    def lowered_source(self) -> str:
        from cutile_lab.compiling.lowering import lower
        return lower(self.definition).text

    def compile(self, arch: str = "sm_90", *, layouts: Mapping | None = None,
                options: Mapping | None = None, use_cache: bool = True, **consts: int):
        """Compile for ``arch`` with const generics given as keywords (``B=128``)."""
        from cutile_lab.compiling.driver import compile_kernel
        return compile_kernel(self.definition, arch, consts=consts, layouts=layouts,
                              options=options, globals_=self.globals, use_cache=use_cache)

    def __call__(self, *args, **kwargs):
        launch_op = _LAUNCH_OP[0]
        if launch_op is None:       # imported once: an import statement costs a microsecond
            from cutile_lab.runtime.launch import launch_op
            _LAUNCH_OP[0] = launch_op
        return launch_op(self, args, kwargs)

    def __repr__(self) -> str:
        params = ", ".join(p.name for p in self.definition.params)
        return f"<tile kernel {self.name}({params}) from {self.source.filename}>"


def kernel(fn=None, /, **options):
    """Decorator: ``@cl.kernel`` or ``@cl.kernel(occupancy=2)`` on a function in a file."""
    if fn is None:
        return lambda f: kernel(f, **options)
    if not inspect.isfunction(fn):
        raise LanguageError("@cl.kernel goes on a function definition")
    try:
        lines, start = inspect.findsource(fn)
    except OSError:
        raise LanguageError(f"cannot read the source of `{fn.__name__}`",
                            help="define kernels in a .py file or a notebook %%tilekernel "
                                 "cell, or use cl.kernels_from_source(text)") from None
    block = inspect.getblock(lines[start:])
    text = textwrap.dedent("".join(block))
    source = KernelSource(text, inspect.getsourcefile(fn) or fn.__code__.co_filename, start)
    [kdef] = parse_kernels(source, only=fn.__name__, all_functions=True)
    kdef.options.update(options)
    return Kernel(kdef, fn.__globals__)


def kernels_from_source(text: str, filename: str = "<source>", *,
                        globals_: Mapping[str, Any] | None = None,
                        line_offset: int = 0) -> dict[str, Kernel]:
    """Every kernel in ``text`` (every top-level function with Tensor/Mut parameters, and any
    ``@kernel``/``@ct.kernel`` function), by name."""
    source = KernelSource(text, filename, line_offset)
    source.register()
    defs = parse_kernels(source, all_functions=True)
    if not defs:
        raise LanguageError(
            f"no kernel in {filename}",
            help='write a function whose parameters are typed, e.g. '
                 'def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]): ...')
    return {d.name: Kernel(d, globals_) for d in defs}


def load_kernels(path: str) -> dict[str, Kernel]:
    """Every kernel in a ``.py`` file, without importing it."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise LanguageError(f"cannot read {path}: {e.strerror}") from None
    return kernels_from_source(text, path)
