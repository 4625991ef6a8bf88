"""``%%cuda``: a cell of CUDA C++ compiled with NVRTC, reported like a tile kernel (ownership
from the signature, what is unchecked, PTX, resources, timings), NVRTC errors at the cell's
line; its launch under ``%tile_time`` without a GPU explains that it needs one."""
import numpy as np
import pytest

from tests.notebook.conftest import _ipython, shell  # noqa: F401
from tests.cuda_cpp.kernels import SCALE

CELL = "%%cuda\n" + SCALE.lstrip("\n")


def test_a_cuda_cell_defines_its_kernels_and_reports_them(shell):
    cell = shell.run(CELL)
    assert cell.ok, cell.text
    r = cell.report
    assert r["kernel"] == "scale" and r["status"] == "compiled" and r["arch"] == "sm_90"
    assert ".entry scale" in r["ptx"] and r["tileir"] is None
    assert r["resources"]["registers"] > 0 and r["timings"]["nvrtc"] > 0
    assert any("x: shared f32*, y: written f32*, a: f32, n: i32" in n for n in r["notes"])
    assert any(n.startswith("unchecked:") for n in r["notes"])
    assert "PTX (" in cell.html and "scale [sm_90] CUDA C++" in cell.text
    k = shell.ns["scale"]
    assert [p.role for p in k.signature.params] == ["shared", "mut", "scalar", "scalar"]
    # a second run of the same cell is a cache hit
    assert shell.run(CELL).report["timings"]["cache"] == "memory"


def test_nvrtc_errors_are_shown_at_the_cells_line(shell):
    broken = CELL.replace("a * x[i]", "a * xs[i]")
    cell = shell.run(broken)
    assert not cell.ok and "NVRTC could not compile this cell" in str(cell.error)
    (d,) = cell.report["diagnostics"]
    assert 'identifier "xs" is undefined' in d["message"]
    # the line in the cell's text (the magic's line is not part of it; first_line says so)
    text_lines = broken.split("\n")[1:]
    line = next(i for i, t in enumerate(text_lines, 1) if "xs[i]" in t)
    assert d["span"]["line"] == line and d["span"]["col"] == text_lines[line - 1].index("xs")
    assert cell.report["source"]["first_line"] == 2
    assert "not defined" in " ".join(cell.report["notes"])


def test_a_template_kernel_is_refused_with_its_line(shell):
    cell = shell.run("%%cuda\ntemplate <int B>\n__global__ void t(float* x) { x[0] = B; }\n")
    assert not cell.ok
    (d,) = cell.report["diagnostics"]
    assert "template kernel" in d["message"] and d["span"]["line"] == 2


def test_tile_time_of_a_cuda_launch_without_a_gpu_says_it_needs_one(shell):
    assert shell.run(CELL).ok
    setup = shell.run("import numpy as np\ncl.set_backend('sim')\n"
                      "x = cl.asarray(np.random.default_rng().standard_normal(500)"
                      ".astype(np.float32))\ny = cl.zeros(500).sync()")
    assert setup.ok, setup.text
    try:
        cell = shell.run("%tile_time scale(x, y, 2.0, 500, grid=2, block=256)")
        assert not cell.ok
        assert "it needs a GPU" in cell.text and "CUDA C++ kernel" in cell.text
        # and the aliasing mistake is caught, at the launch, before the GPU is needed
        cell = shell.run("%tile_time scale(x, x, 2.0, 500, grid=2, block=256)")
        assert not cell.ok and "TL100" in cell.text
    finally:
        shell.run("cl.set_backend(None)")


@pytest.mark.gpu
def test_tile_time_and_the_roofline_take_a_cuda_launch_on_a_gpu(shell, gpu):
    from cutile_lab.performance import MEASUREMENTS
    MEASUREMENTS.clear()
    assert shell.run(CELL).ok
    setup = shell.run("n = 1 << 22\nx = cl.randn(n).sync()\ny = cl.zeros(n).sync()\n"
                      "t = cl.zeros(n).sync()")
    assert setup.ok, setup.text
    cell = shell.run("%tile_time -n 10 --flops 4194304 scale(x, y, 2.0, n, grid=n // 256, "
                     "block=256)")
    assert cell.ok, cell.text
    [m] = list(MEASUREMENTS)
    assert m.name == "scale" and m.bytes == 8 * (1 << 22) and m.seconds > 0
    assert "bytes from the signature" in cell.text
    np.testing.assert_allclose(shell.ns["y"].to_numpy(), 2 * shell.ns["x"].to_numpy(),
                               rtol=1e-6)
    cell = shell.run("%tile_roofline")
    assert cell.ok, cell.text
    MEASUREMENTS.clear()
