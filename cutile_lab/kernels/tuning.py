"""Tile sizes and hints per kernel family and architecture: defaults, overridden by the results
of the tuning sweep (``benchmarks/bench_kernels.py --tune``) stored in ``tuned.json`` beside this
file."""
from __future__ import annotations

import json
from pathlib import Path

TUNED = Path(__file__).with_name("tuned.json")

DEFAULTS: dict[str, dict] = {
    "add": {"B": 2048},
    "saxpy": {"B": 2048},
    "softmax": {"BR": 1},
    "layernorm": {"BR": 1},
    "rmsnorm": {"BR": 1},
    "gemm": {"BM": 128, "BN": 128, "BK": 64},
    "attention": {"BQ": 128, "BKV": 64},
}


def _stored() -> dict:
    try:
        return json.loads(TUNED.read_text())
    except (OSError, ValueError):
        return {}


def config(family: str, arch: str | None = None, variant: str | None = None) -> dict:
    """The tile configuration for ``family`` on ``arch``: the tuned one if the sweep stored one
    (``variant`` narrows it, e.g. the row length of a row-wise kernel), else the default. A
    numeric variant the sweep did not measure (rows of 2000 columns) takes the configuration of
    the nearest one it did, by ratio (1024 there), rather than the untuned default."""
    cfg = dict(DEFAULTS[family])
    tuned = _stored().get(arch or "", {}).get(family, {})
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


def store(arch: str, family: str, cfg: dict, variant: str = "*", **evidence) -> None:
    """Record the sweep's winner (with what it measured) for later launches."""
    data = _stored()
    entry = {k: v for k, v in cfg.items()}
    data.setdefault(arch, {}).setdefault(family, {})[variant] = entry
    if evidence:
        data[arch].setdefault("_evidence", {}).setdefault(family, {})[variant] = evidence
    TUNED.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
