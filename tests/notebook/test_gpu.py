"""The notebook layer on a real GPU: the default architecture, ``%tile_time`` with CUDA events,
``sweep`` timings, ``%tile_device`` and the roofline of real measurements."""
from __future__ import annotations

import os

import numpy as np
import pytest

from cutile_lab.performance.timing import gpu_status

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu_status()[0], reason="needs an NVIDIA GPU")]

ADD = '''def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    tx = load_tile_like(x, z)
    ty = load_tile_like(y, z)
    z.store(tx + ty)
'''


@pytest.fixture
def measurements():
    from cutile_lab.performance import MEASUREMENTS
    MEASUREMENTS.clear()
    yield MEASUREMENTS
    MEASUREMENTS.clear()


def test_default_arch_is_the_gpus(shell):
    from cutile_lab.notebook.options import default_arch
    from cutile_lab.runtime.device import device_info
    assert default_arch() == device_info().arch
    cell = shell.run("%%tilekernel --spec B=1024\n" + ADD)
    assert cell.ok, cell.error
    assert cell.report["arch"] == device_info().arch


def test_sass_is_shown_and_remembered(shell):
    from cutile_lab.compiling.toolchain import toolchain_or_none
    tc = toolchain_or_none()
    if not (tc.nvdisasm or tc.cuobjdump):
        pytest.skip("no SASS disassembler on this machine")
    cell = shell.run("%%tilekernel --spec B=512\n" + ADD)
    sass = cell.report["sass"]
    assert sass and ("LDG" in sass or "STG" in sass)
    assert "SASS (" in cell.html
    again = shell.run("%%tilekernel --spec B=512\n" + ADD)     # a cache hit: remembered
    assert again.report["timings"]["cache"] != "miss" and again.report["sass"] == sass


def test_tile_time_on_the_gpu(shell, measurements):
    assert shell.run("%%tilekernel\n" + ADD).ok
    cell = shell.run("""
n = 1 << 24
x = cl.randn(n).sync()
y = cl.randn(n).sync()
zp = cl.zeros(n).sync().partition(1024)
""")
    assert cell.ok, cell.error
    cell = shell.run("%tile_time -n 30 -w 5 add(zp, x, y)")
    assert cell.ok, cell.error
    r = cell.report
    assert r["kind"] == "benchmark"
    [row] = r["benchmark"]["rows"]
    assert row["backend"] == "gpu" and row["median_us"] > 0
    assert row["bytes"] == 12 * (1 << 24) and row["flops"] == 1 << 24
    # the rates are the work over the measured time (no bound on how fast the GPU must be)
    m = measurements[0]
    assert row["gbps"] == pytest.approx(row["bytes"] / m.seconds / 1e9)
    assert 0 < row["pct_of_roof"]
    assert len(measurements) == 1 and measurements[0].device
    assert measurements[0].params["B"] == 1024
    # the result is right after all the timed runs
    cell = shell.run("z = zp.unpartition(); zn = z.to_numpy(); xn = x.to_numpy(); "
                     "yn = y.to_numpy()")
    assert cell.ok, cell.error
    np.testing.assert_allclose(shell.ns["zn"], shell.ns["xn"] + shell.ns["yn"], rtol=1e-6)


def test_tile_time_overrides_and_factory(shell, measurements):
    assert shell.run("%%tilekernel\n" + ADD).ok
    assert shell.run("n = 1 << 20; x = cl.randn(n).sync(); y = cl.randn(n).sync();"
                     "zp = cl.zeros(n).sync().partition(256)").ok
    cell = shell.run("%tile_time -n 10 --flops 123 --bytes 1e6 --name mine "
                     "lambda: add(zp, x, y)")
    assert cell.ok, cell.error
    [row] = cell.report["benchmark"]["rows"]
    assert row["name"] == "mine" and row["flops"] == 123 and row["bytes"] == 1e6


def test_tile_time_replays_a_graph(shell, measurements):
    assert shell.run("%%tilekernel\n" + ADD).ok
    cell = shell.run("""
n = 1 << 22
x = cl.randn(n).sync(); y = cl.randn(n).sync()
zp = cl.zeros(n).sync().partition(1024)
g = cl.graph(add(zp, x, y))
chain = cl.graph(add(zp, x, y).then(lambda z, x, y: add(z, y, x)))
""")
    assert cell.ok, cell.error
    cell = shell.run("%tile_time -n 20 g")
    assert cell.ok, cell.error
    [row] = cell.report["benchmark"]["rows"]
    assert row["backend"] == "gpu" and row["median_us"] > 0 and row["name"].endswith("(graph)")
    assert row["bytes"] == 12 * n_of(shell)                          # one launch: work derived
    assert row["gbps"] == pytest.approx(row["bytes"] / (row["median_us"] * 1e-6) / 1e9)
    cell = shell.run("%tile_time -n 10 chain")
    assert cell.ok, cell.error
    [row] = cell.report["benchmark"]["rows"]
    assert row["median_us"] > 0 and "--flops N --bytes N (per replay)" in cell.text
    cell = shell.run("z = zp.unpartition(); ok = bool((z.to_numpy() == (x.to_numpy() + "
                     "y.to_numpy())).all())")
    assert cell.ok and shell.ns["ok"], cell.error


def n_of(shell) -> int:
    return int(shell.ns["n"])


def test_sweep_times_each_configuration(shell, measurements):
    from cutile_lab.notebook import sweep
    assert shell.run("%%tilekernel\n" + ADD).ok
    add = shell.ns["add"]
    import cutile_lab as cl
    n = 1 << 22
    x = cl.randn(n).sync()
    y = cl.randn(n).sync()

    def make_args(B):
        return cl.zeros(n).sync().partition(B), x, y

    def check(result):
        zp, xx, yy = result
        z = zp.unpartition().to_numpy()
        return np.allclose(z, xx.to_numpy() + yy.to_numpy())

    df = sweep(add, make_args, progress=False, repeats=10, check=check, B=[256, 1024, 4096])
    assert list(df["ok"]) == [True, True, True], df
    # each configuration was timed once, as its own measurement, and its rates are its work over
    # its own time: what the columns mean, with no bound on how fast the GPU must be
    assert len(measurements) == 3
    by_tile = {m.params["B"]: m for m in measurements}
    assert sorted(by_tile) == [256, 1024, 4096]
    for _, row in df.iterrows():
        m = by_tile[row["B"]]
        assert row["median_us"] == pytest.approx(m.seconds * 1e6) and m.seconds > 0
        assert len(m.samples) == 10 and min(m.samples) <= m.seconds <= max(m.samples)
        assert m.bytes >= 3 * n * 4                  # x and y read, z written, at least once
        assert row["gbps"] == pytest.approx(m.bytes / m.seconds / 1e9)
        assert 0 < row["pct_of_roof"]


def test_tile_device_and_roofline_with_real_measurements(shell, measurements):
    cell = shell.run("%tile_device")
    assert cell.ok
    text = cell.bundles[0]["text/plain"]
    assert "SMs" in text and "datasheet peaks" in text
    assert shell.run("%%tilekernel\n" + ADD).ok
    for k in (20, 22, 24, 26):
        assert shell.run(f"n = 1 << {k}; x = cl.randn(n).sync(); y = cl.randn(n).sync();"
                         "zp = cl.zeros(n).sync().partition(1024)").ok
        assert shell.run(f"%tile_time -n 20 --name 'add 2^{k}' add(zp, x, y)").ok
    out = os.environ.get("OUT") or "/tmp"
    cell = shell.run(f"%tile_roofline --save {out}/gpu_roofline.png")
    assert cell.ok, cell.error
    cell = shell.run(f"%tile_bandwidth --save {out}/gpu_bandwidth.png")
    assert cell.ok, cell.error
