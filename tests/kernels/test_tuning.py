"""Tuned configurations: what a host function picks for a size the sweep measured, and for one it
did not."""
import pytest

from cutile_lab.kernels import tuning

STORED = {"sm_90": {"softmax": {"1024": {"BR": 8, "occupancy": 4},
                                "8192": {"BR": 2, "schedule": "persistent"},
                                "32768": {"BR": 1, "schedule": "persistent"}},
                    "gemm": {"*": {"BM": 256}, "f16": {"BK": 64}}}}


@pytest.fixture
def stored(monkeypatch):
    monkeypatch.setattr(tuning, "_stored", lambda: STORED)


@pytest.mark.parametrize("cols,expected", [
    ("1024", {"BR": 8, "occupancy": 4}),          # measured
    ("1000", {"BR": 8, "occupancy": 4}),          # nearest by ratio
    ("2896", {"BR": 8, "occupancy": 4}),          # 1024 and 8192 equally near: the smaller
    ("4096", {"BR": 2, "schedule": "persistent"}),
    ("65536", {"BR": 1, "schedule": "persistent"}),
    ("100", {"BR": 8, "occupancy": 4}),
])
def test_a_row_length_takes_the_nearest_tuned_one(stored, cols, expected):
    assert tuning.config("softmax", "sm_90", variant=cols) == expected


def test_non_numeric_variants_and_other_archs(stored):
    assert tuning.config("gemm", "sm_90", variant="bf16") == \
        {**tuning.DEFAULTS["gemm"], "BM": 256}
    assert tuning.config("gemm", "sm_90", variant="f16")["BK"] == 64
    assert tuning.config("softmax", "sm_100", variant="1024") == tuning.DEFAULTS["softmax"]
    assert tuning.config("softmax", None, variant="1024") == tuning.DEFAULTS["softmax"]
