"""Measured ceilings per device: a small JSON store in the lab's cache directory.

Owns: ``ceilings.json`` under the cache directory (``$CUTILE_LAB_CACHE_DIR``, else
``~/.cache/cutile_lab``), keyed by the device name the driver reports. Each entry holds named
ceilings — ``copy_bw`` in bytes/s, ``gemm_<precision>`` (``gemm_f16``, ``gemm_bf16``, ...) in
flop/s — with the date each was measured. It only stores and loads numbers: measuring them on a
GPU belongs to ``cutile_lab.runtime``; plotting them to ``performance.roofline``.

File layout::

    {"version": 1,
     "devices": {"NVIDIA H100 80GB HBM3": {
         "copy_bw":  {"value": 3.05e12, "measured": "2025-01-31T12:00:00+00:00"},
         "gemm_f16": {"value": 7.6e14,  "measured": "2025-01-31T12:00:10+00:00"}}}}

A missing or damaged file reads as empty (and is rewritten whole by the next save); writes go
through a temporary file and an atomic rename, so a crash never leaves half a file.
"""
from __future__ import annotations

import json
import math
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path

COPY_BW = "copy_bw"
_FILENAME = "ceilings.json"
_VERSION = 1


def gemm_ceiling_name(precision: str) -> str:
    """The store's name for a measured GEMM ceiling: ``'f16'`` → ``'gemm_f16'``."""
    from cutile_lab.performance.peaks import canonical_precision
    return f"gemm_{canonical_precision(precision)}"


def cache_dir() -> Path:
    """The lab's cache directory, the same one the compile cache uses (not created here)."""
    from cutile_lab.compiling.cache import default_cache_dir
    return default_cache_dir()


def ceilings_path() -> Path:
    return cache_dir() / _FILENAME


def _read() -> dict:
    try:
        data = json.loads(ceilings_path().read_text())
    except (OSError, ValueError):
        return {"version": _VERSION, "devices": {}}
    if not isinstance(data, dict) or not isinstance(data.get("devices"), dict):
        return {"version": _VERSION, "devices": {}}
    return data


def _write(data: dict) -> None:
    path = ceilings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".ceilings.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _entries(device_name: str) -> dict[str, dict]:
    entry = _read()["devices"].get(device_name)
    return entry if isinstance(entry, dict) else {}


def load_ceilings(device_name: str) -> dict[str, float]:
    """``{ceiling name: value}`` measured on ``device_name``; ``{}`` if none (or unreadable)."""
    out: dict[str, float] = {}
    for name, rec in _entries(device_name).items():
        value = rec.get("value") if isinstance(rec, dict) else None
        if isinstance(value, (int, float)) and math.isfinite(value) and value > 0:
            out[name] = float(value)
    return out


def load_ceiling_dates(device_name: str) -> dict[str, datetime]:
    """``{ceiling name: when it was measured}`` for ``device_name``."""
    out: dict[str, datetime] = {}
    for name, rec in _entries(device_name).items():
        try:
            out[name] = datetime.fromisoformat(rec["measured"])
        except (TypeError, KeyError, ValueError):
            pass
    return out


def save_ceiling(device_name: str, name: str, value: float, *,
                 measured: datetime | None = None) -> None:
    """Store (replace) one ceiling of ``device_name``. ``value`` must be finite and positive."""
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"ceiling {name!r} must be a finite positive number, got {value!r}")
    when = measured or datetime.now(timezone.utc)
    data = _read()
    data["version"] = _VERSION
    dev = data["devices"].setdefault(device_name, {})
    if not isinstance(dev, dict):
        dev = data["devices"][device_name] = {}
    dev[name] = {"value": value, "measured": when.isoformat()}
    _write(data)


def clear_ceilings(device_name: str | None = None) -> None:
    """Forget the ceilings of one device, or of every device when ``device_name`` is None."""
    data = _read()
    if device_name is None:
        data["devices"] = {}
    else:
        data["devices"].pop(device_name, None)
    _write(data)
