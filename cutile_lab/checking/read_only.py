"""Which array parameters of a plain cuTile Python kernel are proven to be only read.

A plain kernel's signature does not say what it writes, so the launch treats every array as
possibly written (a mutable borrow) unless this pass proves otherwise. The proof is syntactic
and conservative: a parameter is read-only when every use of it in the body is the array of a
read (``ct.load``, ``ct.gather``, ``ct.num_tiles``, ``ct.load_advanced_indexing``) or one of its
attributes ``shape``/``dtype``/``ndim``/``strides``, and the name is never rebound. Any other use
(passed to a helper, aliased, sliced, a tiled view, raw memory, a store or an atomic) leaves it
"possibly written". It must not compile, launch or touch a device.
"""
from __future__ import annotations

import ast

from cutile_lab.language.frontend import KernelDef

__all__ = ["read_only_parameters"]

_READS = {"load", "gather", "num_tiles", "load_advanced_indexing"}
_ATTRIBUTES = {"shape", "dtype", "ndim", "strides"}
_CT = {"ct", "cuda_tile", "tile"}


def read_only_parameters(kdef: KernelDef) -> frozenset[str]:
    """The parameters of ``kdef`` (a plain cuTile kernel) that the body provably only reads."""
    cached = kdef.__dict__.get("_read_only")
    if cached is not None and cached[0] is kdef.node:
        return cached[1]
    names = {p.name for p in kdef.params if p.role != "const"}
    proven = names - _possibly_written(kdef.node, names)
    result = frozenset(proven)
    kdef.__dict__["_read_only"] = (kdef.node, result)
    return result


def _possibly_written(fn: ast.FunctionDef, names: set[str]) -> set[str]:
    allowed: set[int] = set()        # ids of Name nodes whose use is a read
    bad: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) \
                and node is not fn:
            bad |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in names}
        elif isinstance(node, ast.Call) and _is_read(node):
            arr = node.args[0] if node.args else next(
                (k.value for k in node.keywords if k.arg == "array"), None)
            if isinstance(arr, ast.Name):
                allowed.add(id(arr))
        elif isinstance(node, ast.Attribute) and node.attr in _ATTRIBUTES \
                and isinstance(node.value, ast.Name):
            allowed.add(id(node.value))
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id in names:
            if not isinstance(node.ctx, ast.Load) or id(node) not in allowed:
                bad.add(node.id)
        elif isinstance(node, ast.arg) and node.arg in names and node not in fn.args.args:
            bad.add(node.arg)
    return bad


def _is_read(call: ast.Call) -> bool:
    f = call.func
    return isinstance(f, ast.Attribute) and f.attr in _READS and \
        isinstance(f.value, ast.Name) and f.value.id in _CT
