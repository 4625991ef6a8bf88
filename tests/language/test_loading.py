"""Loading plain cuTile Python files as ``import`` does: module constants, aliases, NumPy,
``@ct.function`` helpers and ``name = ct.kernel(fn)`` are what the kernels see; constants are
recognised by what their annotations evaluate to."""
import textwrap

import numpy as np
import pytest

import cuda.tile as ct
import cutile_lab as cl
from cutile_lab.errors import LanguageError
from cutile_lab.language.constants import is_constant_annotation
from cutile_lab.simulation import simulate

SAMPLE = textwrap.dedent('''\
    import math

    import cuda.tile as ct
    import numpy as np

    ConstInt = ct.Constant[int]
    ConstFloat = ct.Constant[float]
    Flag = ct.Constant[bool]
    PAD_ZERO = ct.PaddingMode.ZERO
    INV_LOG_2 = 1 / math.log(2)


    @ct.function
    def twice(t):
        return t * 2


    @ct.kernel
    def vector_add(a, b, c, TILE: ConstInt):
        bid = ct.bid(0)
        ta = ct.load(a, index=(bid,), shape=(TILE,), padding_mode=PAD_ZERO)
        tb = ct.load(b, index=(bid,), shape=(TILE,), padding_mode=PAD_ZERO)
        ct.store(c, index=(bid,), tile=twice(ta) + tb * np.float32(INV_LOG_2))


    def _scale(x, y, alpha: ConstFloat, NEG: Flag, TILE: ConstInt = 64):
        t = ct.load(x, index=(ct.bid(0),), shape=(TILE,))
        ct.store(y, index=(ct.bid(0),), tile=-t * alpha if NEG else t * alpha)


    scale = ct.kernel(_scale, occupancy=2)

    if __name__ == "__main__":
        raise SystemExit("the main block must not run when the file is loaded")
    ''')


@pytest.fixture
def sample(tmp_path):
    path = tmp_path / "kernels.py"
    path.write_text(SAMPLE)
    return path


def test_is_constant_annotation_by_value():
    ConstInt = ct.Constant[int]
    assert is_constant_annotation(ct.Constant[int]) and is_constant_annotation(ConstInt)
    assert is_constant_annotation(ct.Constant[float]) and is_constant_annotation(ct.Constant[bool])
    assert not is_constant_annotation(int) and not is_constant_annotation(ct.Array)
    assert not is_constant_annotation("Constant")


def test_load_runs_the_top_level_and_finds_every_form(sample):
    kernels = cl.load_kernels(str(sample))
    assert sorted(kernels) == ["scale", "vector_add"]
    add, scale = kernels["vector_add"], kernels["scale"]
    assert [p.role for p in add.definition.params] == ["shared", "shared", "shared", "const"]
    assert {p.name for p in scale.definition.params if p.role == "const"} == \
        {"alpha", "NEG", "TILE"}
    assert scale.definition.options.get("occupancy") == 2
    assert add.check() == [] or not any(d.is_error for d in add.check())


def test_loaded_kernels_simulate_with_their_module_globals(sample):
    kernels = cl.load_kernels(str(sample))
    rng = np.random.default_rng()
    a, b = rng.standard_normal(300).astype(np.float32), rng.standard_normal(300).astype(np.float32)
    c = np.zeros_like(a)
    r = simulate(kernels["vector_add"], [a, b, c], grid=(5,), consts={"TILE": 64})
    assert not r.errors
    np.testing.assert_allclose(c, 2 * a + b * np.float32(1 / np.log(2)), rtol=1e-6)
    y = np.zeros_like(a)
    r = simulate(kernels["scale"], [a, y], grid=(5,), consts={"alpha": 0.5, "NEG": True})
    assert not r.errors
    np.testing.assert_allclose(y, -0.5 * a, rtol=1e-6)


def test_a_failing_top_level_is_a_located_error(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("import cuda.tile as ct\nConstInt = ct.Constant[int]\nX = undefined_name\n")
    with pytest.raises(LanguageError) as e:
        cl.load_kernels(str(path))
    assert e.value.span.line == 3 and "NameError" in e.value.message
    path.write_text("import cuda.tile as ct\n")
    with pytest.raises(LanguageError, match="no kernel"):
        cl.load_kernels(str(path))


def test_tile_language_files_still_load(tmp_path):
    path = tmp_path / "tl.py"
    path.write_text("from cutile_lab.lang import *\n\n"
                    "def add(z: Mut[Tensor[f32, 'B']], x: Tensor[f32, '?']):\n"
                    "    z.store(load_tile_like(x, z))\n")
    [k] = cl.load_kernels(str(path)).values()
    assert k.definition.kind == "tile" and k.const_generics == ["B"]
    # the language's names may be left to the lab, as in a %%tilekernel cell
    path.write_text(path.read_text().split("\n", 2)[2])
    [k] = cl.load_kernels(str(path)).values()
    assert k.definition.kind == "tile" and not any(d.is_error for d in k.check())


def test_launch_treats_arrays_only_read_as_shared(sample):
    from cutile_lab.checking.read_only import read_only_parameters
    kernels = cl.load_kernels(str(sample))
    assert read_only_parameters(kernels["vector_add"].definition) == {"a", "b"}
    assert read_only_parameters(kernels["scale"].definition) == {"x"}
    cl.set_backend("sim")
    try:
        rng = np.random.default_rng()
        host = rng.standard_normal(256).astype(np.float32)
        x = cl.from_numpy(host).sync()
        c1, c2 = cl.zeros(256).sync(), cl.zeros(256).sync()
        # the same input twice, and a second launch reading it while the first is in
        # flight: not a conflict, because `a` and `b` are proven only read
        pending = kernels["vector_add"](x, x, c1, 64, grid=(4,)).start()
        kernels["vector_add"](x, x, c2, 64, grid=(4,)).sync()
        pending.wait()
        # but an array the kernel writes is still a mutable borrow: TL104
        pending = kernels["vector_add"](x, x, c1, 64, grid=(4,)).start()
        with pytest.raises(cl.OwnershipError) as e:
            kernels["vector_add"](c1, x, c2, 64, grid=(4,)).sync()
        assert [d.code for d in e.value.diagnostics] == ["TL104"]
        pending.wait()
        np.testing.assert_allclose(c2.to_numpy(), 2 * host + host * np.float32(1 / np.log(2)),
                                   rtol=1e-6)
    finally:
        cl.set_backend(None)
