"""Roofline arithmetic and figures: percent of roof, and PNGs that render."""

import pytest
from matplotlib.figure import Figure

from cutile_lab.performance import Measurement, count_elementwise, count_gemm, lookup_device
from cutile_lab.performance.roofline import (attainable_flops, bandwidth_figure, figure_png,
                                             percent_of_roof, roofline_figure)

H100 = lookup_device("NVIDIA H100 80GB HBM3")
N = 1 << 26


def _m(name, precision, count, rate=None, bw=None, kernel="k"):
    seconds = count.flops / rate if rate else count.bytes / bw
    return Measurement(name, kernel, precision, count.flops, count.bytes, seconds,
                       samples=[seconds] * 3, device="NVIDIA H100 80GB HBM3")


def _measurements():
    add = _m("add f32", "f32", count_elementwise(N, 4, 2), bw=3.0e12)
    gemm = _m("gemm f16 8192³", "f16", count_gemm(8192, 8192, 8192, 2, 2), rate=7.5e14)
    torch_gemm = _m("torch gemm f16", "f16", count_gemm(8192, 8192, 8192, 2, 2), rate=7.3e14)
    copy = _m("copy", "f32", count_elementwise(N, 4, 1, 1, flops_per_elem=0), bw=3.1e12)
    return [add, gemm, torch_gemm, copy]


def test_attainable_flops():
    assert attainable_flops(1.0, 3e12, 1e15) == 3e12
    assert attainable_flops(1e4, 3e12, 1e15) == 1e15
    assert attainable_flops(2.0, 3e12, None) == 6e12


def test_percent_of_roof_memory_bound_is_bandwidth_fraction():
    add, gemm, _, copy = _measurements()
    assert percent_of_roof(add, H100) == pytest.approx(100 * 3.0 / 3.35)
    # no flops: still judged against the memory roof
    assert percent_of_roof(copy, H100) == pytest.approx(100 * 3.1 / 3.35)
    assert percent_of_roof(add, None) is None


def test_percent_of_roof_compute_bound_uses_precision_peak():
    _, gemm, _, _ = _measurements()
    assert gemm.intensity > H100.ridge_point("f16")
    assert percent_of_roof(gemm, H100) == pytest.approx(100 * 7.5e14 / 989.4e12)
    # the same flops and bytes at tf32 sit under a lower roof
    tf32 = Measurement("g", "g", "tf32", gemm.flops, gemm.bytes, gemm.flops / 4e14)
    assert percent_of_roof(tf32, H100) == pytest.approx(100 * 4e14 / 494.7e12)


def test_percent_of_roof_unknown_precision_falls_back_to_memory_roof():
    m = Measurement("i", "i", "i32", 1e9, 4e9, 4e9 / 3e12)
    assert percent_of_roof(m, H100) == pytest.approx(100 * 3 / 3.35)


def test_measurement_derived_rates():
    add = _measurements()[0]
    assert add.bandwidth == pytest.approx(3.0e12)
    assert add.intensity == pytest.approx(1 / 12)
    assert add.flop_rate == pytest.approx(3.0e12 / 12)


def _is_png(data: bytes) -> bool:
    return data[:8] == b"\x89PNG\r\n\x1a\n"


def test_roofline_figure_renders(tmp_path):
    ms = _measurements()
    fig = roofline_figure(ms, H100, {"copy_bw": 3.0e12, "gemm_f16": 7.4e14})
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "flop/byte" in ax.get_xlabel() and "TFLOP/s" in ax.get_ylabel()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("3.35 TB/s" in t and "datasheet" in t for t in legend)
    assert any("measured" in t and "copy" in t for t in legend)
    assert any(t.startswith("f16 / bf16 tensor") or t.startswith("f16 tensor") for t in legend)
    assert any("f16 GEMM" in t for t in legend)
    texts = [t.get_text() for t in ax.texts]
    assert any(t.startswith("gemm f16 8192³") and "% of roof" in t for t in texts)
    assert any("without flops" in t for t in texts)       # the copy cannot sit on a log axis
    path = tmp_path / "roofline.png"
    fig.savefig(path)
    assert _is_png(path.read_bytes())
    assert _is_png(figure_png(fig))


def test_roofline_labels_do_not_overlap():
    fig = roofline_figure(_measurements(), H100)
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in fig.axes[0].texts
             if "% of roof" in t.get_text()]
    assert len(boxes) == 3
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b)


def test_roofline_without_peaks_or_measurements(tmp_path):
    assert _is_png(figure_png(roofline_figure([], H100)))                  # every precision
    assert _is_png(figure_png(roofline_figure(_measurements(), None)))     # points only
    fig = roofline_figure(_measurements()[:2], None, {"copy_bw": 3e12, "gemm_f16": 7e14})
    assert _is_png(figure_png(fig))
    fig = roofline_figure(_measurements(), lookup_device("NVIDIA A100-SXM4-80GB"),
                          precisions=["f16", "fp8", "tf32"])             # fp8 absent: skipped
    assert _is_png(figure_png(fig))


def test_bandwidth_figure_renders(tmp_path):
    sizes = [2 ** k for k in range(14, 31, 2)]
    series = {"cutile add": [(b, b / (3.0e12 * b / (b + 8e6))) for b in sizes],
              "torch.add": [(b, b / (2.8e12 * b / (b + 1.5e7))) for b in sizes]}
    fig = bandwidth_figure(series, H100, copy_ceiling=3.05e12)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and "TB/s" in ax.get_ylabel()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "cutile add" in legend and any("datasheet 3.35 TB/s" in t for t in legend)
    assert any("copy ceiling" in t for t in legend)
    path = tmp_path / "bw.png"
    fig.savefig(path)
    assert _is_png(path.read_bytes())
    assert _is_png(figure_png(bandwidth_figure({}, None)))


def test_no_pyplot_state():
    import sys
    roofline_figure(_measurements(), H100)
    if "matplotlib.pyplot" in sys.modules:
        import matplotlib.pyplot as plt
        assert plt.get_fignums() == []
