"""The compile cache: keys, memory and disk layers, damage, versions, concurrency, settings."""
from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from cutile_lab.compiling import cache as cache_mod
from cutile_lab.compiling.cache import CompileCache, default_cache, default_cache_dir, make_key
from cutile_lab.errors import CacheError

ENTRY = {"name": "add", "arch": "sm_90", "toolchain_version": "13.4.92", "resources": {"registers": 10}}
BLOBS = {"cubin": b"\x7fELF" + bytes(range(256)) * 40, "bytecode": b"TileIR\x00" * 100}


@pytest.fixture
def cache(tmp_path) -> CompileCache:
    return CompileCache(tmp_path / "cache", disk=True)


def _fresh(cache: CompileCache) -> CompileCache:
    """Another process's view of the same folder: nothing in memory."""
    return CompileCache(cache.path, disk=True)


def _entry_dir(cache: CompileCache, key: str) -> Path:
    return cache.root / key[:2] / key


# ----------------------------------------------------------------------------- keys

def test_keys_are_canonical():
    a = make_key(source="x", arch="sm_90", spec={"B": 128, "BK": 64}, opts=(1, 2))
    b = make_key(opts=[1, 2], spec={"BK": 64, "B": 128}, arch="sm_90", source="x")
    assert a == b and len(a) == 64 and int(a, 16) >= 0
    assert a != make_key(source="x", arch="sm_80", spec={"B": 128, "BK": 64}, opts=(1, 2))
    assert make_key(blob=b"abc") != make_key(blob=b"abd")
    assert make_key(p=Path("/a")) == make_key(p="/a")
    assert make_key(s={3, 1, 2}) == make_key(s=[1, 2, 3])


def test_keys_refuse_values_without_a_stable_form():
    with pytest.raises(CacheError):
        make_key(thing=object())


# ----------------------------------------------------------------------------- get / put

def test_round_trip_memory_then_disk(cache):
    key = make_key(k=1)
    assert cache.get(key, "13.4.92") is None
    cache.put(key, ENTRY, BLOBS)
    hit = cache.get(key, "13.4.92")
    assert hit.where == "memory" and hit.meta == ENTRY and hit.blobs == BLOBS
    meta, blobs, where = _fresh(cache).get(key, "13.4.92")  # unpacks like a tuple
    assert (meta, blobs, where) == (ENTRY, BLOBS, "disk")
    stored = json.loads((_entry_dir(cache, key) / "meta.json").read_text())
    assert stored["blobs"]["cubin"]["size"] == len(BLOBS["cubin"])
    assert len(stored["blobs"]["cubin"]["sha256"]) == 64


def test_returned_values_are_copies(cache):
    key = make_key(k=2)
    cache.put(key, ENTRY, BLOBS)
    cache.get(key).meta["name"] = "changed"
    assert cache.get(key).meta["name"] == "add"


def test_toolchain_version_mismatch_is_a_miss(cache):
    key = make_key(k=3)
    cache.put(key, ENTRY, BLOBS)
    assert cache.get(key, "13.5.0") is None
    assert _fresh(cache).get(key, "13.5.0") is None
    # no toolchain on this machine (ahead-of-time use): take whatever was built
    assert _fresh(cache).get(key, None).meta == ENTRY
    # and the rebuild with the new toolchain replaces the entry
    cache.put(key, dict(ENTRY, toolchain_version="13.5.0"), BLOBS)
    assert _fresh(cache).get(key, "13.5.0").meta["toolchain_version"] == "13.5.0"
    assert _fresh(cache).get(key, "13.4.92") is None


@pytest.mark.parametrize("damage", ["bad json", "checksum", "missing blob", "truncated blob",
                                    "no meta", "wrong key", "empty meta"])
def test_damaged_entries_are_deleted_and_rebuilt(cache, damage):
    key = make_key(k=damage)
    cache.put(key, ENTRY, BLOBS)
    folder = _entry_dir(cache, key)
    meta = folder / "meta.json"
    if damage == "bad json":
        meta.write_text(meta.read_text()[:-20])
    elif damage == "checksum":
        data = bytearray((folder / "cubin.bin").read_bytes())
        data[100] ^= 0xFF
        (folder / "cubin.bin").write_bytes(bytes(data))
    elif damage == "missing blob":
        (folder / "bytecode.bin").unlink()
    elif damage == "truncated blob":
        (folder / "cubin.bin").write_bytes(BLOBS["cubin"][:10])
    elif damage == "no meta":
        meta.unlink()
    elif damage == "wrong key":
        meta.write_text(meta.read_text().replace(key, "0" * 64))
    elif damage == "empty meta":
        meta.write_text("")
    reader = _fresh(cache)
    assert reader.get(key, "13.4.92") is None
    assert not folder.exists()
    reader.put(key, ENTRY, BLOBS)
    assert _fresh(cache).get(key, "13.4.92").blobs == BLOBS


def test_put_over_a_damaged_entry_replaces_it(cache):
    key = make_key(k="overwrite")
    cache.put(key, ENTRY, BLOBS)
    (_entry_dir(cache, key) / "meta.json").write_text("{")
    _fresh(cache).put(key, ENTRY, {"cubin": b"new"})
    assert _fresh(cache).get(key).blobs == {"cubin": b"new"}


def test_memory_layer_is_an_lru(tmp_path):
    c = CompileCache(tmp_path, disk=False, memory_entries=2)
    for i in range(3):
        c.put(f"k{i}", ENTRY, BLOBS)
    assert c.get("k0") is None and c.get("k1") and c.get("k2")
    assert c.info()["memory_entries"] == 2


def test_bad_keys_and_entries_are_refused(cache):
    for key in ("", "../escape", ".hidden", "a/b"):
        with pytest.raises(CacheError):
            cache.put(key, ENTRY, BLOBS)
    with pytest.raises(CacheError):
        cache.put(make_key(k=4), {"not json": object()}, BLOBS)
    with pytest.raises(CacheError):
        cache.put(make_key(k=5), ENTRY, {"../x": b""})


def test_an_unwritable_cache_folder_does_not_break_a_compile(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    c = CompileCache(blocker / "cache", disk=True)
    c.put(make_key(k=6), ENTRY, BLOBS)  # logged, not raised
    assert c.get(make_key(k=6)).where == "memory"


# ----------------------------------------------------------------------------- info / clear

def test_info_and_clear(cache):
    assert cache.info()["entries"] == 0
    for i in range(3):
        cache.put(make_key(k=i), ENTRY, BLOBS)
    info = cache.info()
    assert info["path"] == str(cache.path) and info["enabled"] is True
    assert info["entries"] == 3 and info["bytes"] > 3 * len(BLOBS["cubin"])
    assert cache.clear() == 3
    assert cache.info()["entries"] == 0 and cache.get(make_key(k=0)) is None


# ----------------------------------------------------------------------------- environment

def test_env_var_moves_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CUTILE_LAB_CACHE_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.delenv("CUTILE_LAB_NO_CACHE", raising=False)
    assert default_cache_dir() == tmp_path / "elsewhere"
    c = default_cache()
    assert c.path == tmp_path / "elsewhere" and c.disk
    assert default_cache() is c
    c.put(make_key(k=7), ENTRY, BLOBS)
    assert (tmp_path / "elsewhere" / "v1").is_dir()


def test_xdg_and_home_defaults(tmp_path, monkeypatch):
    monkeypatch.delenv("CUTILE_LAB_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "cutile_lab"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "cutile_lab"


def test_env_var_disables_the_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CUTILE_LAB_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("CUTILE_LAB_NO_CACHE", "1")
    c = default_cache()
    assert not c.disk and c.info()["enabled"] is False
    c.put(make_key(k=8), ENTRY, BLOBS)
    assert c.get(make_key(k=8)).where == "memory"   # the in-memory layer stays
    assert not (tmp_path / "c").exists()
    monkeypatch.setenv("CUTILE_LAB_NO_CACHE", "0")
    assert default_cache().disk


# ----------------------------------------------------------------------------- concurrency

def _writer(path: str, key: str, barrier, rounds: int) -> None:
    c = CompileCache(path, disk=True, memory_entries=0)
    barrier.wait()
    for _ in range(rounds):
        c.put(key, ENTRY, BLOBS)
        hit = CompileCache(path, disk=True, memory_entries=0).get(key, "13.4.92")
        assert hit is None or hit.blobs == BLOBS  # never half an entry


def test_two_processes_writing_one_key_both_succeed(tmp_path, monkeypatch):
    import sys
    main = sys.modules["__main__"]
    if not hasattr(main, "__spec__"):   # an IPython shell of an earlier test replaced __main__
        monkeypatch.setattr(main, "__spec__", None, raising=False)
    ctx = multiprocessing.get_context("spawn")
    key = make_key(k="race")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), key, barrier, 25)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    hit = CompileCache(tmp_path, disk=True).get(key, "13.4.92")
    assert hit is not None and hit.where == "disk" and hit.blobs == BLOBS
    leftovers = [p.name for p in (tmp_path / "v1" / key[:2]).iterdir() if p.name != key]
    assert leftovers == []  # no temporary folders left behind


def test_module_docstring_says_what_it_owns():
    assert "Owns" in (cache_mod.__doc__ or "")
