"""The JupyterLab extension in a real browser.

Starts JupyterLab on 127.0.0.1 (free port, temporary root, token), writes a notebook whose
cells publish a cutile_lab report, and drives headless Chromium through
``tests/browser/report.mjs`` (playwright-core). Checks that the report renders with its
tabs, that Tile IR is highlighted and linked to the source, and that clicking a
diagnostic or a Tile IR line moves the notebook cell's cursor to that line.

Needs: the built extension (``cd extension && jlpm build``), Node.js, Chromium
(``/usr/bin/chromium`` or ``$CUTILE_LAB_CHROMIUM``). Skips only when Node.js or Chromium is
missing; ``playwright-core`` is installed into ``tests/browser/node_modules`` on first use.
Screenshots land in ``tests/browser/artifacts/``.

``CUTILE_LAB_BROWSER_CELLS=tilekernel`` runs real ``%%tilekernel`` cells instead of the
stand-in cell that displays ``tests/browser/sample_report.json``.
"""

from __future__ import annotations

import json
import os
import shutil

from tests.extension.browser import (ARTIFACTS, BROWSER, CHROMIUM, browser_test, notebook,
                                     run_script)

SAMPLE = BROWSER / "sample_report.json"
MIME = "application/vnd.cutile-lab.report+json"


# --- the notebook under test ---------------------------------------------------------------


def sample_cells(sample: dict) -> list[str]:
    """A stand-in for ``%%tilekernel``: one cell that displays the sample bundle.

    Its first line stands where ``%%tilekernel`` would, and the kernel source follows as
    comments, so that the bundle's ``source.first_line`` (2) points at the same cell lines
    as it would in a real ``%%tilekernel`` cell.
    """
    kernel = "\n".join("# " + line for line in sample["source"]["text"].split("\n"))
    return [
        "# stand-in for %%tilekernel: displays tests/browser/sample_report.json\n"
        + kernel
        + "\nimport json\n"
        + "from IPython.display import display\n"
        + 'bundle = json.load(open("sample_report.json"))\n'
        + f'display({{"{MIME}": bundle, "text/plain": "cutile_lab report: " + bundle["kernel"]}}, raw=True)'
    ]


def tilekernel_cells(sample: dict) -> list[str]:
    """Real ``%%tilekernel`` cells: a kernel that compiles (its report has Tile IR), then the
    sample's kernel, whose diagnostics the test clicks. The failing cell comes last: a cell
    error stops "run all"."""
    good = sample["source"]["text"].replace("x.store(tx + ty)", "z.store(tx + ty)")
    return [
        "%load_ext cutile_lab",
        "%%tilekernel --spec B=128 --arch sm_90\n" + good,
        "%%tilekernel --spec B=128 --arch sm_90\n" + sample["source"]["text"],
    ]


# --- the test ---------------------------------------------------------------------------


@browser_test
def test_report_in_jupyterlab(lab):
    sample = json.loads(SAMPLE.read_text())
    real = os.environ.get("CUTILE_LAB_BROWSER_CELLS") == "tilekernel"
    cells = tilekernel_cells(sample) if real else sample_cells(sample)
    shutil.copy(SAMPLE, lab["root"] / "sample_report.json")
    (lab["root"] / "add.tileir").write_text(sample["tileir"]["text"] + "\n")
    (lab["root"] / "report.ipynb").write_text(json.dumps(notebook(cells), indent=1))

    config = {
        "url": lab["url"],
        "token": lab["token"],
        "notebook": "report.ipynb",
        "reports": 2 if real else 1,
        "artifacts": str(ARTIFACTS),
        "chromium": CHROMIUM,
        "tileirFile": "add.tileir",
    }
    seen = run_script("report.mjs", config, timeout=300)
    (ARTIFACTS / "observations.json").write_text(json.dumps(seen, indent=1))
    context = f"observations: {json.dumps(seen, indent=1)}\nserver log tail:\n{lab['log'].read_text()[-3000:]}"
    assert "error" not in seen, context

    # Tabs: non-empty sections only, Diagnostics first and selected.
    assert seen["hasDiagnosticsReport"], context
    assert seen["tabs"][0] == "diagnostics" and seen["selectedTab"] == "diagnostics", context
    if not real:
        assert seen["tabs"] == [
            "diagnostics", "tileir", "resources", "sass", "remarks", "timings", "lowered", "benchmark"
        ]
        assert seen["diagnosticHead"] == "error[TL010]: store into shared tensor `x`"
        assert seen["diagnosticLinkHref"] == sample["diagnostics"][0]["url"]
    assert seen["diagnosticSeverityColor"] not in ("rgb(0, 0, 0)", "rgba(0, 0, 0, 0.87)"), context

    # Clicking the diagnostic put the cursor on its line in the cell, focused and highlighted.
    expected = seen["expectedLineText"].strip()
    cursor = seen["cursor"]
    assert cursor["mode"] == "edit" and cursor["focused"], context
    assert cursor["lineText"].endswith(expected), context
    assert cursor["highlighted"] == [cursor["lineText"]], context
    assert seen["reveal"]["line"] == cursor["position"]["line"], context
    if not real:
        first = sample["diagnostics"][0]["span"]
        assert cursor["position"]["line"] == sample["source"]["first_line"] + first["line"] - 2, context

    # Tile IR: highlighted tokens, hover linking both ways, click → source line.
    assert seen["hasTileIRReport"], context
    counts = seen["tokenCounts"]
    for kind in ("op", "keyword", "type", "ssa", "punct"):
        assert counts.get(f"cutile-tir-{kind}", 0) > 0, context
    assert seen["opColor"] != seen["plainColor"], context
    assert seen["mappedIRLines"] > 0 and seen["linkedFromIR"], context
    assert int(seen["hoveredIRLine"]) in seen["linkedFromSource"], context
    assert seen["linkedBackground"] not in (None, "rgba(0, 0, 0, 0)"), context
    assert seen["irCursor"]["lineText"].endswith(seen["irExpectedLineText"].strip()), context
    assert seen["irCursor"]["highlighted"] == [seen["irCursor"]["lineText"]], context
    if not real:
        assert seen["linkedFromIR"] == [2] and seen["irCursor"]["position"]["line"] == 2, context

    # Dark theme re-colours the report; the Tile IR file type is registered.
    assert seen["lightBackground"] != seen["darkBackground"], context
    assert "tileir" in seen["tileirLanguage"]["fileTypes"], context
    editor = seen["tileirEditor"]
    assert editor["mimeType"] == "text/x-tileir", context
    assert editor["styledTokens"] > 50 and "make_token" in editor["styledTexts"], context
    assert not [e for e in seen["consoleErrors"] if "cutile" in e.lower()], context
    assert (ARTIFACTS / "report.png").exists()
