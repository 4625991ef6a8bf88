"""Which parameters of a plain cuTile Python kernel are compile-time constants.

cuTile decides it by what a parameter's annotation *evaluates to*: ``ct.Constant[int]`` is
``Annotated[int, ConstantAnnotation()]``, and so is any alias of it (``ConstInt =
ct.Constant[int]``, ``ConstBool``, ``ConstFloat``...). This module owns that one predicate
(``is_constant_annotation``) and the evaluation of a kernel's annotations in the namespace the
kernel was defined in (module globals, closures, a notebook's namespace), for the lowering, the
launch, the simulator and the checker alike. It must not compile, launch or simulate.
"""
from __future__ import annotations

import ast
import typing
from typing import Any, Mapping

__all__ = ["is_constant_annotation", "evaluate_annotation", "constant_parameters",
           "resolve_constants"]

_UNRESOLVED = object()


def is_constant_annotation(obj: Any) -> bool:
    """True when ``obj`` (an evaluated annotation) marks a compile-time constant:
    ``Annotated[T, ConstantAnnotation()]`` with cuTile's or the simulator's
    ``ConstantAnnotation`` (``ct.Constant[int]`` and any alias of it), the lab's own
    ``Const[int]``, however it is spelt in the source."""
    if isinstance(obj, tuple) and len(obj) == 2 and obj[0] == "Const":     # cl.Const[int]
        return True
    if typing.get_origin(obj) is typing.Annotated:                          # ct.Constant[int]
        return any(type(m).__name__ == "ConstantAnnotation"
                   for m in getattr(obj, "__metadata__", ()))
    return type(obj).__name__ == "ConstantAnnotation"


def _fallback_names() -> dict[str, Any]:
    """What an annotation may name when the kernel's namespace is not known (a kernel read from
    text alone): cuTile itself under its usual spellings."""
    import cuda.tile as ct
    return {"ct": ct, "cuda": __import__("cuda"), "Constant": ct.Constant}


def evaluate_annotation(node: ast.AST, namespace: Mapping[str, Any] | None) -> Any:
    """The value of an annotation expression in ``namespace`` (and cuTile's names as a last
    resort); ``None`` when it cannot be evaluated (a name that is not defined)."""
    text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) \
        else ast.unparse(node)
    scope: dict[str, Any] = _fallback_names()
    if namespace:
        scope.update(namespace)
    try:
        return eval(compile(text, "<annotation>", "eval"), {"__builtins__": __builtins__},
                    scope)
    except Exception:
        return _UNRESOLVED


def constant_parameters(node: ast.FunctionDef, namespace: Mapping[str, Any] | None) -> set[str]:
    """The parameters of a plain cuTile kernel's ``def`` that are compile-time constants.

    An annotation that cannot be evaluated (its name is not defined where the kernel lives) is
    judged by its text as a last resort, so that a kernel read without its module still treats
    ``ct.Constant[int]`` as a constant."""
    out = set()
    for a in node.args.args + node.args.kwonlyargs:
        if a.annotation is None:
            continue
        value = evaluate_annotation(a.annotation, namespace)
        if value is _UNRESOLVED:
            if "Constant" in ast.unparse(a.annotation):
                out.add(a.arg)
        elif is_constant_annotation(value):
            out.add(a.arg)
    return out


def resolve_constants(kdef, namespace: Mapping[str, Any] | None) -> None:
    """Mark the constant parameters of a plain cuTile ``KernelDef`` (role ``"const"``), by what
    their annotations evaluate to in ``namespace``."""
    if kdef.kind != "cutile":
        return
    consts = constant_parameters(kdef.node, namespace)
    for p in kdef.params:
        if p.name in consts:
            p.role = "const"
        elif p.role == "const":
            p.role = "shared"
