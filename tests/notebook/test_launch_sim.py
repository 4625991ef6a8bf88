"""Launching ``%%tilekernel`` kernels on the simulator, and ``%tile_time`` without a GPU."""
from __future__ import annotations

import numpy as np
import pytest
from IPython.core.error import UsageError

from cutile_lab.kernel import Kernel
from cutile_lab.notebook.report import REPORT_MIME
from cutile_lab.notebook.simkernel import SimKernel
from cutile_lab.performance.timing import gpu_status

ADD = '''def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    tx = load_tile_like(x, z)
    ty = load_tile_like(y, z)
    z.store(tx + ty)
'''

SOFTMAX = '''def softmax(o: Mut[Tensor[f32, "1, N"]], x: Tensor[f32, "?, ?"]):
    t = load_tile_like(x, o)
    e = exp(t - max(t, axis=1, keepdims=True))
    o.store(e / sum(e, axis=1, keepdims=True))
'''


@pytest.fixture(autouse=True)
def _simulator_session():
    """Tensors made with cl.asarray live on the simulator too (a GPU machine's default is gpu)."""
    import cutile_lab as cl
    cl.set_backend("sim")
    yield
    cl.set_backend(None)


def test_sim_launch_matches_numpy(shell):
    cell = shell.run("%%tilekernel --sim\n" + ADD)
    assert cell.ok, cell.error
    assert isinstance(shell.ns["add"], SimKernel) and isinstance(shell.ns["add"], Kernel)
    assert any("simulator" in n for n in cell.report["notes"])
    seed = np.random.SeedSequence().entropy          # fresh random data every run
    cell = shell.run(f"""
import numpy as np
rng = np.random.default_rng({seed})
n = int(rng.integers(1000, 5000))                  # ragged: boundary tiles are masked
xn = rng.standard_normal(n).astype(np.float32)
yn = rng.standard_normal(n).astype(np.float32)
zn = np.zeros(n, np.float32)
op = add(cl.asarray(zn).partition(128), xn, yn)
zp, x, y = op.sync()
""")
    assert cell.ok, cell.error
    ns = shell.ns
    assert ns["op"].backend == "sim"
    np.testing.assert_allclose(ns["zn"], ns["xn"] + ns["yn"], rtol=1e-6)


def test_sim_launch_rowwise(shell):
    assert shell.run("%%tilekernel --sim\n" + SOFTMAX).ok
    cell = shell.run("""
import numpy as np
rng = np.random.default_rng()
xn = rng.standard_normal((37, 256)).astype(np.float32)
on = np.zeros_like(xn)
softmax(cl.asarray(on).partition((1, 256)), xn).sync()
ref = np.exp(xn - xn.max(axis=1, keepdims=True))
ref /= ref.sum(axis=1, keepdims=True)
""")
    assert cell.ok, cell.error
    np.testing.assert_allclose(shell.ns["on"], shell.ns["ref"], rtol=1e-5, atol=1e-7)


@pytest.mark.skipif(gpu_status()[0], reason="checks the no-GPU path")
def test_tile_time_without_gpu_runs_once_in_the_simulator(shell):
    assert shell.run("%%tilekernel --sim\n" + ADD).ok
    assert shell.run("""
import numpy as np
xn = np.random.rand(4096).astype(np.float32); yn = np.random.rand(4096).astype(np.float32)
zn = np.zeros(4096, np.float32)
zp = cl.asarray(zn).partition(256)
""").ok
    cell = shell.run("%tile_time -n 5 add(zp, xn, yn)")
    assert cell.ok, cell.error
    r = cell.report
    assert r["kind"] == "benchmark" and r["version"] == 1
    [row] = r["benchmark"]["rows"]
    assert row["backend"] == "sim" and row["median_us"] is None and row["host_ms"] > 0
    assert "timings need a GPU" in cell.text and "simulator" in cell.text
    assert "timings need a GPU" in cell.html
    np.testing.assert_allclose(shell.ns["zn"], shell.ns["xn"] + shell.ns["yn"], rtol=1e-6)


@pytest.mark.skipif(gpu_status()[0], reason="checks the no-GPU path")
def test_tile_time_takes_a_graph_without_gpu(shell):
    assert shell.run("%%tilekernel --sim\n" + ADD).ok
    assert shell.run("""
import numpy as np
xn = np.random.rand(2048).astype(np.float32); yn = np.random.rand(2048).astype(np.float32)
zn = np.zeros(2048, np.float32)
zp = cl.asarray(zn).partition(256)
g = cl.graph(add(zp, xn, yn))
""").ok
    cell = shell.run("%tile_time -n 5 g")
    assert cell.ok, cell.error
    [row] = cell.report["benchmark"]["rows"]
    assert row["backend"] == "sim" and row["name"].endswith("(graph)")
    np.testing.assert_allclose(shell.ns["zn"], shell.ns["xn"] + shell.ns["yn"], rtol=1e-6)


def test_tile_time_bad_expression(shell):
    cell = shell.run("%tile_time 42")
    assert isinstance(cell.error, UsageError) and "launch" in str(cell.error)
    cell = shell.run("%tile_time")
    assert isinstance(cell.error, UsageError)
    cell = shell.run("%tile_time -n x add")
    assert isinstance(cell.error, UsageError)


def test_tile_time_keeps_the_expression_verbatim(shell):
    from cutile_lab.notebook.magics import TileMagics
    from cutile_lab.notebook.options import split_line_options
    magics = TileMagics(shell.ip)
    opts, expr = split_line_options('-n 7 --flops 1e9 f("a  b", x[-1])', magics.tile_time)
    assert opts.repeats == 7 and opts.flops == 1e9
    assert expr == 'f("a  b", x[-1])'
    opts, expr = split_line_options("--name 'add 2^20' -w 2 add(z, x)", magics.tile_time)
    assert opts.name == "add 2^20" and opts.warmup == 2 and expr == "add(z, x)"


def test_benchmark_bundle_shape():
    from cutile_lab.notebook.report import benchmark_report_bundle
    b = benchmark_report_bundle([{"name": "add B=128", "median_us": 12.5, "gbps": 2900.0,
                                  "tflops": 0.24, "pct_of_roof": 87.0}],
                                kernel="add", plot_png=b"\x89PNG fake", device="H100")
    r = b[REPORT_MIME]
    assert r["kind"] == "benchmark" and r["benchmark"]["plot_png"]
    assert "2,900.0" in b["text/plain"] and "<img" in b["text/html"]


def test_sim_launch_uses_names_from_earlier_cells(shell):
    assert shell.run("SCALE = 3.0").ok
    cell = shell.run('%%tilekernel --sim\n'
                     'def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'
                     '    z.store(load_tile_like(x, z) * SCALE)\n')
    assert cell.ok, cell.error
    cell = shell.run("""
import numpy as np
xn = np.random.rand(500).astype(np.float32)
zn = np.zeros(500, np.float32)
scale(cl.asarray(zn).partition(128), xn).sync()
""")
    assert cell.ok, cell.error
    np.testing.assert_allclose(shell.ns["zn"], 3.0 * shell.ns["xn"], rtol=1e-6)


def test_tile_time_refused_launch_shows_the_diagnostic(shell):
    assert shell.run("%%tilekernel --sim\n" + ADD).ok
    cell = shell.run("""
import numpy as np
xn = np.random.rand(256).astype(np.float32)
zt = cl.asarray(np.zeros(256, np.float32))
zp = zt.partition(128)
""")
    assert cell.ok, cell.error
    cell = shell.run("%tile_time add(zt.partition(64), xn, xn)")    # zt was moved into zp
    assert not cell.ok
    from cutile_lab.notebook.tilecell import TileCellError
    assert isinstance(cell.error, TileCellError)
    assert "moved" in cell.text and "Traceback" not in cell.stdout + cell.text


@pytest.mark.parametrize("expr", ["lambda: 1/0"])   # `1/0` itself: TileCellError naming it
def test_tile_time_shows_the_users_own_error_from_their_expression(expr):
    """The user's exception stays theirs (no lab wrapper); its traceback no longer walks
    through the lab's magic and timing code to reach their expression."""
    import re
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "cutile_lab")
    with capture_output() as cap:
        r = ip.run_cell(f"%tile_time {expr}")
    assert isinstance(r.error_in_exec, ZeroDivisionError)
    out = re.sub(r"\x1b\[[0-9;]*m", "", cap.stdout + cap.stderr)
    assert "File <%tile_time>:1" in out and f"----> 1 {expr}" in out
    assert "measure_view.py" not in out and "magics.py" not in out, out
