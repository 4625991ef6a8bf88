"""Tile sizes and hints per kernel family and device: defaults, overridden by the results of the
tuning sweep (``benchmarks/bench_kernels.py --tune``) stored in ``tuned.json`` beside this file.

Keys. Configurations are stored per *device*: its name and memory bandwidth (``device_key``:
``"NVIDIA H100 80GB HBM3 (3.4 TB/s)"``, ``"NVIDIA H200 (4.8 TB/s)"``), because two cards of one
architecture want different tiles (on an H200, ``add`` streams best with 1024-element tiles, on
an H100 with 512). A device the sweep has not seen takes the configuration stored for its
architecture (``"sm_90"``), family by family, and the defaults below where there is none.

No autotune on first use: a library call never runs a sweep behind the user's back (it would
make the first call of a session take seconds to minutes and its timing depend on what else
runs). On an unseen device the architecture's configuration is used; ``bench_kernels.py --tune``
on that device stores its own (a minute or two per family).

Cost per call: ``tuned.json`` is read once per process (``store`` updates the copy in memory),
and a resolved configuration is kept per (family, device, variant): a library call pays a dict
lookup and a copy of a small dict.
"""
from __future__ import annotations

import json
import threading
from pathlib import Path

from cutile_lab.runtime.device import device_info

TUNED = Path(__file__).with_name("tuned.json")

DEFAULTS: dict[str, dict] = {
    "add": {"B": 2048},
    "saxpy": {"B": 2048},
    "softmax": {"BR": 1},
    "layernorm": {"BR": 1},
    "rmsnorm": {"BR": 1},
    "gemm": {"BM": 128, "BN": 128, "BK": 64},
    "attention": {"BQ": 128, "BKV": 64},
    # decode GEMV tiles (``models.qwen3``), per projection ("qkv:6144x2560"): BM, BK and the
    # occupancy hint measured by ``benchmarks/bench_qwen3.py``; none by default (the model's rule)
    "gemv": {},
}

_lock = threading.Lock()
_file: list = [None]              # tuned.json, parsed once
_resolved: dict = {}              # (family, target, variant) -> (stored data, configuration)
_targets: dict = {}               # id(DeviceInfo) -> (DeviceInfo, target keys)


def _stored() -> dict:
    """The stored configurations (``tuned.json``, read on first use)."""
    data = _file[0]
    if data is None:
        try:
            data = json.loads(TUNED.read_text())
        except (OSError, ValueError):
            data = {}
        _file[0] = data
    return data


def stored() -> dict:
    """The stored configurations: a new object whenever ``store`` records one, so that what a
    caller derives from them may be kept by identity (``shared_config`` keeps its own so)."""
    return _stored()


def device_key(info) -> str:
    """The key a device's configurations are stored under: its name and memory bandwidth (to
    one decimal of TB/s, so that clock readings that differ in the last digit agree)."""
    return f"{info.name} ({info.theoretical_bandwidth / 1e12:.1f} TB/s)"


def device_target(info=None) -> tuple[str, str]:
    """(device key, architecture) of the GPU in use (or ``info``): the keys ``config`` looks up,
    most specific first. Cached per device."""
    if info is None:
        info = device_info()
    hit = _targets.get(id(info))
    if hit is None or hit[0] is not info:
        hit = _targets[id(info)] = (info, (device_key(info), info.arch))
    return hit[1]


def config(family: str, target=None, variant: str | None = None) -> dict:
    """The tile configuration for ``family`` on ``target`` — a tuple of keys, most specific
    first (``device_target()``), or one key (an architecture such as ``"sm_90"``), or None (the
    defaults) — a fresh dict the caller may change. The first key with a stored configuration of
    ``family`` gives it; ``variant`` narrows it (the row length of a row-wise kernel, GEMM's
    dtype). A numeric variant the sweep did not measure (rows of 2000 columns) takes the
    configuration of the nearest one it did, by ratio (1024 there), rather than the default."""
    return dict(shared_config(family, target, variant))


def shared_config(family: str, target=None, variant: str | None = None) -> dict:
    """``config`` without the copy: the resolved configuration itself, which the caller must
    not change. The same object is returned until ``store`` records a new configuration, so a
    caller may key what it derives from it (a kernel built with its hints) by its identity."""
    data = _stored()
    key = (family, target, variant)
    hit = _resolved.get(key)
    if hit is None or hit[0] is not data:
        hit = (data, _resolve(data, family, target, variant))
        if len(_resolved) > 1024:
            _resolved.clear()
        _resolved[key] = hit
    return hit[1]


def _resolve(data: dict, family: str, target, variant: str | None) -> dict:
    keys = (target,) if isinstance(target, str) else (target or ())
    tuned: dict = {}
    for k in keys:
        tuned = data.get(k, {}).get(family, {})
        if tuned:
            break
    cfg = dict(DEFAULTS[family])
    cfg.update(tuned.get("*", {}))
    if variant is not None:
        cfg.update(tuned.get(_nearest(variant, tuned), {}))
    return cfg


def _nearest(variant: str, tuned: dict) -> str:
    """``variant`` if tuned, else the tuned numeric variant nearest to it by ratio (the smaller
    of two equally near), else ``variant`` itself."""
    if variant in tuned or not variant.isdigit() or int(variant) <= 0:
        return variant
    sizes = [int(v) for v in tuned if v.isdigit() and int(v) > 0]
    if not sizes:
        return variant
    n = int(variant)
    return str(min(sizes, key=lambda m: (max(m, n) / min(m, n), m)))


HINTS = ("occupancy", "num_ctas", "num_worker_warps")
SCHEDULES = ("tiles", "persistent")


def hints_text(cfg: dict) -> str:
    """The compiler hints (and the tile schedule) of a configuration as the kernel decorator's
    extra keywords."""
    text = "".join(f", {h}={int(cfg[h])}" for h in HINTS if cfg.get(h))
    if cfg.get("schedule", "tiles") != "tiles":
        if cfg["schedule"] not in SCHEDULES:
            raise ValueError(f"unknown schedule {cfg['schedule']!r}: use one of {SCHEDULES}")
        text += f', schedule="{cfg["schedule"]}"'
    return text


def store(key: str, family: str, cfg: dict, variant: str = "*", **evidence) -> None:
    """Record the sweep's winner (with what it measured) under ``key`` — a ``device_key`` (what
    the sweep stores) or an architecture — for later launches, in the file and in memory."""
    with _lock:
        try:
            data = json.loads(TUNED.read_text())
        except (OSError, ValueError):
            data = {}
        data.setdefault(key, {}).setdefault(family, {})[variant] = dict(cfg)
        if evidence:
            data[key].setdefault("_evidence", {}).setdefault(family, {})[variant] = evidence
        TUNED.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        _file[0] = data
