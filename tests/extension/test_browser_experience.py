"""What a new user meets in a real JupyterLab (issue #16), in headless Chromium:

- typing a store into a shared input in a ``%%tilekernel`` cell underlines it (TL010) with the
  message and help on hover, without running the cell (live diagnostics);
- a launch error renders in the rich panel, located at its cell and line;
- the SASS tab of a compiled kernel and a ``%tile_diff`` view render;
- ``explore`` at a 1400 px window with the file browser open shows its plot with a real size;
- a report with unchecked (``with unsafe():``) blocks says so in its header.

One notebook and one browser run serve all of these (``tests/browser/experience.mjs``); each
test checks its part of the observations. Screenshots land in ``tests/browser/artifacts/``
(copies are kept in ``tests/browser/screenshots/``).
"""
from __future__ import annotations

import json
import random

import pytest

from tests.extension.browser import (ARTIFACTS, BROWSER, CHROMIUM, browser_test, notebook,
                                     run_script)

MIME = "application/vnd.cutile-lab.report+json"

ADD = '''def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    tx = load_tile_like(x, z)
    ty = load_tile_like(y, z)
    z.store(tx + ty)
'''

LIVE = '''%%tilekernel
def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    z.store(t * 2.0)'''
TYPED = "x.store(t)"


def cells(n: int) -> list[str]:
    sample = json.loads((BROWSER / "sample_report.json").read_text())
    sample["unchecked"] = [{"line": 3, "col": 4, "end_line": 4},
                           {"line": 5, "col": 4, "end_line": 5}]
    return [
        "%load_ext cutile_lab\nimport cutile_lab as cl\ncl.set_backend('sim')",
        "%%tilekernel --spec B=128 --arch sm_90\n" + ADD,
        "%tile_diff add B=128 B=256",
        # a report whose kernel has `with unsafe():` blocks (the checker's bundle key)
        "import json\nfrom IPython.display import display\n"
        f"bundle = json.loads({json.dumps(json.dumps(sample))})\n"
        f'display({{"{MIME}": bundle, "text/plain": "report"}}, raw=True)',
        "import numpy as np\nfrom cutile_lab.notebook import explore\n"
        "def make_args(B):\n"
        f"    z = cl.zeros({n}).sync().partition(B)\n"
        f"    x = cl.asarray(np.random.default_rng().standard_normal({n}).astype(np.float32))\n"
        "    return z, x, x\n"
        "ex = explore(add, make_args, B=[64, 128, 256])\nex.controls['B'].value = 128\nex",
        # a launch error (the last cell that runs: an error stops "run all")
        f"z = cl.zeros({n}).sync(); x = cl.randn({n}).sync()\n"
        "zp = z.partition(128)\n"
        "add(zp, z, x).sync()",
        LIVE,
    ]


@pytest.fixture(scope="module")
def seen(lab):
    n = random.randint(600, 3000)
    (lab["root"] / "experience.ipynb").write_text(json.dumps(notebook(cells(n)), indent=1))
    config = {"url": lab["url"], "token": lab["token"], "notebook": "experience.ipynb",
              "artifacts": str(ARTIFACTS), "chromium": CHROMIUM, "reports": 4, "liveCell": 6,
              "liveTyped": TYPED, "liveCode": "TL010"}
    observed = run_script("experience.mjs", config, timeout=600)
    (ARTIFACTS / "experience.json").write_text(json.dumps(observed, indent=1))
    observed["_context"] = (f"observations: {json.dumps(observed, indent=1)}\n"
                            f"server log tail:\n{lab['log'].read_text()[-3000:]}")
    assert "error" not in observed, observed["_context"]
    return observed


@browser_test
def test_live_diagnostics_underline_a_store_into_a_shared_input(seen):
    live, ctx = seen["live"], seen["_context"]
    assert live["underlined"] == TYPED, ctx
    assert "underline" in live["decoration"], ctx
    assert "error[TL010]" in live["tooltip"] and "`x` is a shared input" in live["tooltip"], ctx
    assert "help:" in live["tooltip"], ctx
    assert live["executionCount"] is None and live["outputs"] == 0, ctx    # never ran
    assert live["counters"]["received"] >= 1, ctx
    assert (ARTIFACTS / "live-diagnostics.png").exists()


@browser_test
def test_launch_error_renders_in_the_rich_panel_at_its_cell(seen):
    launch, ctx = seen["launch"], seen["_context"]
    assert launch["head"].startswith("error[TL102]"), ctx
    assert launch["location"].endswith("this cell:3:1"), ctx
    assert launch["lineText"].strip() == "add(zp, z, x).sync()", ctx
    reveal = launch["reveal"]
    assert reveal["cellIndex"] == launch["cellIndex"] == 5, ctx
    assert reveal["line"] == 2 and reveal["lineText"] == "add(zp, z, x).sync()", ctx


@browser_test
def test_sass_tab_and_diff_view_render(seen):
    sass, diff, ctx = seen["sass"], seen["diff"], seen["_context"]
    assert sass["visible"] and sass["hasExit"] and sass["lines"] > 20, ctx
    assert sass["box"]["width"] > 300 and sass["box"]["height"] > 100, ctx
    assert diff["tabs"] == ["compare", "tileirdiff", "sassdiff"], ctx
    assert diff["selected"] == "tileirdiff", ctx
    assert diff["oldLines"] > 0 and diff["newLines"] > 0, ctx
    assert diff["oldBackground"] not in ("rgba(0, 0, 0, 0)", "transparent"), ctx
    assert diff["sassRows"] > 0, ctx
    assert "registers" in diff["changedResources"] or "code bytes" in diff["changedResources"], ctx


@browser_test
def test_explore_plot_has_a_size_at_1400_px(seen):
    ex, ctx = seen["explore"], seen["_context"]
    assert ex["window"]["width"] == 1400 and ex["leftPanelOpen"], ctx
    assert ex["plot"]["width"] > 200 and ex["plot"]["height"] > 100, ctx
    assert ex["table"] is not None and ex["table"]["width"] > 100, ctx
    assert ex["tableScrolls"], ctx                       # never cut: it fits or scrolls
    right = ex["area"]["x"] + ex["area"]["width"]
    assert ex["plot"]["x"] + ex["plot"]["width"] <= right + 1, ctx
    assert ex["rows"] == 2, ctx                          # 64 then 128: one row each


@browser_test
def test_unchecked_blocks_badge_in_the_header(seen):
    assert seen["unchecked"]["text"] == "2 unchecked blocks", seen["_context"]
