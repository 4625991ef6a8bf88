"""What a new user meets in a notebook (issue #16): cell labels as the front end counts, SASS
in every compiled report, "did you mean" for a misspelt op, launch diagnostics as located
panels, a warning where tiles read padding."""
from __future__ import annotations

import random

import numpy as np
import pytest

from cutile_lab.compiling.toolchain import toolchain_or_none

ADD = '''def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    tx = load_tile_like(x, z)
    ty = load_tile_like(y, z)
    z.store(tx + ty)
'''


@pytest.fixture(autouse=True)
def _simulator_session():
    import cutile_lab as cl
    cl.set_backend("sim")
    yield
    cl.set_backend(None)


def test_cell_label_is_the_count_the_front_end_shows(shell):
    for _ in range(random.randint(1, 3)):
        shell.run("1 + 1")
    shown = shell.ip.execution_count                 # the [N] this cell will show
    cell = shell.run("%%tilekernel --sim\n" + ADD)
    assert cell.ok, cell.error
    assert cell.report["source"]["filename"] == f"<tilekernel-cell-{shown}>"


@pytest.mark.skipif(toolchain_or_none() is None, reason="no Tile IR toolchain")
def test_a_compiled_report_always_has_sass(shell):
    b = random.choice([64, 128, 256])
    cell = shell.run(f"%%tilekernel --spec B={b}\n" + ADD)
    assert cell.ok, cell.error
    sass = cell.report["sass"]
    assert sass and "EXIT" in sass and "SASS (" in cell.html
    # a compile from the disk cache (a new session) has it too, without a disassembler run
    from cutile_lab.compiling import cache
    cache.default_cache().forget_memory()
    again = shell.run(f"%%tilekernel --spec B={b}\n" + ADD)
    assert again.report["timings"]["cache"] == "disk" and again.report["sass"] == sass


def test_sass_hint_says_how_to_get_a_disassembler(monkeypatch):
    from cutile_lab.compiling import toolchain
    from cutile_lab.notebook.tilecell import sass_of

    class Compiled:
        sass = None
    text, hint = sass_of(Compiled())
    assert text is None and hint == toolchain.SASS_HINT and "pip install" in hint


def test_misspelt_op_gets_did_you_mean(shell):
    cell = shell.run('%%tilekernel --sim\ndef f(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'
                     '    z.store(lgo(load_tile_like(x, z)))\n')
    assert not cell.ok
    [d] = cell.report["diagnostics"]
    assert d["code"] == "TL030" and d["help"] == "did you mean `log`?"


def _run_showing_warnings(shell, code):
    """Run a cell with the warnings hook ``%load_ext`` installs (pytest records warnings
    itself, which would bypass it)."""
    import warnings
    from cutile_lab.notebook import launch_view
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = launch_view._showwarning
        return shell.run(code)


def _launch_reports(cell):
    return [r for r in cell.reports if r["kind"] == "launch"]


def test_launch_error_is_a_panel_at_the_cells_line(shell):
    assert shell.run("%%tilekernel --sim\n" + ADD).ok
    n = random.randint(600, 2000)
    cell = shell.run(f"z = cl.zeros({n}).sync(); x = cl.randn({n}).sync()\n"
                     "zp = z.partition(128)\n"
                     "add(zp, z, x).sync()\n")
    assert not cell.ok
    [r] = _launch_reports(cell)
    [d] = r["diagnostics"]
    assert d["code"] == "TL102" and d["span"]["line"] == 3
    assert r["source"]["first_line"] == 1 and r["source"]["text"].splitlines()[2] == \
        "add(zp, z, x).sync()"
    assert r["source"]["filename"] == "this cell"
    assert [lab["span"]["line"] for lab in d["labels"]] == [2]      # moved here
    assert "TL102" in cell.html and "ipython-input" not in cell.text
    # and one short error line (what marks the cell failed and stops "Run All"), no traceback
    assert "[TL102]" in cell.stdout and "Traceback" not in cell.stdout


def test_simulator_failure_has_a_code_at_the_launch_line(shell):
    assert shell.run("%%tilekernel --sim\n" + ADD).ok
    kernel_cell = shell.ip.execution_count - 1
    cell = shell.run("z = cl.zeros(1000).sync(); x = cl.randn(1000).sync()\n"
                     "add(z.partition(100), x, x).sync()\n")
    assert not cell.ok
    [r] = _launch_reports(cell)
    [d] = r["diagnostics"]
    assert d["code"].startswith(("CL", "TL")) and "power of two" in d["message"]
    assert d["span"]["line"] == 2
    # where the simulator noticed it: the kernel's `def` line, numbered as in its cell (2)
    assert any(f"cell [{kernel_cell}], line 2" in n for n in d["notes"])


def test_padding_is_a_warning_at_the_launch(shell):
    assert shell.run("%%tilekernel --sim\n" + ADD).ok
    rng = np.random.default_rng()
    half = int(rng.integers(3, 8)) * 128
    # (the simulator would also stop the run at .sync() on the tiles it reads wholly outside
    # `x`, SIM001; here it only reports them, to see that the launch itself goes ahead)
    from cutile_lab.simulation import on_error, set_on_error
    before = on_error()
    set_on_error("ignore")
    try:
        cell = _run_showing_warnings(
            shell, f"z = cl.zeros({2 * half}).sync(); x = cl.randn({half}).sync(); "
                   f"y = cl.randn({2 * half}).sync()\n"
                   "zp, _, _ = add(z.partition(128), x, y).sync()\n")
    finally:
        set_on_error(before)
    assert cell.ok, cell.error              # a warning: it runs
    [r] = _launch_reports(cell)
    [d] = r["diagnostics"]
    tiles = 2 * half // 128
    assert d["code"] == "TL120" and d["severity"] == "warning" and d["span"]["line"] == 2
    assert f"tiles {half // 128} to {tiles - 1} (of {tiles})" in d["message"]
    assert "padding" in d["message"]


def test_no_warning_when_the_input_covers_the_output(shell):
    assert shell.run("%%tilekernel --sim\n" + ADD).ok
    cell = _run_showing_warnings(shell, "z = cl.zeros(1024).sync(); x = cl.randn(1024).sync()\n"
                     "zp, _, _ = add(z.partition(128), x, x).sync()\n")
    assert cell.ok and not _launch_reports(cell)


def test_explore_keeps_one_row_per_configuration(shell):
    from cutile_lab.notebook import explore
    assert shell.run("%%tilekernel\n" + ADD).ok
    add = shell.ns["add"]
    rng = np.random.default_rng()

    def make_args(B, N=1):
        import cutile_lab as cl
        n = int(rng.integers(300, 900))
        return (cl.zeros(n).sync().partition(B), cl.asarray(rng.standard_normal(n)
                .astype(np.float32)), cl.asarray(rng.standard_normal(n).astype(np.float32)))
    ex = explore(add, make_args, B=[64, 128, 256])
    ex.controls["B"].value = 128
    ex.controls["B"].value = 64                                # tried again: same row
    ex.controls["B"].value = 128
    assert list(ex.history["B"]) == [64, 128]
    plot, table = ex.widget.children[-1].children
    assert plot.layout.min_width and plot.layout.flex.startswith("0 0")
    assert table.layout.overflow == "auto" and "wrap" in ex.widget.children[-1].layout.flex_flow


def test_roofline_caption_is_honest_without_measurements():
    from cutile_lab.notebook.measure_view import roofline_of
    fig, _notes = roofline_of([])
    caption = fig._suptitle.get_text()
    assert "no kernel measured yet" in caption and "measured dashed" not in caption


@pytest.mark.skipif(toolchain_or_none() is None, reason="no Tile IR toolchain")
def test_tile_diff_two_specializations(shell):
    assert shell.run("%%tilekernel\n" + ADD).ok
    small, big = random.sample([64, 128, 256, 512], 2)
    cell = shell.run(f"%tile_diff add B={small} B={big}")
    assert cell.ok, cell.error
    r = cell.report
    assert r["kind"] == "diff"
    d = r["diff"]
    assert d["left"]["consts"] == {"B": small} and d["right"]["consts"] == {"B": big}
    changed = [row for row in d["tileir"]["rows"] if row[0] != "equal"]
    assert any(f"tile<{small}xf32>" in (row[2] or "") and f"tile<{big}xf32>" in (row[4] or "")
               for row in changed)
    assert d["sass"] is not None and d["sass"]["rows"]
    assert all("/*" not in (row[2] or "") for row in d["sass"]["rows"])   # no addresses
    assert d["left"]["resources"]["registers"] > 0
    assert f"B={small} vs B={big}" in cell.text


def test_tile_diff_options_and_usage(shell):
    from IPython.core.error import UsageError
    from cutile_lab.notebook.compare import parse_side
    side = parse_side("B=128,arch=sm_100,opt_level=2", "sm_90")
    assert side == {"label": "B=128,arch=sm_100,opt_level=2", "arch": "sm_100",
                    "consts": {"B": 128}, "options": {"opt_level": 2}}
    with pytest.raises(UsageError):
        parse_side("B", "sm_90")
    assert shell.run("%%tilekernel\n" + ADD).ok
    cell = shell.run("%tile_diff ad B=64 B=128")
    assert not cell.ok and "did you mean `add`" in str(cell.error)


@pytest.mark.skipif(toolchain_or_none() is None, reason="no Tile IR toolchain")
def test_sass_line_comments_name_the_cells_lines(shell):
    cell = shell.run("%%tilekernel --spec B=128\n" + ADD)
    sass = cell.report["sass"]
    assert "<lowered" not in sass
    assert "//## line 3: tx = load_tile_like(x, z)" in sass or \
        "//## line 5: z.store(tx + ty)" in sass


def test_live_check_numbers_the_cell_and_runs_nothing(shell):
    from cutile_lab.notebook.live import check_cell
    ran = []
    ns = {"record": ran.append}
    code = ('%%tilekernel --spec B=128\nrecord(1)\n'
            'def f(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'
            '    t = load_tile_like(x, z)\n'
            '    z.store(t)\n'
            '    x.store(t)\n')
    diags = check_cell(code, ns)
    assert [d["code"] for d in diags] == ["TL010"]
    assert diags[0]["span"]["line"] == 6 and diags[0]["span"]["col"] == 4      # the cell's line
    assert diags[0]["help"] and not ran and "f" not in ns
    assert check_cell("x = 1\n", ns) == []                                    # not a kernel cell
    half = check_cell("%%tilekernel\ndef f(z: Mut[Tensor[f32, \"B\"]], x: Tensor[", ns)
    assert [d["code"] for d in half] == ["CL010"] and half[0]["span"]["line"] == 2  # no raise
