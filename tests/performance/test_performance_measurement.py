"""Measurements registry, timing loops (with fake events), flop/byte counting, ceilings store."""
import json
import math

import pytest

from cutile_lab.performance import (MEASUREMENTS, EventPair, FlopByteCount, Measurement,
                                    Measurements, Timing, count_elementwise, count_gemm,
                                    count_rowwise, median, time_events, time_host)
from cutile_lab.performance import ceilings


# --- counting ----------------------------------------------------------------------------------

def test_count_elementwise_and_add():
    c = count_elementwise(1000, 4, n_inputs=2)
    assert (c.flops, c.bytes_read, c.bytes_written, c.bytes) == (1000, 8000, 4000, 12000)
    assert c.intensity == pytest.approx(1000 / 12000)
    total = c + count_elementwise(1000, 4, 1, 1, flops_per_elem=0)
    assert total == FlopByteCount(1000, 12000, 8000)
    assert 3 * c == FlopByteCount(3000, 24000, 12000)
    assert FlopByteCount(5, 0, 0).intensity == math.inf


def test_count_gemm():
    c = count_gemm(128, 256, 64, in_bytes=2, out_bytes=4)
    assert c.flops == 2 * 128 * 256 * 64
    assert c.bytes_read == (128 * 64 + 64 * 256) * 2
    assert c.bytes_written == 128 * 256 * 4
    cc = count_gemm(128, 256, 64, 2, 4, reads_c=True)
    assert cc.bytes_read == c.bytes_read + 128 * 256 * 4 and cc.flops > c.flops


def test_count_rowwise():
    c = count_rowwise(64, 1024, 2, flops_per_elem=5, param_bytes=2 * 1024 * 2)
    assert c.flops == 5 * 64 * 1024
    assert c.bytes_read == 64 * 1024 * 2 + 4096 and c.bytes_written == 64 * 1024 * 2


# --- timing ------------------------------------------------------------------------------------

class FakeStream:
    """A stream whose clock advances only when work runs; events read the clock."""

    def __init__(self, durations_ms):
        self.now = 0.0
        self.durations = iter(durations_ms)
        self.runs = 0
        self.runs_seen_by_reads = []

    def run(self):
        self.runs += 1
        self.now += next(self.durations)

    def make_events(self):
        marks = {}

        def elapsed_ms():
            self.runs_seen_by_reads.append(self.runs)
            return marks["end"] - marks["start"]

        return EventPair(record_start=lambda: marks.__setitem__("start", self.now),
                         record_end=lambda: marks.__setitem__("end", self.now),
                         elapsed_ms=elapsed_ms)


def test_time_events_with_fake_events():
    stream = FakeStream([100.0, 100.0, 2.0, 4.0, 3.0, 5.0, 1.0])   # 2 slow warmups, 5 timed
    flushes = []
    timing = time_events(stream.run, make_events=stream.make_events, warmup=2, repeats=5,
                         before_each=lambda: flushes.append(stream.now))
    assert timing.samples == (0.002, 0.004, 0.003, 0.005, 0.001)   # warmups excluded, seconds
    assert timing.median == pytest.approx(0.003)
    assert timing.min == pytest.approx(0.001)
    assert stream.runs == 7 and len(flushes) == 7
    assert stream.runs_seen_by_reads == [7] * 5    # nothing read until every run was enqueued


def test_time_events_validates_repeats():
    with pytest.raises(ValueError):
        time_events(lambda: None, make_events=lambda: None, repeats=0)


def test_time_host_with_fake_clock():
    ticks = iter([0.0, 1.0, 1.0, 3.0, 3.0, 6.0])
    timing = time_host(lambda: None, warmup=1, repeats=3, clock=lambda: next(ticks))
    assert timing.samples == (1.0, 2.0, 3.0) and timing.median == 2.0


def test_median_and_spread():
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([1.0, 2.0, 3.0, 4.0]) == 2.5
    with pytest.raises(ValueError):
        median([])
    assert Timing((1.0, 1.0, 1.0, 1.0)).spread == 0.0


# --- measurements ------------------------------------------------------------------------------

def test_measurement_from_timing_and_dataframe():
    reg = Measurements()
    t = Timing((0.002, 0.001, 0.003))
    m = reg.add(Measurement.from_timing("add B=1024", t, count_elementwise(1 << 20, 4, 2),
                                        kernel="add", precision="f32", device="dev",
                                        params={"B": 1024, "name": "clash"}))
    assert m.seconds == 0.002 and m.samples == [0.002, 0.001, 0.003]
    assert m.bandwidth == pytest.approx(12 * (1 << 20) / 0.002)
    reg.add(Measurement("other", "k", "f16", 10, 20, 1.0, device="other-dev"))
    df = reg.to_dataframe()
    assert list(df["name"]) == ["add B=1024", "other"]
    assert df.loc[0, "B"] == 1024 and df.loc[0, "param_name"] == "clash"
    assert {"flop_rate", "bandwidth", "intensity", "seconds"} <= set(df.columns)
    assert len(reg.for_device("dev")) == 1
    reg.clear()
    assert len(reg) == 0 and list(reg.to_dataframe().columns)[:3] == ["name", "kernel",
                                                                       "precision"]


def test_session_registry_exists():
    assert isinstance(MEASUREMENTS, Measurements)


# --- ceilings store ----------------------------------------------------------------------------

@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CUTILE_LAB_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_ceilings_roundtrip(cache):
    dev = "NVIDIA H100 80GB HBM3"
    assert ceilings.load_ceilings(dev) == {}
    ceilings.save_ceiling(dev, ceilings.COPY_BW, 3.0e12)
    ceilings.save_ceiling(dev, ceilings.gemm_ceiling_name("float16"), 7.4e14)
    ceilings.save_ceiling("other", "copy_bw", 1e12)
    assert ceilings.load_ceilings(dev) == {"copy_bw": 3.0e12, "gemm_f16": 7.4e14}
    assert set(ceilings.load_ceiling_dates(dev)) == {"copy_bw", "gemm_f16"}
    data = json.loads((cache / "ceilings.json").read_text())
    assert data["devices"][dev]["copy_bw"]["value"] == 3.0e12
    ceilings.save_ceiling(dev, "copy_bw", 3.1e12)                      # replaces
    assert ceilings.load_ceilings(dev)["copy_bw"] == 3.1e12
    ceilings.clear_ceilings(dev)
    assert ceilings.load_ceilings(dev) == {} and ceilings.load_ceilings("other")
    with pytest.raises(ValueError):
        ceilings.save_ceiling(dev, "copy_bw", float("nan"))


def test_damaged_ceilings_file_reads_empty_and_is_rewritten(cache):
    (cache / "ceilings.json").write_text("{not json")
    assert ceilings.load_ceilings("dev") == {}
    ceilings.save_ceiling("dev", "copy_bw", 2e12)
    assert ceilings.load_ceilings("dev") == {"copy_bw": 2e12}
    assert not list(cache.glob(".ceilings.*"))                          # no temp files left


def test_cache_dir_default(monkeypatch):
    monkeypatch.delenv("CUTILE_LAB_CACHE_DIR", raising=False)
    assert ceilings.cache_dir().parts[-2:] == (".cache", "cutile_lab")
