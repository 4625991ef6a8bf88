"""``%tile_time`` without a GPU: the measure view runs the launch once on the simulator, and a
cell that stops ends with the lab's ``TileCellError`` (CL070), with one report, not two."""
from __future__ import annotations

import numpy as np

from cutile_lab.errors import CutileLabError, TileCellError

ADD = '''def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))
'''


def test_the_cell_error_is_the_labs_with_a_stable_code():
    from cutile_lab.notebook import tilecell
    assert tilecell.TileCellError is TileCellError and TileCellError.code == "CL070"
    # the report above the cell holds the diagnostics: the handler for lab errors must not
    # show it again
    assert not issubclass(TileCellError, CutileLabError)


def test_a_failed_kernel_cell_ends_with_one_report_and_one_line(shell):
    cell = shell.run('%%tilekernel --sim\ndef f(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'
                     '    z.store(nope(load_tile_like(x, z)))\n')
    assert isinstance(cell.error, TileCellError)
    assert len(cell.reports) == 1 and "Traceback" not in cell.stdout + cell.text
    assert TileCellError(cell.error.message)._render_traceback_()[0].endswith(cell.error.message)


def test_tile_time_on_the_simulator_reports_a_host_run(shell):
    assert shell.run("%%tilekernel --sim\n" + ADD).ok
    n = 128 * int(np.random.default_rng().integers(2, 9))
    cell = shell.run(f"""
import numpy as np
rng = np.random.default_rng()
xn, yn = rng.random({n}, dtype=np.float32), rng.random({n}, dtype=np.float32)
z = cl.asarray(np.zeros({n}, np.float32))
""")
    assert cell.ok, cell.error
    cell = shell.run("%tile_time add(z.partition(128), xn, yn)")
    assert cell.ok, cell.error
    [row] = cell.report["benchmark"]["rows"]
    assert row["backend"] == "sim" and row["median_us"] is None and row["host_ms"] > 0
    assert "timings need a GPU" in " ".join(cell.report["notes"])


def test_an_expression_that_raises_is_one_line_not_a_traceback_through_the_magic(shell):
    """A NameError in the expression was shown with the magic's own frames."""
    keep = shell.run("kept = 41 + 1")
    assert keep.ok
    cell = shell.run("%tile_time nothere(1)")
    assert isinstance(cell.error, TileCellError)
    assert cell.error.message == ("%tile_time: evaluating `nothere(1)` raised NameError: name "
                                  "'nothere' is not defined")
    assert shell.ns["kept"] == 42


def test_tile_time_refuses_counts_no_run_could_have(shell):
    """-n 0 (no run to take the median of), negative warm-ups, flops or bytes were taken."""
    from IPython.core.error import UsageError
    for opt in ("-n 0", "-n -3", "-w -1", "--flops -1", "--bytes -2.5", "--flops nan"):
        cell = shell.run(f"%tile_time {opt} add(z, x, y)")
        assert isinstance(cell.error, UsageError), (opt, cell.error)
        assert f"%tile_time {opt.split()[0]}" in str(cell.error) and "e.g." in str(cell.error)
