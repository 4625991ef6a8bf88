"""Which annotations mark a compile-time constant parameter, decided by what the annotation *is*
(``ct.Constant[int]``, any alias of it such as ``ConstInt = ct.Constant[int]``, the lab's own
``Const[int]``), never by how it is spelled."""
from __future__ import annotations

import typing


def is_constant_annotation(obj) -> bool:
    """Whether the evaluated annotation ``obj`` marks a compile-time constant."""
    if isinstance(obj, tuple) and len(obj) == 2 and obj[0] == "Const":   # cl.Const[int]
        return True
    if typing.get_origin(obj) is typing.Annotated:                        # ct.Constant[int]
        return any(type(m).__name__ == "ConstantAnnotation"
                   for m in getattr(obj, "__metadata__", ()))
    return type(obj).__name__ == "ConstantAnnotation"
