"""A ``%%tilekernel`` cell of plain cuTile Python follows the rules of a loaded file: names of
earlier cells and of the cell's own top level are the kernels' globals, constants are judged
by what their annotations evaluate to, and ``name = ct.kernel(fn)`` defines a kernel."""
import numpy as np

from cutile_lab.kernel import Kernel

CELL = '''import cuda.tile as ct
ConstInt = ct.Constant[int]

def _double(x, out, TILE: ConstInt):
    t = ct.load(x, index=(ct.bid(0),), shape=(TILE,), padding_mode=PAD)
    ct.store(out, index=(ct.bid(0),), tile=helper(t))

double = ct.kernel(_double)
'''


def test_plain_cell_sees_earlier_cells_and_its_own_top_level(shell):
    first = shell.run("import cuda.tile as ct\nPAD = ct.PaddingMode.ZERO\n"
                      "@ct.function\ndef helper(t):\n    return t * 2\n")
    assert first.ok, first.error
    cell = shell.run("%%tilekernel\n" + CELL)
    assert cell.ok, cell.error
    k = shell.ns["double"]
    assert isinstance(k, Kernel) or hasattr(k, "_pyfunc")
    import cutile_lab as cl
    lab_kernel = k if isinstance(k, Kernel) else cl.kernel(k)
    assert [p.role for p in lab_kernel.definition.params][-1] == "const"
    from cutile_lab.simulation import simulate
    x = np.random.default_rng().standard_normal(200).astype(np.float32)
    out = np.zeros_like(x)
    r = simulate(lab_kernel, [x, out], grid=(4,), consts={"TILE": 64})
    assert not r.errors
    np.testing.assert_allclose(out, 2 * x, rtol=1e-6)
