"""The tutorial notebooks (``notebooks/``), on the CPU simulator.

* every notebook runs top to bottom under nbval, and its outputs match the stored ones
  (sanitized with ``notebooks/nbval-sanitize.cfg``; cells tagged ``nbval-ignore-output`` only
  have to run, cells tagged ``raises-exception`` have to raise the stored error);
* the notebooks on disk are the ones ``notebooks/build.py`` writes (cells, tags and ids);
* the puzzle stubs fail their checks in the expected way, with a message from the check and
  never an exception from inside the lab; the solutions pass every check;
* the checks' messages for other kinds of mistakes (signature, dtype, crash, race...);
* ``notebooks/run_all.py`` fails loudly on an unexpected exception and lets tagged cells raise.

Every notebook run hides any GPU (``CUDA_VISIBLE_DEVICES=""``), as the stored outputs were
made without one, and uses a compile cache of its own.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NB = ROOT / "notebooks"
NOTEBOOKS = sorted(NB.glob("[0-9]*.ipynb"))


def _env(tmp_path: Path) -> dict:
    env = dict(os.environ)
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["CUTILE_LAB_CACHE_DIR"] = str(tmp_path / "cache")
    env.pop("CUTILE_LAB_BACKEND", None)
    env.pop("CUTILE_LAB_NO_CACHE", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]]
                                                      if env.get("PYTHONPATH") else []))
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    return env


def _tail(text: str, n: int = 30000) -> str:
    return text if len(text) <= n else "...\n" + text[-n:]


def test_there_are_notebooks():
    names = [p.name for p in NOTEBOOKS]
    assert names[0] == "01-hello-tile.ipynb"
    assert "07-puzzles.ipynb" in names and "07-puzzles-solutions.ipynb" in names
    assert "08-existing-cutile-kernels.ipynb" in names
    assert "09-cuda-cpp.ipynb" in names
    assert "10-sweeps-at-scale.ipynb" in names


# --- nbval ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_and_matches_its_outputs(notebook, tmp_path):
    for mod in ("nbval", "ipykernel", "nbformat"):
        if importlib.util.find_spec(mod) is None:
            pytest.fail(f"{mod} is not installed: the notebook tests need the dev extra "
                        "(scripts/dev test installs it)")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval",
           "--nbval-current-env", "--nbval-sanitize-with", str(NB / "nbval-sanitize.cfg"),
           "--nbval-cell-timeout", "600", "-p", "tests.notebooks.nbval_plugin",
           "-o", "addopts=", "--rootdir", str(ROOT), str(notebook)]
    proc = subprocess.run(cmd, cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True,
                          timeout=1200)
    assert proc.returncode == 0, (
        f"nbval failed on {notebook.name} (regenerate stored outputs with "
        f"`python notebooks/build.py --execute {notebook.name[:2]}` if the change is "
        f"intended):\n{_tail(proc.stdout)}\n{_tail(proc.stderr, 5000)}")


# --- the builder -----------------------------------------------------------------------------------

def _build_module():
    spec = importlib.util.spec_from_file_location("_notebooks_build", NB / "build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_notebooks_are_what_the_builder_writes():
    nbformat = pytest.importorskip("nbformat")
    build = _build_module()
    # notebooks from 10 on are edited as notebooks, not generated
    assert set(build.NOTEBOOKS) == {p.name for p in NOTEBOOKS if p.name < "10"}
    for name, cells in build.NOTEBOOKS.items():
        want = build.make_notebook(name, cells())
        have = nbformat.read(NB / name, as_version=4)
        assert len(have.cells) == len(want.cells), name
        for w, h in zip(want.cells, have.cells):
            assert (h.cell_type, h.id, h.source) == (w.cell_type, w.id, w.source), \
                f"{name}: cell {h.id} differs from notebooks/build.py; rebuild the notebooks"
            assert h.metadata.get("tags", []) == w.metadata.get("tags", []), (name, h.id)
        code = [c for c in have.cells if c.cell_type == "code"]
        assert all(c.execution_count is not None for c in code), \
            f"{name} has cells without stored outputs: run `python notebooks/build.py --execute`"


def test_cells_meant_to_fail_are_tagged():
    nbformat = pytest.importorskip("nbformat")
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            errors = [o for o in cell.outputs if o.output_type == "error"]
            tagged = "raises-exception" in cell.metadata.get("tags", [])
            assert bool(errors) == tagged, (path.name, cell.id, cell.source[:80])


# --- the puzzles -----------------------------------------------------------------------------------

# what each stub's check must say (its kind, and words that must be in the message)
STUB_FAILURES = {
    "copy": ("mismatch", ["wrong values", "the first is z[0]", "got 0.0",
                          "the output is all zeros"]),
    "scale": ("mismatch", ["wrong values", "0.4 times the expected"]),
    "add_row": ("out_of_bounds", ["out of bounds", "outside `row`", "SIM001"]),
    "transpose2d": ("race", ["race", "written by more than one tile", "SIM010"]),
    "row_sum": ("mismatch", ["wrong values", "the first is z[0, 0]", "got 0.0"]),
    "row_max": ("mismatch", ["wrong values", "padding", "neg_inf"]),
    "causal_mask": ("mismatch", ["wrong values", "the first is z[0, 1]: expected 0.0"]),
    "log_softmax": ("mismatch", ["wrong values", "the first is z[0, 0]"]),
    "matmul": ("mismatch", ["wrong values", "the first is c[0, 0]", "c.store"]),
}


@pytest.fixture(scope="module")
def puzzle_runs(tmp_path_factory):
    pytest.importorskip("nbformat")
    tmp = tmp_path_factory.mktemp("puzzles")
    out = tmp / "runs.json"
    proc = subprocess.run(
        [sys.executable, str(NB / "run_all.py"), "--quiet", "--json", str(out),
         "07-puzzles.ipynb", "07-puzzles-solutions.ipynb"],
        cwd=ROOT, env=_env(tmp), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, _tail(proc.stdout) + _tail(proc.stderr, 5000)
    return {r["notebook"]: r for r in json.loads(out.read_text())}


def test_puzzle_stubs_fail_their_checks_as_expected(puzzle_runs):
    rec = puzzle_runs["07-puzzles.ipynb"]
    assert rec["ok"]
    results = rec["puzzles"]
    assert set(results) == set(STUB_FAILURES)
    for name, (kind, words) in STUB_FAILURES.items():
        r = results[name]
        assert not r["ok"], name
        assert r["kind"] == kind, (name, r["message"])
        assert r["message"].startswith(f"✗ {name}: "), r["message"]
        for w in words:
            assert w in r["message"], (name, w, r["message"])
        assert "Traceback" not in r["message"] and "bug in cutile_lab" not in r["message"]


def test_puzzle_solutions_pass_every_check(puzzle_runs):
    rec = puzzle_runs["07-puzzles-solutions.ipynb"]
    assert rec["ok"]
    results = rec["puzzles"]
    assert set(results) == set(STUB_FAILURES)
    for name, r in results.items():
        assert r["ok"] and r["kind"] == "ok", (name, r["message"])
        assert "no races, nothing out of bounds" in r["message"]


@pytest.fixture(scope="module")
def puzzles():
    sys.path.insert(0, str(NB))
    try:
        import puzzles as mod
    finally:
        sys.path.remove(str(NB))
    return mod


def _kernel(src: str, name: str):
    import cutile_lab as cl
    return cl.kernels_from_source(src, f"<{name}>")[name]


def test_check_explains_a_signature_that_does_not_fit(puzzles):
    k = _kernel('def copy(z: Mut[Tensor[f16, "B"]], x: Tensor[f32, "?"]):\n'
                '    z.store(load_tile_like(x, z).astype(f16))\n', "copy")
    r = puzzles.check_copy(k, gpu=False)
    assert not r and r.kind == "signature"
    assert "declared with dtype f16, but the puzzle's `z` holds f32" in r.message
    assert "expected: copy(" in r.message and "yours:" in r.message

    k = _kernel('def copy(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], '
                'y: Tensor[f32, "?"]):\n    z.store(load_tile_like(x, z))\n', "copy")
    r = puzzles.check_copy(k, gpu=False)
    assert r.kind == "signature" and "takes 3 parameter(s) but the puzzle passes 2" in r.message

    k = _kernel('def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], '
                'alpha: Tensor[f32, "?"]):\n    z.store(load_tile_like(x, z))\n', "scale")
    r = puzzles.check_scale(k, gpu=False)
    assert r.kind == "signature" and "`alpha` is a shared input" in r.message


def test_check_explains_what_is_not_a_kernel(puzzles):
    def copy(z, x):
        pass
    r = puzzles.check_copy(copy, gpu=False)
    assert r.kind == "not_a_kernel" and "%%tilekernel" in r.message
    assert puzzles.check_copy(None, gpu=False).kind == "not_a_kernel"
    assert "not a tile kernel (a int)" in puzzles.check_copy(3, gpu=False).message


def test_check_reports_a_crash_at_the_users_line(puzzles):
    k = _kernel('def add_row(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"], '
                'row: Tensor[f32, "?"]):\n'
                '    r = load_tile(row, (tile_id(1),), (BM,))\n'
                '    z.store(load_tile_like(x, z) + r)\n', "add_row")
    r = puzzles.check_add_row(k, gpu=False)
    assert r.kind == "crash", r.message
    assert "<add_row>:3" in r.message and "cannot be broadcast" in r.message


def test_check_reports_races_with_a_picture(puzzles):
    k = _kernel('def copy(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'
                '    t = load_tile_like(x, z)\n'
                '    with unsafe():\n'
                '        store(z, index=(tile_id(0) // 2,), tile=t)\n', "copy")
    r = puzzles.check_copy(k, gpu=False)
    assert r.kind == "race", r.message
    assert r.picture is not None and r.picture[:4] == b"\x89PNG"


def test_check_reports_unwritten_elements(puzzles):
    k = _kernel('def copy(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'
                '    t = load_tile_like(x, z)\n'
                '    if tile_id(0) > 0:\n'
                '        z.store(t)\n', "copy")
    r = puzzles.check_copy(k, gpu=False)
    assert r.kind == "unwritten", r.message
    assert "were never written; the first is z[0]" in r.message


def test_check_reports_a_refused_launch(puzzles):
    # the output declared with a fixed tile that the check's partition does not have
    k = _kernel('def copy(z: Mut[Tensor[f32, "128"]], x: Tensor[f32, "?"]):\n'
                '    z.store(load_tile_like(x, z))\n', "copy")
    r = puzzles.check_copy(k, gpu=False)
    assert r.kind == "launch", r.message
    assert "was refused" in r.message and "TL110" in r.message


def test_check_passes_a_right_kernel_and_remembers_it(puzzles):
    k = _kernel('def copy(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'
                '    z.store(load_tile_like(x, z))\n', "copy")
    r = puzzles.check("copy", k, gpu=False)
    assert r and r.kind == "ok" and puzzles.RESULTS["copy"] is r
    assert "✓ copy" in puzzles.progress()
    # new random inputs each time, when asked
    assert puzzles.check("copy", k, seed=None, gpu=False)


# --- run_all.py --------------------------------------------------------------------------------------

def test_run_all_fails_loudly_and_lets_tagged_cells_raise(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.v4.new_notebook()
    ok = nbformat.v4.new_code_cell("x = 1")
    tagged = nbformat.v4.new_code_cell("raise ValueError('meant to')")
    tagged.metadata["tags"] = ["raises-exception"]
    after = nbformat.v4.new_code_cell("print('after', x)")
    nb.cells = [ok, tagged, after]
    good = tmp_path / "90-good.ipynb"
    nbformat.write(nb, good)
    nb.cells = [ok, nbformat.v4.new_code_cell("1 / 0"), after]
    bad = tmp_path / "91-bad.ipynb"
    nbformat.write(nb, bad)

    run = [sys.executable, str(NB / "run_all.py")]
    proc = subprocess.run(run + [str(good)], cwd=ROOT, env=_env(tmp_path), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "after 1" in proc.stdout and "ok" in proc.stdout

    proc = subprocess.run(run + [str(bad)], cwd=ROOT, env=_env(tmp_path), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 1
    assert "raised ZeroDivisionError unexpectedly" in proc.stdout
    assert "after 1" not in proc.stdout          # the notebook stopped at the failing cell
    assert "FAILED" in proc.stdout
