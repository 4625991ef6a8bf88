import numpy as np
import pytest

# Per-dtype tolerances against float64 references: (rtol, atol)
TOL = {
    np.dtype(np.float64): (1e-12, 1e-12),
    np.dtype(np.float32): (2e-6, 2e-6),
    np.dtype(np.float16): (2e-3, 2e-3),
}


@pytest.fixture
def rng(request):
    """Fresh random inputs each run; the seed is printed (and shown when a test fails)."""
    seed = int(np.random.SeedSequence().entropy % (2 ** 32))
    print(f"random seed: {seed}")
    request.node.user_properties.append(("seed", seed))
    return np.random.default_rng(seed)


def assert_close(got, ref, dtype=None, *, rtol=None, atol=None):
    dtype = np.dtype(dtype or got.dtype)
    r, a = TOL[dtype]
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), ref,
                               rtol=rtol if rtol is not None else r,
                               atol=atol if atol is not None else a)
