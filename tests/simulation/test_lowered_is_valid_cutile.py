"""The simulator runs the lowered text; cuTile's own front end must accept that same text."""
import pytest

from tests.simulation.kernels import kernel

pytest.importorskip("cuda.tile")

CASES = {
    "add": {"B": 128}, "add2d": {"BM": 32, "BN": 32}, "softmax": {"N": 256},
    "softmax_ragged": {"BN": 256}, "layernorm": {"N": 128}, "rmsnorm": {"N": 128},
    "gemm_f16": {"BM": 64, "BN": 64, "BK": 32}, "gemm_f32": {"BM": 64, "BN": 64, "BK": 32},
    "row_stats": {"BM": 16, "N": 64}, "row_cumsum": {"N": 64}, "racy": {"B": 128},
    "histogram": {"B": 128}, "scatter_oob": {"B": 128},
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cutile_front_end_accepts_lowered_kernel(name):
    from cutile_lab.compiling.driver import _bytecode
    from cutile_lab.compiling.lowering import lower
    from cutile_lab.compiling.specialization import make_specialization
    kdef = kernel(name).definition
    spec = make_specialization(kdef, CASES[name])
    bytecode, symbol, _params = _bytecode(kdef, lower(kdef), spec, {}, {}, None)
    assert len(bytecode) > 100 and symbol
