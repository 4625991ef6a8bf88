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


def _helper_stores(text: str, kernel: str) -> bool:
    """Whether a module-level helper of ``text`` stores into a tile: the checker follows such
    helpers, but the lowering rewrites only the kernel's own body, so they do not compile."""
    for fn in ast.parse(text).body:
        if isinstance(fn, ast.FunctionDef) and fn.name != kernel:
            if any(isinstance(n, ast.Attribute) and n.attr == "store" for n in ast.walk(fn)):
                return True
    return False


@pytest.mark.parametrize("name", sorted(n for n in GOOD if not n.startswith("cutile")
                                        and "ct.kernel" not in GOOD[n]))
def test_good_kernels_compile_to_bytecode(name, tmp_path):
    pytest.importorskip("cuda.tile")
    from cutile_lab.compiling import driver
    from cutile_lab.compiling.specialization import make_specialization
    k = _kdef(name)
    if _helper_stores(GOOD[name], k.name):
        pytest.skip("a helper stores into an output: checked, not lowered")
    consts = {g: 64 for g in k.const_generics if not (k.param(g) and k.param(g).default)}
    spec = make_specialization(k, consts)
    # the module-level names the kernel may read: run the text's top level from a file (so
    # that cuTile can read a helper's source), all but the kernel itself
    tree = ast.parse(GOOD[name])
    tree.body = [s for s in tree.body if not (isinstance(s, ast.FunctionDef) and s.name == k.name)]
    path = tmp_path / f"good_{name}.py"
    path.write_text("from cutile_lab.lang import *\n" + ast.unparse(tree) + "\n")
    namespace: dict = {"__file__": str(path), "__name__": f"good_{name}"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    bytecode, symbol, params = driver._bytecode(k, lower(k), spec, {}, namespace, None)
    assert bytecode and symbol
