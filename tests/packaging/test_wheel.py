"""The wheel, as a user gets it: built from this checkout with the project's own backend (the
prebuilt JupyterLab extension already there: no Node.js), installed into a fresh virtual
environment (no access to the checkout), and used: ``jupyter labextension list`` shows the
extension enabled, ``cutile-lab explain TL010`` prints its entry, the README's Python example
runs on the simulator, ``cutile-lab tutorials`` copies the tutorials out, and a notebook (a
diagnostic, a compiled report, a launch, ``%tile_explain``) executed with nbconvert makes HTML
whose links all resolve inside it (none into a source tree).

The install reuses pip's cache (CI's setup filled it) and skips byte-compiling; on the 2-core
CI machine the module takes about 3 to 4 minutes, most of it pip installing the dependencies.
``-m "not packaging"`` leaves it out of a quick local run.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LABEXT = ROOT / "cutile_lab" / "labextension"
import tomllib  # noqa: E402  (3.11+, the oldest Python the project claims)
FORCED = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"][
    "targets"]["wheel"]["force-include"]

pytestmark = pytest.mark.packaging

TIMES: dict[str, float] = {}


def _run(cmd, *, env, cwd, timeout=600, check=True) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)
    if check:
        assert proc.returncode == 0, (f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n"
                                      f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    if not (LABEXT / "static" / "style.js").is_file():
        pytest.fail("the JupyterLab extension is not built (cutile_lab/labextension/): "
                    "`scripts/dev setup` builds it; this test must not need Node.js")
    out = tmp_path_factory.mktemp("dist")
    t = time.monotonic()
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
          "--disable-pip-version-check", "-w", str(out), str(ROOT)], env=dict(os.environ),
         cwd=out)
    TIMES["build wheel"] = time.monotonic() - t
    [whl] = out.glob("cutile_lab-*.whl")
    return whl


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory):
    """(bin folder, environment, a working folder outside the checkout)."""
    base = tmp_path_factory.mktemp("fresh")
    home = base / "work"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "VIRTUAL_ENV", "JUPYTER", "CUTILE_LAB", "PIP_REQ"))}
    env.update(JUPYTER_CONFIG_DIR=str(base / "jupyter-config"),
               JUPYTER_DATA_DIR=str(base / "jupyter-data"),
               IPYTHONDIR=str(base / "ipython"), CUTILE_LAB_CACHE_DIR=str(base / "cache"),
               CUTILE_LAB_BACKEND="sim", CUTILE_LAB_NO_PREWARM="1", MPLBACKEND="Agg")
    t = time.monotonic()
    _run([sys.executable, "-m", "venv", str(base / "venv")], env=env, cwd=home)
    bin_dir = base / "venv" / "bin"
    _run([str(bin_dir / "python"), "-m", "pip", "install", "--no-compile",
          "--disable-pip-version-check", "--progress-bar", "off", str(wheel)],
         env=env, cwd=home, timeout=900)
    TIMES["fresh venv + install"] = time.monotonic() - t
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return bin_dir, env, home


def test_the_wheel_carries_extension_catalog_tutorials_license_and_metadata(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    data = next(n.split("/data/")[0] for n in names if "/data/share/" in n) + "/data/share/"
    ext = data + "jupyter/labextensions/cutile-lab/"
    assert {ext + "package.json", ext + "install.json", ext + "static/style.js"} <= names
    assert "cutile_lab/docs/diagnostics.md" in names
    assert "cutile_lab/notebook/report.schema.json" in names     # the report bundle's contract
    for nb in (ROOT / "notebooks").glob("[0-9]*.ipynb"):
        assert f"cutile_lab/tutorials/{nb.name}" in names
    assert "cutile_lab/tutorials/puzzles.py" in names
    assert {n for n in names if n.startswith("cutile_lab/tutorials/")} == {
        f"cutile_lab/tutorials/{p.name}" for p in (ROOT / "notebooks").glob("[0-9]*.ipynb")
    } | {"cutile_lab/tutorials/puzzles.py", "cutile_lab/tutorials/README.md",
         "cutile_lab/tutorials/recorded.py", "cutile_lab/tutorials/existing_kernels.py"} | {
        "cutile_lab/tutorials/" + dst.split("cutile_lab/tutorials/", 1)[1]
        for src, dst in FORCED.items() if src.startswith("benchmarks/results/")}
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "License-Expression: Apache-2.0" in meta
    assert re.search(r"^Author: .+|^Author-email: .+", meta, re.M)
    assert re.search(r"^Project-URL: .+, https://", meta, re.M)
    assert "Classifier: Framework :: Jupyter :: JupyterLab :: Extensions :: Prebuilt" in meta
    assert "Requires-Python: >=3.11" in meta
    assert not any(n.startswith(("tests/", "notebooks/", "docs/", "extension/")) for n in names)


def test_labextension_is_listed_enabled(venv):
    bin_dir, env, home = venv
    proc = _run([str(bin_dir / "jupyter"), "labextension", "list"], env=env, cwd=home)
    out = proc.stdout + proc.stderr
    line = next((ln for ln in out.splitlines() if "cutile-lab" in ln), "")
    assert "enabled" in line and "OK" in line, out
    assert str(bin_dir.parent) in out          # found inside the fresh environment


def test_explain_from_the_installed_package(venv):
    bin_dir, env, home = venv
    proc = _run([str(bin_dir / "cutile-lab"), "explain", "TL010"], env=env, cwd=home)
    assert proc.stdout.startswith("TL010 — store into a shared (read-only) input")
    assert "**Fix:**" in proc.stdout
    where = _run([str(bin_dir / "python"), "-c",
                  "from cutile_lab.diagnostics.explain import catalog_path; print(catalog_path())"],
                 env=env, cwd=home).stdout.strip()
    assert where.startswith(str(bin_dir.parent)) and str(ROOT) not in where


def _readme_python_example() -> str:
    """The README's file example and its launch, in order, as one script."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    compile_block = next(b for b in blocks if "add.compile(" in b and "@cl.kernel" in b)
    launch_block = next(b for b in blocks if ".partition(" in b and ".sync()" in b)
    return compile_block + launch_block


def test_readme_python_example_runs_on_the_simulator(venv, tmp_path):
    bin_dir, env, home = venv
    script = home / "readme_example.py"
    script.write_text(_readme_python_example() + (
        "import numpy as np\n"
        "assert 'registers' in compiled.summary() and 'entry @' in compiled.tileir\n"
        "assert np.allclose(z.to_numpy(), x.to_numpy() + y.to_numpy())\n"
        "assert z.backend == 'sim', z.backend\n"
        "print('README example OK')\n"),
        encoding="utf-8")
    proc = _run([str(bin_dir / "python"), str(script)], env=env, cwd=home)
    assert "README example OK" in proc.stdout


NOTEBOOK_CELLS = [
    "%load_ext cutile_lab",
    # a diagnostic (its code links to its explanation)
    '%%tilekernel\n'
    'def bad(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'
    '    t = load_tile_like(x, z)\n'
    '    z.store(t)\n'
    '    x.store(t)\n',
    # a compiled report (Tile IR, resources, remarks)
    '%%tilekernel --spec B=128\n'
    'def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):\n'
    '    z.store(load_tile_like(x, z) + load_tile_like(y, z))\n',
    # a launch on the simulator
    "x = cl.randn(1000).sync(); y = cl.randn(1000).sync(); z = cl.zeros(1000).sync()\n"
    "zp, x, y = add(z.partition(128), x, y).sync()\n"
    "import numpy as np\n"
    "assert np.allclose(zp.unpartition().to_numpy(), x.to_numpy() + y.to_numpy())",
    "%tile_explain TL013",
]


def test_tutorials_are_copied_out_of_the_installed_package(venv):
    bin_dir, env, home = venv
    proc = _run([str(bin_dir / "cutile-lab"), "tutorials", "tutorials", "--no-open"],
                env=env, cwd=home)
    folder = Path(proc.stdout.strip())
    assert folder == (home / "tutorials").resolve()
    shipped = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9]*.ipynb"))
    assert sorted(p.name for p in folder.glob("[0-9]*.ipynb")) == shipped
    assert (folder / "puzzles.py").is_file()


def test_notebook_executed_with_nbconvert_links_only_inside_itself(venv):
    bin_dir, env, home = venv
    cells = [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {},
              "outputs": [], "source": src} for i, src in enumerate(NOTEBOOK_CELLS)]
    nb = home / "lab.ipynb"
    nb.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                              "nbformat_minor": 5}), encoding="utf-8")
    t = time.monotonic()
    _run([str(bin_dir / "jupyter"), "nbconvert", "--to", "html", "--execute", "--allow-errors",
          "--ExecutePreprocessor.timeout=600", "--output-dir", str(home / "html"), str(nb)],
         env=env, cwd=home, timeout=900)
    TIMES["nbconvert"] = time.monotonic() - t
    html = (home / "html" / "lab.html").read_text(encoding="utf-8")
    assert "error[" in html and "TL010" in html                 # the diagnostic was rendered
    assert "Tile IR" in html and "registers" in html             # so was the compiled report
    assert "TL013 — " in html                                    # and %tile_explain's entry
    assert "AssertionError" not in html and "NameError" not in html   # the launch ran right
    targets = re.findall(r'\b(?:href|src)\s*=\s*"([^"]*)"', html)
    ids = set(re.findall(r'\bid\s*=\s*"([^"]*)"', html))
    local = [t for t in targets if not re.match(r"(https?:|data:|mailto:)", t)]
    for target in local:
        assert target.startswith("#"), f"a link into a source tree: {target}"
        assert target[1:] in ids or target == "#", f"a link that resolves nowhere: {target}"
    assert "#cl-explain-tl010" in local
    assert "diagnostics.md" not in html


def test_report_times(venv):
    """Not a check: the times of this module, for the CI log (pytest -rA shows them)."""
    print({k: round(v, 1) for k, v in TIMES.items()})
