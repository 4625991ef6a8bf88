import pytest


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """Each compile test gets its own empty disk cache, and the memory cache is cleared."""
    monkeypatch.setenv("CUTILE_LAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUTILE_LAB_NO_CACHE", raising=False)
    from cutile_lab.compiling import cache
    cache.default_cache().forget_memory()
    yield
    cache.default_cache().forget_memory()
