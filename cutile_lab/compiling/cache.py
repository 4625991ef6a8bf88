"""The compile cache: compiled kernels kept in memory and on disk, keyed by everything that
changes the binary.

Owns: the cache folder and its layout, keys (``make_key``), atomic writes, checksums, and the
rule that a damaged entry is a miss (it is deleted and rebuilt). It stores opaque JSON metadata
and named binary blobs; it must not know what a kernel or a cubin is.

Folder: ``$CUTILE_LAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/cutile_lab``, else
``~/.cache/cutile_lab``. ``CUTILE_LAB_NO_CACHE=1`` turns the disk cache off (the in-memory layer
stays). Layout::

    <dir>/v1/<key[:2]>/<key>/meta.json      {"key", "created", "entry": {...}, "blobs": {name: {sha256, size}}}
    <dir>/v1/<key[:2]>/<key>/<name>.bin     one file per blob

An entry is written into a temporary folder inside the cache folder and renamed into place, so
readers never see half an entry; when two processes build the same key, the first rename wins
and the other process's (identical) result is dropped.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import asdict, is_dataclass
from enum import Enum
from pathlib import Path
from typing import Any, NamedTuple

from cutile_lab.errors import CacheError

__all__ = ["CompileCache", "CacheHit", "default_cache", "default_cache_dir", "disk_cache_enabled",
           "make_key"]

log = logging.getLogger(__name__)

LAYOUT = "v1"
_META = "meta.json"
_KEY_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-.")


class CacheHit(NamedTuple):
    """What ``CompileCache.get`` returns: the metadata put, the blobs, and where it was found."""

    meta: dict
    blobs: dict[str, bytes]
    where: str  # "memory" or "disk"


def make_key(**parts: Any) -> str:
    """sha256 (hex) of the canonical JSON of ``parts``. Bytes are hashed, paths and enums made
    text, sets sorted, dataclasses expanded; anything else without a stable JSON form raises
    ``CacheError`` rather than give a key that silently changes from run to run."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=_canonical,
                      ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _canonical(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"sha256": hashlib.sha256(bytes(value)).hexdigest()}
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=lambda v: json.dumps(v, sort_keys=True, default=_canonical))
    if isinstance(value, tuple):
        return list(value)
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    raise CacheError(f"cannot make a cache key from a {type(value).__name__}: {value!r}")


def default_cache_dir() -> Path:
    explicit = os.environ.get("CUTILE_LAB_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "cutile_lab"


def disk_cache_enabled() -> bool:
    return os.environ.get("CUTILE_LAB_NO_CACHE", "").strip().lower() not in ("1", "true", "yes", "on")


class CompileCache:
    """An in-memory LRU in front of an on-disk store. Thread-safe; safe across processes."""

    def __init__(self, path: Path | str | None = None, *, disk: bool | None = None,
                 memory_entries: int = 128):
        self.path = Path(path) if path is not None else default_cache_dir()
        self.disk = disk_cache_enabled() if disk is None else disk
        self.memory_entries = memory_entries
        self._memory: OrderedDict[str, tuple[dict, dict[str, bytes]]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def root(self) -> Path:
        return self.path / LAYOUT

    def _entry_dir(self, key: str) -> Path:
        if not key or not set(key) <= _KEY_CHARS or key.startswith("."):
            raise CacheError(f"invalid cache key {key!r}")
        return self.root / key[:2] / key

    # ------------------------------------------------------------------ reading

    def get(self, key: str, toolchain_version: str | None = None) -> CacheHit | None:
        """The entry for ``key``, or ``None``. With ``toolchain_version`` given, an entry built
        by another version is a miss; with ``None`` (no toolchain here) any entry is accepted."""
        with self._lock:
            held = self._memory.get(key)
            if held is not None:
                self._memory.move_to_end(key)
        if held is not None and _version_ok(held[0], toolchain_version):
            return CacheHit(dict(held[0]), dict(held[1]), "memory")
        if not self.disk:
            return None
        loaded = self._load(key)
        if loaded is None:
            return None
        entry, blobs = loaded
        if not _version_ok(entry, toolchain_version):
            log.debug("cache entry %s built by toolchain %s, not %s: miss", key,
                      entry.get("toolchain_version"), toolchain_version)
            return None
        self._remember(key, entry, blobs)
        return CacheHit(dict(entry), dict(blobs), "disk")

    def _load(self, key: str) -> tuple[dict, dict[str, bytes]] | None:
        folder = self._entry_dir(key)
        try:
            raw = (folder / _META).read_bytes()
        except FileNotFoundError:
            if folder.is_dir():
                self._discard(folder, "no meta.json")
            return None
        except OSError as e:
            log.debug("cache entry %s unreadable: %s", key, e)
            return None
        try:
            meta = json.loads(raw)
            entry, listed = meta["entry"], meta["blobs"]
            if meta.get("key") != key or not isinstance(entry, dict) or not isinstance(listed, dict):
                raise ValueError("malformed meta.json")
            blobs: dict[str, bytes] = {}
            for name, info in listed.items():
                data = (folder / f"{name}.bin").read_bytes()
                if len(data) != info["size"] or hashlib.sha256(data).hexdigest() != info["sha256"]:
                    raise ValueError(f"checksum mismatch in blob {name!r}")
                blobs[name] = data
        except (ValueError, KeyError, TypeError, OSError) as e:
            self._discard(folder, str(e))
            return None
        return entry, blobs

    def _discard(self, folder: Path, why: str) -> None:
        log.debug("discarding damaged cache entry %s: %s", folder, why)
        _remove_tree(folder, self.root)

    # ------------------------------------------------------------------ writing

    def put(self, key: str, entry: dict, blobs: dict[str, bytes]) -> None:
        """Store ``entry`` (JSON-able; its ``toolchain_version`` is what ``get`` compares) and
        ``blobs``. Disk errors are logged, never raised: a cache must not break a compile."""
        folder = self._entry_dir(key)
        for name in blobs:
            if not name or not set(name) <= _KEY_CHARS or name.startswith("."):
                raise CacheError(f"invalid blob name {name!r}")
        blobs = {name: bytes(data) for name, data in blobs.items()}
        meta = {
            "key": key,
            "created": time.time(),
            "entry": entry,
            "blobs": {name: {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
                      for name, data in blobs.items()},
        }
        try:
            text = json.dumps(meta, sort_keys=True, indent=1)
        except (TypeError, ValueError) as e:
            raise CacheError(f"cache entry for {key} is not JSON-able: {e}") from None
        self._remember(key, entry, blobs)
        if self.disk:
            try:
                self._write(folder, text, blobs)
            except OSError as e:
                log.warning("could not write compile cache entry %s: %s", folder, e)

    def add_blobs(self, key: str, blobs: dict[str, bytes]) -> bool:
        """Add ``blobs`` to the entry already stored under ``key`` (for what is derived from an
        entry after it was built, such as the SASS of a cubin). False when there is no such
        entry. The entry on disk is replaced atomically, like ``put``'s."""
        hit = self.get(key)
        if hit is None:
            return False
        merged = dict(hit.blobs)
        merged.update(blobs)
        if self.disk:
            _remove_tree(self._entry_dir(key), self.root)
        self.put(key, hit.meta, merged)
        return True

    def _write(self, folder: Path, meta_text: str, blobs: dict[str, bytes]) -> None:
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder.parent))
        try:
            for name, data in blobs.items():
                (tmp / f"{name}.bin").write_bytes(data)
            (tmp / _META).write_text(meta_text, encoding="utf-8")
            try:
                os.rename(tmp, folder)
                return
            except OSError:
                pass
            # Something is there already: another process's entry for the same key (fine, it
            # won), or a stale or damaged one, which we move aside and replace.
            if self._load(folder.name) is not None and _same_version(folder, meta_text):
                return
            aside = Path(tempfile.mkdtemp(prefix=".old-", dir=folder.parent))
            try:
                os.rename(folder, aside / "entry")
            except OSError:
                pass
            try:
                os.rename(tmp, folder)
            except OSError:
                pass  # another process put its entry in between: it won
            _remove_tree(aside, self.root)
        finally:
            if tmp.exists():
                _remove_tree(tmp, self.root)

    def _remember(self, key: str, entry: dict, blobs: dict[str, bytes]) -> None:
        if self.memory_entries <= 0:
            return
        with self._lock:
            self._memory[key] = (dict(entry), dict(blobs))
            self._memory.move_to_end(key)
            while len(self._memory) > self.memory_entries:
                self._memory.popitem(last=False)

    # ------------------------------------------------------------------ housekeeping

    def forget_memory(self) -> None:
        """Drop the in-memory layer (the disk stays)."""
        with self._lock:
            self._memory.clear()

    def info(self) -> dict:
        """``path``, ``enabled`` (disk), ``entries`` and ``bytes`` on disk, ``memory_entries``."""
        entries = size = 0
        if self.root.is_dir():
            for meta in self.root.glob(f"*/*/{_META}"):
                if meta.parent.name.startswith("."):
                    continue
                entries += 1
                size += sum(f.stat().st_size for f in meta.parent.iterdir() if f.is_file())
        with self._lock:
            in_memory = len(self._memory)
        return {"path": str(self.path), "enabled": self.disk, "entries": entries, "bytes": size,
                "memory_entries": in_memory}

    def clear(self) -> int:
        """Remove every entry, on disk and in memory. Returns how many disk entries went (or, with
        the disk cache off, how many in-memory ones)."""
        with self._lock:
            in_memory = len(self._memory)
            self._memory.clear()
        if not self.disk:
            return in_memory
        removed = 0
        if self.root.is_dir():
            for shard in self.root.iterdir():
                if not shard.is_dir():
                    continue
                for folder in shard.iterdir():
                    if not folder.name.startswith("."):
                        removed += 1
                    _remove_tree(folder, self.root)
        return removed


def _version_ok(entry: dict, toolchain_version: str | None) -> bool:
    return toolchain_version is None or entry.get("toolchain_version") == toolchain_version


def _same_version(folder: Path, meta_text: str) -> bool:
    try:
        theirs = json.loads((folder / _META).read_text(encoding="utf-8"))["entry"]
        ours = json.loads(meta_text)["entry"]
        return theirs.get("toolchain_version") == ours.get("toolchain_version")
    except (OSError, ValueError, KeyError, AttributeError):
        return False


def _remove_tree(path: Path, root: Path) -> None:
    """Delete ``path`` (a folder under ``root``); errors are ignored."""
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        log.debug("refusing to delete %s outside %s", path, root)
        return
    shutil.rmtree(path, ignore_errors=True)


_defaults: dict[tuple, CompileCache] = {}
_defaults_lock = threading.Lock()


def default_cache() -> CompileCache:
    """The process-wide cache for the current environment (re-read on every call, so changing
    ``CUTILE_LAB_CACHE_DIR`` or ``CUTILE_LAB_NO_CACHE`` takes effect at once)."""
    config = (str(default_cache_dir()), disk_cache_enabled())
    with _defaults_lock:
        cache = _defaults.get(config)
        if cache is None:
            cache = _defaults[config] = CompileCache(Path(config[0]), disk=config[1])
        return cache
