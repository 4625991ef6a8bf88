"""A real Jupyter kernel (ipykernel over ZMQ, run by nbclient as nbconvert/nbval would): the
report reaches the front end as JSON + HTML + text, ``sweep`` shows a widget progress bar, and
a failing cell is an error output without a traceback from inside the lab."""
from __future__ import annotations

import os

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

from cutile_lab.notebook.report import REPORT_MIME  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CELLS = [
    "%load_ext cutile_lab",
    '%%tilekernel --spec B=256\n'
    'def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):\n'
    '    z.store(load_tile_like(x, z) + load_tile_like(y, z))\n',
    "from concurrent.futures import ThreadPoolExecutor\n"
    "from cutile_lab.notebook import sweep\n"
    "with ThreadPoolExecutor(2) as ex:\n"
    "    df = sweep(add, None, executor=ex, B=[64, 128])\n"
    "list(df['ok'])",
    '%%tilekernel\n'
    'def bad(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'
    '    t = load_tile_like(x, z)\n'
    '    x.store(t)\n',
]


def test_notebook_in_a_real_kernel(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    nb.cells[-1].metadata["tags"] = ["raises-exception"]
    env = dict(os.environ, CUTILE_LAB_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}},
                                     allow_errors=True)
    old = dict(os.environ)
    os.environ.update(env)            # the kernel inherits this environment
    try:
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    compile_out = [o for o in nb.cells[1].outputs if o.output_type == "display_data"]
    assert len(compile_out) == 1
    data = compile_out[0]["data"]
    assert set(data) >= {REPORT_MIME, "text/html", "text/plain"}
    report = data[REPORT_MIME]
    assert report["kernel"] == "add" and report["status"] == "compiled"
    assert "addf" in report["tileir"]["text"]
    assert report["source"]["first_line"] == 2
    assert report["cell_id"] is None          # nbclient sends no cellId (JupyterLab does)
    # sweep: a widget progress bar in a notebook, and its table
    sweep_out = nb.cells[2].outputs
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {})
               for o in sweep_out), sweep_out
    assert any("[True, True]" in o.get("data", {}).get("text/plain", "") for o in sweep_out)
    # the bad kernel: a report with its diagnostic, then one short error line
    bad = nb.cells[3].outputs
    [report] = [o["data"][REPORT_MIME] for o in bad if o.output_type == "display_data"]
    assert any(d["code"] == "TL010" and d["span"]["line"] == 3
               for d in report["diagnostics"])
    [err] = [o for o in bad if o.output_type == "error"]
    assert err["ename"] == "TileCellError"
    assert "\n".join(err["traceback"]).count("\n") <= 2      # no traceback from the lab
    assert "cutile_lab/" not in "\n".join(err["traceback"])


def test_cell_id_comes_from_the_front_ends_request():
    from cutile_lab.notebook.cells import cell_id as _cell_id

    class Kernel:
        def get_parent(self, channel="shell"):
            return {"header": {}, "metadata": {"cellId": "5c1e-cell"}}

    class Shell:
        kernel = Kernel()
    assert _cell_id(Shell()) == "5c1e-cell"
    assert _cell_id(object()) is None
