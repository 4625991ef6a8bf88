"""``%tile_device``, ``%tile_roofline`` and ``%tile_bandwidth`` in a real InteractiveShell."""
from __future__ import annotations

import base64
import os

import pytest

from cutile_lab.performance import MEASUREMENTS, Measurement

H100 = "NVIDIA H100 80GB HBM3"
PNG_DIR = os.environ.get("CUTILE_LAB_TEST_PNG_DIR", "/tmp/cutile_lab_notebook_pngs")


def _fake_measurements():
    ms = []
    for n in (2**20, 2**22, 2**24, 2**26, 2**28):
        nbytes = 12 * n
        secs = nbytes / (3.0e12 * (1 - 2**20 / n * 0.5))
        ms.append(Measurement(f"add f32 2^{n.bit_length() - 1}", "add", "f32", n, nbytes, secs,
                              [secs] * 5, device=H100))
    M = N = K = 8192
    ms.append(Measurement("gemm f16 8192³", "gemm", "f16", 2 * M * N * K,
                          (M * K + K * N + M * N) * 2, 2 * M * N * K / 7.4e14, device=H100))
    ms.append(Measurement("softmax f32", "softmax", "f32", 5 * 2**26, 8 * 2**26,
                          8 * 2**26 / 2.6e12, device=H100))
    return ms


@pytest.fixture
def measured():
    MEASUREMENTS.clear()
    MEASUREMENTS.extend(_fake_measurements())
    yield MEASUREMENTS
    MEASUREMENTS.clear()


def _png(cell) -> bytes:
    [b] = [b for b in cell.bundles if "image/png" in b]
    data = base64.b64decode(b["image/png"])
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return data


def test_roofline_png(shell, measured):
    os.makedirs(PNG_DIR, exist_ok=True)
    path = os.path.join(PNG_DIR, "roofline.png")
    cell = shell.run(f"%tile_roofline --save {path}")
    assert cell.ok, cell.error
    data = _png(cell)
    assert len(data) > 20_000
    assert open(path, "rb").read() == data
    assert "7 measurements" in cell.text


def test_bandwidth_png(shell, measured):
    os.makedirs(PNG_DIR, exist_ok=True)
    path = os.path.join(PNG_DIR, "bandwidth.png")
    cell = shell.run(f"%tile_bandwidth --save {path}")
    assert cell.ok, cell.error
    assert len(_png(cell)) > 10_000


def test_roofline_empty_and_clear(shell, measured):
    cell = shell.run("%tile_roofline clear")
    assert cell.ok and "forgot 7 measurements" in cell.stdout
    cell = shell.run("%tile_roofline")
    assert cell.ok, cell.error
    assert "nothing measured yet" in cell.text
    _png(cell)


def test_a_plot_saved_where_no_folder_is_still_shown(shell, measured, tmp_path):
    """A --save path in a missing folder was a FileNotFoundError from inside the lab, and the
    plot was not shown."""
    from IPython.core.error import UsageError
    path = tmp_path / "missing" / "roofline.png"
    cell = shell.run(f"%tile_roofline --save {path}")
    assert isinstance(cell.error, UsageError)
    assert f"--save {path}: cannot write it" in str(cell.error) and "shown above" in str(cell.error)
    _png(cell)
    assert not path.exists()


def test_plot_bad_argument(shell):
    from IPython.core.error import UsageError
    cell = shell.run("%tile_roofline --bogus")
    assert isinstance(cell.error, UsageError)


def test_tile_device(shell):
    from cutile_lab.performance.timing import gpu_status
    cell = shell.run("%tile_device")
    assert cell.ok, cell.error
    [b] = cell.bundles
    if gpu_status()[0]:
        assert "SMs" in b["text/plain"] and "datasheet peaks" in b["text/plain"]
    else:
        assert "no GPU found" in b["text/plain"] and "Timings need a GPU" in b["text/plain"]
        assert "H100" in b["text/plain"] and "TFLOP/s" in b["text/html"]
        assert "f16 tensor" in b["text/plain"]



@pytest.mark.parametrize("line", ["1", "--frob"])
def test_tile_device_refuses_arguments(shell, line):
    """`%tile_device 1` showed the one GPU as if it were device 1."""
    from IPython.core.error import UsageError
    cell = shell.run(f"%tile_device {line}")
    assert isinstance(cell.error, UsageError)
    assert "takes no arguments" in str(cell.error) and "CUDA_VISIBLE_DEVICES" in str(cell.error)
    assert not cell.bundles
