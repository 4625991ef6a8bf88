"""Every kernel of the good corpus also lowers to valid cuTile Python, and (where cuTile is
installed) goes through cuTile's front end to Tile IR bytecode: the checker's idea of a good
kernel and the compiler's agree."""
from __future__ import annotations

import ast

import pytest

from cutile_lab.compiling.lowering import lower
from cutile_lab.language.frontend import KernelSource, parse_kernels

from tests.checking.corpus import GOOD


def _kdef(name):
    source = KernelSource(GOOD[name], f"<good {name}>")
    source.register()
    [k] = parse_kernels(source, all_functions=True)
    return k


@pytest.mark.parametrize("name", sorted(GOOD))
def test_good_kernels_lower(name):
    k = _kdef(name)
    low = lower(k)
    ast.parse(low.text)
    assert len(low.text.splitlines()) >= len(GOOD[name].splitlines())


@pytest.mark.parametrize("name", sorted(n for n in GOOD if not n.startswith("cutile")))
def test_good_kernels_compile_to_bytecode(name):
    pytest.importorskip("cuda.tile")
    from cutile_lab.compiling import driver
    from cutile_lab.compiling.specialization import make_specialization
    k = _kdef(name)
    consts = {g: 64 for g in k.const_generics if not (k.param(g) and k.param(g).default)}
    spec = make_specialization(k, consts)
    # the module-level names the kernel may read: run the text's top-level statements
    tree = ast.parse(GOOD[name])
    namespace: dict = {}
    for stmt in tree.body:
        if not isinstance(stmt, ast.FunctionDef):
            exec(compile(ast.Module([stmt], []), "<module>", "exec"), namespace)
    bytecode, symbol, params = driver._bytecode(k, lower(k), spec, {}, namespace, None)
    assert bytecode and symbol
