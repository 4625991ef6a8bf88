"""Datasheet peaks: driver-name lookups, dense-vs-sparse sanity, sources."""
import math

import pytest

from cutile_lab.performance.peaks import PEAKS, PRECISIONS, canonical_precision, lookup_device

T = 1e12


@pytest.mark.parametrize("driver_name, key", [
    ("NVIDIA H100 80GB HBM3", "H100-SXM"),
    ("NVIDIA H100 PCIe", "H100-PCIE"),
    ("NVIDIA H100 NVL", "H100-NVL"),
    ("NVIDIA H200", "H200-SXM"),
    ("NVIDIA H200 NVL", "H200-NVL"),
    ("NVIDIA A100-SXM4-80GB", "A100-SXM-80GB"),
    ("NVIDIA A100-SXM4-40GB", "A100-SXM-40GB"),
    ("NVIDIA A100-PCIE-40GB", "A100-PCIE-40GB"),
    ("NVIDIA A100 80GB PCIe", "A100-PCIE-80GB"),
    ("NVIDIA GeForce RTX 4090", "RTX-4090"),
    ("NVIDIA GeForce RTX 5090", "RTX-5090"),
    ("NVIDIA B200", "B200"),
    ("NVIDIA L40S", "L40S"),
    ("  nvidia h100 80gb hbm3 ", "H100-SXM"),
    ("H100-SXM", "H100-SXM"),                   # the table's own key
    ("NVIDIA H100 SXM5 80GB", "H100-SXM"),      # the table's own name
])
def test_lookup_by_driver_name(driver_name, key):
    peaks = lookup_device(driver_name)
    assert peaks is not None and peaks.key == key


@pytest.mark.parametrize("name", [
    "NVIDIA GeForce RTX 4090 D",        # fewer SMs than a 4090
    "NVIDIA GeForce RTX 4090 Laptop GPU",
    "NVIDIA GH200 480GB",
    "NVIDIA GB200",
    "Tesla V100-SXM2-16GB",
    "",
])
def test_unknown_or_different_variants_give_none(name):
    assert lookup_device(name) is None


def test_h100_sxm_figures_are_dense():
    p = lookup_device("NVIDIA H100 80GB HBM3")
    assert p.mem_bw == pytest.approx(3.35 * T)
    assert p.peak_flops("f16") == pytest.approx(989.4 * T)
    assert p.peak_flops("bf16") == pytest.approx(989.4 * T)
    assert p.peak_flops("tf32") == pytest.approx(494.7 * T)
    assert p.peak_flops("fp8") == pytest.approx(1978.9 * T)
    assert p.peak_flops("f64") == pytest.approx(67 * T)             # tensor (DMMA) by default
    assert p.peak_flops("f64", tensor=False) == pytest.approx(34 * T)
    assert p.peak_flops("f32") == pytest.approx(67 * T)
    assert p.sm_count == 132
    assert p.ridge_point("f16") == pytest.approx(989.4 / 3.35, rel=1e-6)


def test_h100_pcie_and_h200():
    pcie = lookup_device("NVIDIA H100 PCIe")
    assert pcie.mem_bw == pytest.approx(2.0 * T)
    assert pcie.peak_flops("f16") == pytest.approx(756 * T)
    h200, sxm = lookup_device("NVIDIA H200"), lookup_device("NVIDIA H100 80GB HBM3")
    assert h200.mem_bw == pytest.approx(4.8 * T)
    for p in PRECISIONS:
        assert h200.peak_flops(p) == sxm.peak_flops(p)


def test_a100_has_no_fp8_and_aliases_resolve():
    a100 = lookup_device("NVIDIA A100-SXM4-80GB")
    assert a100.peak_flops("fp8") is None
    assert "fp8" not in a100.precisions
    assert a100.peak_flops("float16") == a100.peak_flops("f16") == pytest.approx(312 * T)
    assert canonical_precision("bfloat16") == "bf16"
    assert canonical_precision("f8e4m3") == "fp8"
    with pytest.raises(ValueError):
        a100.peak_flops("f61")


@pytest.mark.parametrize("key", sorted(PEAKS))
def test_table_sanity(key):
    p = PEAKS[key]
    # Tensor rates exceed the CUDA-core f32 rate; fp8 doubles f16; f16 doubles tf32.
    assert p.peak_flops("f16") > p.peak_flops("f32")
    assert p.peak_flops("bf16") == p.peak_flops("f16")
    # (3%: datasheets round, and the L40S one quotes 362.05 f16 beside 733 fp8)
    assert p.peak_flops("tf32") == pytest.approx(p.peak_flops("f16") / 2, rel=0.03)
    if p.fp8 is not None:
        assert p.fp8 == pytest.approx(2 * p.f16, rel=0.03)
    assert p.peak_flops("f32") >= p.peak_flops("f64", tensor=False)
    # Dense, not sparse: the f16 rate fits the SM count and clock (<= 8192 flop/clk/SM, what a
    # Blackwell SM does dense; a "with sparsity" figure would need twice the clock).
    if p.boost_clock_hz:
        per_sm_clk = p.f16 / (p.sm_count * p.boost_clock_hz)
        assert per_sm_clk <= 8192 * 1.01, per_sm_clk
        # f32 is 64 (A100) or 128 FMA lanes per SM at the boost clock
        lanes = p.f32 / (2 * p.sm_count * p.boost_clock_hz)
        assert lanes == pytest.approx(64, rel=0.02) or lanes == pytest.approx(128, rel=0.02)
    # Bandwidths between 0.5 and 10 TB/s; every figure has a source that is a title, not a URL.
    assert 0.5 * T < p.mem_bw < 10 * T
    for figure in ("mem_bw", "f16", "f64", "sm_count", "boost_clock_hz"):
        src = p.source_of(figure)
        assert src and "://" not in src and "www." not in src and ".com" not in src
    assert p.name in p.summary()
    assert math.isfinite(p.ridge_point("f32"))
