"""Fixtures of the CUDA C++ tests: the runtime tests' (simulator/GPU backends, a clean ownership
registry, GPU tests skipped without a GPU) and a compile cache of the test's own."""
import pytest

from tests.runtime.conftest import (_clean_ownership, gpu, gpu_present,  # noqa: F401
                                    pytest_collection_modifyitems, rng, sim)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A fresh, empty disk cache for this test."""
    monkeypatch.setenv("CUTILE_LAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUTILE_LAB_NO_CACHE", raising=False)
    return tmp_path / "cache"
