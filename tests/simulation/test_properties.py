"""Property tests: any ragged launch covers its output exactly once, with the right values."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cutile_lab.simulation import simulate
from tests.simulation.kernels import kernel

POW2 = st.sampled_from([1, 2, 4, 8, 16, 32])


@settings(max_examples=30, deadline=None)
@given(m=st.integers(1, 70), n=st.integers(1, 70), bm=POW2, bn=POW2, seed=st.integers(0, 2**32 - 1))
def test_ragged_2d_launch_writes_each_element_once(m, n, bm, bn, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, n)).astype(np.float32)
    y = rng.standard_normal((m, n)).astype(np.float32)
    z = np.full((m, n), np.nan, np.float32)
    grid = (-(-m // bm), -(-n // bn))
    r = simulate(kernel("add2d"), [z, x, y], grid, {"BM": bm, "BN": bn})
    assert r.diagnostics == [] and r.conflicts == {}
    np.testing.assert_array_equal(z, x + y)
    rows, cols = np.indices((m, n))
    np.testing.assert_array_equal(r.ownership["z"], (rows // bm) * grid[1] + cols // bn)
    assert sum(w["z"] for w in r.writes_by_tile.values()) == m * n


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 3000), b=st.sampled_from([16, 64, 128, 1024]),
       shift=st.integers(-3, 3))
def test_wrong_grid_is_seen(n, b, shift):
    """Too small a grid leaves elements unwritten; too large one stores wholly outside."""
    x = np.ones(n, np.float32)
    need = -(-n // b)
    g = max(1, need + shift)
    r = simulate(kernel("add"), [np.zeros(n, np.float32), x, x], (g,), {"B": b})
    written = int((r.ownership["z"] >= 0).sum())
    assert written == min(n, g * b)
    codes = set(r.codes())
    assert ("SIM001" in codes) == (g > need)      # loads wholly outside x
    assert ("SIM002" in codes) == (g > need)      # stores wholly outside z
    assert ("SIM030" in codes) == (g != need)
