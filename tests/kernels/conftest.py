"""Fixtures of the kernel library's tests."""
import pytest

import cutile_lab as cl


@pytest.fixture
def sim():
    """Run on the simulator backend."""
    cl.set_backend("sim")
    yield
    cl.set_backend(None)
