"""Tuning keyed by the device: each card gets its own configurations, an unseen card those of
its architecture; ``tuned.json`` is read once per process, not per call."""
import json

import pytest

from cutile_lab.kernels import tuning
from cutile_lab.runtime.device import DeviceInfo


def info(name, mem_clock_mhz, bus_bits):
    return DeviceInfo(index=0, name=name, compute_capability=(9, 0), sm_count=132,
                      sm_clock_mhz=1980.0, memory_clock_mhz=mem_clock_mhz,
                      memory_bus_bits=bus_bits, total_memory=80 << 30, l2_cache_bytes=50 << 20,
                      max_threads_per_block=1024)


H100 = info("NVIDIA H100 80GB HBM3", 2619.0, 5120)     # 3.35 TB/s
H200 = info("NVIDIA H200", 3135.0, 6144)                # 4.8 TB/s
OTHER = info("NVIDIA H100 PCIe", 1593.0, 5120)          # 2.0 TB/s, never swept


@pytest.fixture
def tuned_file(tmp_path, monkeypatch):
    path = tmp_path / "tuned.json"
    path.write_text(json.dumps({
        "sm_90": {"add": {"*": {"B": 512}}, "softmax": {"1024": {"BR": 8}}},
        tuning.device_key(H100): {"add": {"*": {"B": 512, "num_worker_warps": 8}}},
        tuning.device_key(H200): {"add": {"*": {"B": 1024}}},
    }))
    monkeypatch.setattr(tuning, "TUNED", path)
    monkeypatch.setattr(tuning, "_file", [None])
    monkeypatch.setattr(tuning, "_resolved", {})
    monkeypatch.setattr(tuning, "_targets", {})
    return path


def test_device_keys_name_the_card_and_its_bandwidth():
    assert tuning.device_key(H100) == "NVIDIA H100 80GB HBM3 (3.4 TB/s)"
    assert tuning.device_key(H200) == "NVIDIA H200 (4.8 TB/s)"
    assert tuning.device_target(H200) == ("NVIDIA H200 (4.8 TB/s)", "sm_90")


def test_each_card_gets_its_own_configuration(tuned_file):
    assert tuning.config("add", tuning.device_target(H100)) == {"B": 512, "num_worker_warps": 8}
    assert tuning.config("add", tuning.device_target(H200)) == {"B": 1024}
    # a card never swept: its architecture's configuration, family by family
    assert tuning.config("add", tuning.device_target(OTHER)) == {"B": 512}
    # a family the card's own sweep did not store: the architecture's
    assert tuning.config("softmax", tuning.device_target(H200), variant="1000") == {"BR": 8}
    assert tuning.config("gemm", tuning.device_target(H200)) == tuning.DEFAULTS["gemm"]


def test_the_file_is_read_once_and_store_updates_what_is_in_memory(tuned_file):
    target = tuning.device_target(H200)
    first = tuning.config("add", target)
    first["B"] = 7                                   # a fresh dict: the cache is not changed
    tuned_file.write_text("{}")                      # not read again
    assert tuning.config("add", target) == {"B": 1024}
    tuning.store(tuning.device_key(H200), "add", {"B": 2048}, ms=1.0)
    assert tuning.config("add", target) == {"B": 2048}
    saved = json.loads(tuned_file.read_text())
    assert saved[tuning.device_key(H200)]["add"]["*"] == {"B": 2048}
    assert saved[tuning.device_key(H200)]["_evidence"]["add"]["*"] == {"ms": 1.0}


def test_the_committed_file_has_the_h100s_own_configurations():
    data = json.loads(tuning.TUNED.read_text())
    own = data[tuning.device_key(H100)]
    assert {"add", "softmax", "layernorm", "rmsnorm", "gemm", "attention"} <= set(own)
    assert "sm_90" in data                           # the fallback for other sm_90 cards
