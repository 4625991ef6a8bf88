"""The public face of a kernel: ``@cl.kernel`` on a function in a ``.py`` file, or
``kernels_from_source(text)`` for a notebook cell. A ``Kernel`` checks, compiles and launches.

Also owns loading a file of kernels (``load_kernels``): its top level runs the way ``import``
runs it, so module constants, aliases (``ConstInt = ct.Constant[int]``), imports and
``@ct.function`` helpers are the kernels' globals, exactly as cuTile Python sees them; and the
namespace of a kernel made from a function (``cl.kernel(fn)``, ``ct.kernel(fn)``): its module
globals with its closure's free variables in front, as Python resolves them.
"""
from __future__ import annotations

import collections
import inspect
import os
import sys
import textwrap
import traceback
import types
from typing import Any, Mapping

from cutile_lab.diagnostics import Diagnostic, Span
from cutile_lab.errors import LanguageError
from cutile_lab.language.constants import resolve_constants
from cutile_lab.language.frontend import KernelDef, KernelSource, parse_kernels
from cutile_lab.runtime.callsite import user_call_site
from cutile_lab.runtime.launch import launch_op, set_kernel_adapter
from cutile_lab.simulation.adapters import FUNCTION_KERNEL



class Kernel:
    """A tile kernel. Calling it with arguments builds a lazy launch (a ``DeviceOp``)."""

    def __init__(self, definition: KernelDef, globals_: Mapping[str, Any] | None = None):
        self.definition = definition
        self.globals = globals_ if globals_ is not None else {}
        resolve_constants(definition, self.globals)
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
                options: Mapping | None = None, use_cache: bool = True,
                cached_only: bool = False, **consts: int):
        """Compile for ``arch`` with const generics given as keywords (``B=128``);
        ``cached_only=True``: the cached compile, or None (nothing is compiled)."""
        from cutile_lab.compiling.driver import compile_kernel
        return compile_kernel(self.definition, arch, consts=consts, layouts=layouts,
                              options=options, globals_=self.globals, use_cache=use_cache,
                              cached_only=cached_only)

    def __call__(self, *args, **kwargs):
        return launch_op(self, args, kwargs)

    def __repr__(self) -> str:
        params = ", ".join(p.name for p in self.definition.params)
        return f"<tile kernel {self.name}({params}) from {self.source.filename}>"


def kernel(fn=None, /, **options):
    """Decorator: ``@cl.kernel`` or ``@cl.kernel(occupancy=2)`` on a function in a file."""
    if fn is None:
        return lambda f: kernel(f, **options)
    if isinstance(fn, Kernel):
        return fn
    if _is_cutile_kernel(fn):                  # cl.kernel(ct.kernel(f)): the function inside
        options = {**_cutile_options(fn), **options}
        fn = fn._pyfunc
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
    return Kernel(kdef, function_namespace(fn))


def as_kernel(obj) -> Kernel:
    """The lab's ``Kernel`` of a cuTile kernel object (made once and kept on it), or ``obj``
    itself when it is one already."""
    if isinstance(obj, Kernel):
        return obj
    if _is_cutile_kernel(obj):
        k = getattr(obj, "_cutile_lab_kernel", None)
        if k is None:
            k = kernel(obj)
            try:
                obj._cutile_lab_kernel = k
            except AttributeError:
                pass
        return k
    raise LanguageError(f"cannot launch {type(obj).__name__}: not a kernel",
                        help="launch a @ct.kernel or @cl.kernel function")


set_kernel_adapter(as_kernel)      # cl.launch(ct_kernel, ...): the runtime asks this module
FUNCTION_KERNEL[0] = kernel        # simulate(fn, ...): the simulator asks this module


def function_namespace(fn) -> Mapping[str, Any]:
    """The names a function's body sees: its closure's free variables first, then its module's
    globals (a live view of them, as Python's own lookup is)."""
    free = {}
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                free[name] = cell.cell_contents
            except ValueError:      # a free variable not bound yet
                pass
    return collections.ChainMap(free, fn.__globals__) if free else fn.__globals__


def _is_cutile_kernel(obj) -> bool:
    return type(obj).__module__ == "cuda.tile._execution" and hasattr(obj, "_pyfunc")


def _cutile_options(k) -> dict:
    """The hints given to ``ct.kernel(fn, occupancy=2, ...)`` that differ from cuTile's defaults."""
    import dataclasses
    opts = getattr(k, "_compiler_options", None)
    if opts is None or not dataclasses.is_dataclass(opts):
        return {}
    defaults = {"opt_level": 3}
    return {f.name: getattr(opts, f.name) for f in dataclasses.fields(opts)
            if getattr(opts, f.name) is not None
            and getattr(opts, f.name) != defaults.get(f.name)
            and isinstance(getattr(opts, f.name), int)}


def kernels_from_source(text: str, filename: str = "<source>", *,
                        globals_: Mapping[str, Any] | None = None,
                        line_offset: int = 0, allow_empty: bool = False) -> dict[str, Kernel]:
    """Every kernel in ``text`` (every top-level function with Tensor/Mut parameters, and any
    ``@kernel``/``@ct.kernel`` function), by name. ``allow_empty``: none is not an error (a
    notebook cell whose kernels are made by its top level: ``add = ct.kernel(add_impl)``)."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise LanguageError(f"the source is bytes that are not UTF-8 text ({e.reason} at "
                                f"byte {e.start})", span=user_call_site(),
                                help="pass the kernels' source as a str") from None
    if not isinstance(text, str):
        raise LanguageError(f"kernels_from_source takes the source text, not "
                            f"{type(text).__name__}", span=user_call_site(),
                            help='pass a str, e.g. cl.kernels_from_source(open("k.py").read())')
    source = KernelSource(text, filename, line_offset)
    source.register()
    defs = parse_kernels(source, all_functions=True)
    if not defs and allow_empty:
        return {}
    if not defs:
        raise LanguageError(
            f"no kernel in {filename}",
            help='write a function whose parameters are typed, e.g. '
                 'def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]): ...')
    return {d.name: Kernel(d, globals_) for d in defs}


def load_kernels(path: str) -> dict[str, Kernel]:
    """Every kernel in a ``.py`` file, by name, with the file's top level run as ``import`` runs
    it (under its own module name, not ``__main__``, so a script's ``if __name__ ==
    "__main__":`` part does not run; the file's folder is on ``sys.path`` meanwhile, so sibling
    imports work). Kernels are ``@cl.kernel``/``@ct.kernel`` functions, ``name =
    ct.kernel(fn)`` assignments (by the assigned name) and tile-language functions.

    A top level that fails raises ``LanguageError`` at the failing line of the file."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise LanguageError(f"cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise LanguageError(f"cannot read {path}: it is not UTF-8 text (byte {e.start} is "
                            f"{e.object[e.start:e.start + 1]!r})",
                            help="a file of kernels is Python source, saved as UTF-8") from None
    source = KernelSource(text, path)
    defs = {d.name: d for d in parse_kernels(source, all_functions=True)}   # syntax errors
    # a file of tile-language kernels may leave the language's names to the lab, as a
    # %%tilekernel cell does
    preload = any(d.kind == "tile" for d in defs.values())
    module = run_module(text, path, language_names=preload)
    return kernels_of_module(module.__dict__, source, defs)


def run_module(text: str, path: str, *, language_names: bool = False) -> types.ModuleType:
    """Run a file's top level in a fresh module, as ``import`` does; errors located.
    ``language_names``: the tile language's names (``Mut``, ``Tensor``, ``f32``...) are
    there before the file runs."""
    name = "_cutile_lab_loaded_" + "".join(c if c.isalnum() else "_" for c in
                                            os.path.splitext(os.path.basename(path))[0])
    module = types.ModuleType(name)
    module.__file__ = os.path.abspath(path)
    if language_names:
        from cutile_lab import lang
        module.__dict__.update({n: getattr(lang, n) for n in lang.__all__})
    folder = os.path.dirname(os.path.abspath(path))
    code = compile(text, path, "exec")
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    sys.modules[name] = module          # dataclasses and pickling look modules up by name
    try:
        exec(code, module.__dict__)
    except Exception as e:
        raise _top_level_error(e, path) from None
    finally:
        if added and folder in sys.path:
            sys.path.remove(folder)
    return module


def _top_level_error(e: Exception, path: str) -> LanguageError:
    frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == path]
    where = frames[-1] if frames else None
    span = Span(path, where.lineno, 0) if where is not None else Span(path, 1, 0)
    return LanguageError(
        f"running the top level of {os.path.basename(path)} failed: {type(e).__name__}: {e}",
        span=span, help="a file of kernels is run as `import` runs it; fix this line (or guard "
                        "host-only code with `if __name__ == \"__main__\":`)")


def _same_file(a: str, b: str) -> bool:
    return a == b or os.path.abspath(a) == os.path.abspath(b)


def cutile_kernels_in(namespace: Mapping[str, Any], names, source: KernelSource,
                      defs: Mapping[str, KernelDef] | None = None) -> dict[str, Kernel]:
    """The kernels among ``names`` of ``namespace`` that ``source`` defines: ``@cl.kernel``
    functions and cuTile kernel objects (``@ct.kernel`` and ``name = ct.kernel(fn, ...)``)."""
    defs = defs or {}
    out: dict[str, Kernel] = {}
    for name in names:
        value = namespace.get(name)
        if isinstance(value, Kernel) and _same_file(value.source.filename, source.filename):
            out[name] = value
        elif _is_cutile_kernel(value):
            fn = value._pyfunc
            if getattr(fn, "__code__", None) is None or \
                    not _same_file(fn.__code__.co_filename, source.filename):
                continue                      # imported from elsewhere
            kdef = defs.get(fn.__name__)
            if kdef is None or kdef.kind != "cutile":
                [kdef] = parse_kernels(source, only=fn.__name__, all_functions=True)
            kdef.options.update(_cutile_options(value))
            out[name] = Kernel(kdef, function_namespace(fn))
    return out


def kernels_of_module(namespace: Mapping[str, Any], source: KernelSource,
                      defs: Mapping[str, KernelDef]) -> dict[str, Kernel]:
    """The kernels a module's namespace holds after its top level ran."""
    out = cutile_kernels_in(namespace, namespace.keys(), source, defs)
    for name, kdef in defs.items():
        if name not in out and not any(k.definition.name == name for k in out.values()):
            fn = namespace.get(name)
            if kdef.kind == "tile" and (fn is None or inspect.isfunction(fn)):
                out[name] = Kernel(kdef, namespace)
    if not out:
        raise no_kernel_error(source.filename)
    return out


def no_kernel_error(filename: str, line: int = 1) -> LanguageError:
    return LanguageError(
        f"no kernel in {filename}", span=Span(filename, line, 0),
        help="decorate a kernel with @ct.kernel (a plain cuTile Python kernel) or @cl.kernel "
             "(the tile language), or write a function whose parameters are typed, e.g. "
             'def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]): ...')
