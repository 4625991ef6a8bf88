"""The code a simulated kernel runs: the lowered cuTile Python text (exactly what
``cutile_lab.compiling.lowering.lower`` gives the compiler), compiled once per kernel and cached,
the lines of its ``with unsafe():`` blocks, and the kernel function made from it in a namespace
where ``cuda.tile`` is the simulator's ``ct`` (also inside the helpers a plain cuTile kernel
calls).
"""
from __future__ import annotations

import __future__
import ast
import inspect
import types
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Mapping

from cutile_lab.errors import SimulationError
from cutile_lab.simulation.namespace import kernel_builtins


@dataclass
class Program:
    """A lowered kernel, its compiled code object and the source lines of its unsafe blocks."""

    lowered: Any
    code: Any
    unsafe_lines: tuple[tuple[int, int], ...]


_PROGRAMS: "OrderedDict[tuple, Program]" = OrderedDict()


def program_of(kdef) -> Program:
    """The lowered kernel and its compiled code object (cached by source text)."""
    src = kdef.source
    key = (src.filename, src.line_offset, src.text, kdef.name, kdef.kind)
    prog = _PROGRAMS.get(key)
    if prog is not None:
        _PROGRAMS.move_to_end(key)
        return prog
    from cutile_lab.compiling.lowering import lower
    lowered = lower(kdef)
    try:
        code = compile(lowered.text, lowered.filename, "exec",
                       flags=__future__.annotations.compiler_flag, dont_inherit=True)
    except SyntaxError as e:   # the frontend accepted it, so this is a lowering bug
        raise SimulationError(f"the lowered kernel does not compile: {e.msg}",
                              span=lowered.user_span(e.lineno or 1, (e.offset or 1) - 1)) \
            from None
    unsafe = []
    for n in ast.walk(kdef.node):
        if isinstance(n, ast.With) and any(_is_unsafe(i.context_expr) for i in n.items):
            unsafe.append((n.lineno + src.line_offset, n.end_lineno + src.line_offset))
    prog = Program(lowered, code, tuple(unsafe))
    _PROGRAMS[key] = prog
    if len(_PROGRAMS) > 64:
        _PROGRAMS.popitem(last=False)
    return prog


def _is_unsafe(expr) -> bool:
    target = expr.func if isinstance(expr, ast.Call) else expr
    return (isinstance(target, ast.Name) and target.id == "unsafe") or \
        (isinstance(target, ast.Attribute) and target.attr == "unsafe")


def kernel_function(program: Program, kdef, globals_: Mapping[str, Any], ns, launch):
    """The kernel as a Python function of the lowered text, run against the namespace ``ns``."""
    lowered = program.lowered
    namespace: dict[str, Any] = rebind_globals(globals_, ns, {})
    for k, v in kernel_builtins(launch).items():
        namespace.setdefault(k, v)
    namespace.update({"ct": ns, "__name__": f"cutile_lab.simulated.{kdef.name}"})
    import linecache
    linecache.cache[lowered.filename] = (len(lowered.text), None,
                                         lowered.text.splitlines(keepends=True),
                                         lowered.filename)
    exec(program.code, namespace)
    return namespace[kdef.name]


def _is_cuda_tile(v) -> bool:
    return isinstance(v, types.ModuleType) and v.__name__ == "cuda.tile"


def rebind_globals(globals_: Mapping[str, Any], ns, memo: dict) -> dict[str, Any]:
    """The kernel's module globals with ``cuda.tile`` replaced by the simulator's ``ct``, also
    inside the helper functions (``@ct.function``) a plain cuTile kernel calls."""
    out = dict(globals_)
    for k, v in out.items():
        if not k.startswith("__"):
            out[k] = _rebind_value(v, ns, memo)
    return out


def _rebind_value(v, ns, memo: dict, depth: int = 0):
    """``v`` with ``cuda.tile`` replaced by the simulator's ``ct``: the module itself, a
    function (helpers), and functions kept in tuples, lists and dicts (tables of
    ``@ct.function``s that kernels pick with ``ct.static_eval``)."""
    if _is_cuda_tile(v):
        return ns
    if isinstance(v, types.FunctionType):
        if (v.__module__ or "").startswith("cuda.tile") and hasattr(ns, v.__name__):
            return getattr(ns, v.__name__)          # `from cuda.tile import load`
        return _rebind_function(v, ns, memo)
    if depth < 3 and type(v) in (tuple, list, dict) and len(v) <= 256:
        items = v.items() if type(v) is dict else enumerate(v)
        new = {k: _rebind_value(x, ns, memo, depth + 1) for k, x in items}
        if all(new[k] is x for k, x in (v.items() if type(v) is dict else enumerate(v))):
            return v
        return new if type(v) is dict else type(v)(new[i] for i in range(len(v)))
    return v


def _rebind_function(f, ns, memo: dict):
    base = inspect.unwrap(f)
    module = getattr(base, "__module__", None) or ""
    if not isinstance(base, types.FunctionType) or module == "builtins" or \
            module.startswith(("cutile_lab.", "numpy", "cuda.")):
        return f
    g = base.__globals__
    device_only = getattr(f, "_cutile_function_wrapper", False)     # @ct.function
    if not device_only and not any(
            _is_cuda_tile(v) or (isinstance(v, types.FunctionType)
                                 and (v.__module__ or "").startswith("cuda.tile"))
            for v in g.values()):
        return f
    key = id(base)
    if key in memo:
        return memo[key]
    new_globals = dict(g)
    clone = types.FunctionType(base.__code__, new_globals, base.__name__, base.__defaults__,
                               base.__closure__)
    clone.__kwdefaults__ = base.__kwdefaults__
    memo[key] = clone
    for name in _names_used(base.__code__):
        if name in g:
            new_globals[name] = _rebind_value(g[name], ns, memo)
    return clone


def _names_used(code) -> set[str]:
    """Global names a function's code reads, nested code (comprehensions, lambdas) included."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _names_used(c)
    return names

