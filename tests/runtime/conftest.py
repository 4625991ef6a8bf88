"""Fixtures of the runtime tests: the simulator backend for CPU tests, a GPU check for GPU tests,
and a clean ownership registry around every test."""
import functools

import pytest


@functools.lru_cache(maxsize=1)
def gpu_present() -> bool:
    try:
        from cuda.core import Device
        Device(0).set_current()
        return True
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if gpu_present():
        return
    skip = pytest.mark.skip(reason="no GPU found (cuda.core sees no device)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def gpu():
    """Run on the GPU backend (the test is marked gpu and skipped without one)."""
    if not gpu_present():
        pytest.skip("no GPU")
    import cutile_lab as cl
    cl.set_backend("gpu")
    yield
    cl.synchronize()
    cl.set_backend(None)


@pytest.fixture
def sim():
    """Run on the simulator backend."""
    import cutile_lab as cl
    cl.set_backend("sim")
    yield
    cl.set_backend(None)


@pytest.fixture(autouse=True)
def _clean_ownership():
    from cutile_lab.runtime import ownership
    ownership._reset_for_tests()
    yield
    ownership._reset_for_tests()


@pytest.fixture
def rng():
    import numpy as np
    return np.random.default_rng()
