"""The tutorial notebooks (``notebooks/``), on the CPU simulator.

* every notebook runs top to bottom under nbval, and its outputs match the stored ones
  (sanitized with ``notebooks/nbval-sanitize.cfg``; cells tagged ``nbval-ignore-output`` only
  have to run, cells tagged ``raises-exception`` have to raise the stored error);
* every notebook is paired with a jupytext ``py:percent`` file, and the two hold the same
  cells (sources and tags), with outputs stored in the ``.ipynb``;
* every puzzle stub (and every exercise stub of notebook 02) fails its check with its intended
  feedback, never an exception from inside the lab; every solution passes;
* one test per kind of feedback: wrong values (the picture and the pattern over the tile
  grid, a known mistake), out of bounds and races (naming the case and its shapes), a kernel
  whose %%tilekernel cell failed (stale), a signature that does not fit, a crash...;
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

import numpy as np
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


PAIRED = [p for p in NOTEBOOKS if p.with_suffix(".py").exists()]


def test_there_are_notebooks():
    names = [p.name for p in NOTEBOOKS]
    assert names[:3] == ["01-hello-tile.ipynb", "02-thinking-in-tiles.ipynb",
                         "03-ownership.ipynb"]
    assert "07-puzzles.ipynb" in names and "07-puzzles-solutions.ipynb" in names
    assert len(names) >= 8
    # the tutorials are edited as text (jupytext pairs): no generator program any more
    assert {p.name for p in NOTEBOOKS if p.name[:2] <= "07"} <= {p.name for p in PAIRED}
    assert not (NB / "build.py").exists()
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
        f"nbval failed on {notebook.name} (store new outputs with "
        f"`python notebooks/run_all.py --store {notebook.name[:2]}` if the change is "
        f"intended):\n{_tail(proc.stdout)}\n{_tail(proc.stderr, 5000)}")


# --- authoring: ipynb + py:percent pairs ---------------------------------------------------------

@pytest.mark.parametrize("notebook", PAIRED, ids=[p.stem for p in PAIRED])
def test_notebook_and_its_text_file_hold_the_same_cells(notebook):
    jupytext = pytest.importorskip("jupytext")
    have = jupytext.read(notebook)
    text = jupytext.read(notebook.with_suffix(".py"))
    assert have.metadata.get("jupytext", {}).get("formats") == "ipynb,py:percent", notebook.name
    assert len(have.cells) == len(text.cells), (
        f"{notebook.name} and its .py differ: run `jupytext --sync notebooks/{notebook.name}`")
    for h, t in zip(have.cells, text.cells):
        assert (h.cell_type, h.source.strip()) == (t.cell_type, t.source.strip()), (
            f"{notebook.name} and its .py differ at\n{h.source[:200]}\nrun `jupytext --sync "
            f"notebooks/{notebook.name}`, then `python notebooks/run_all.py --store "
            f"{notebook.name[:2]}`")
        assert h.metadata.get("tags", []) == t.metadata.get("tags", []), (notebook.name,
                                                                          h.source[:80])
    code = [c for c in have.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), (
        f"{notebook.name} has cells without stored outputs: run "
        f"`python notebooks/run_all.py --store {notebook.name[:2]}`")


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


# --- the puzzles, as the notebooks run them --------------------------------------------------

# what each stub's check must say: its kind, and words that must be in the message
STUB_FAILURES = {
    "scale": ("mismatch", ["times the expected one", "case 1 of 2", "x: f32[1000]"]),
    "add_row": ("out_of_bounds", ["outside `row`", "SIM001", "case 2 of 2",
                                  "row: f32[256], z: f32[64, 256]"]),
    "outer": ("mismatch", ["only the tiles on the diagonal of the tile grid"]),
    "transpose2d": ("race", ["SIM010", "written by more than one tile",
                             "x: f32[100, 200], z: f32[200, 100]"]),
    "causal_mask": ("mismatch", ["exactly the elements above the diagonal (column > row)"]),
    "row_max": ("mismatch", ["padding", "neg_inf"]),
    "long_row_sum": ("mismatch", ["the sum of the first 64 columns only"]),
    "outer_grad_x": ("mismatch", ["the plain row sum of dz"]),
    "outer_grad_y": ("mismatch", ["wrong values", "dz: f32["]),
    "online_softmax": ("mismatch", ["each tile was normalised on its own"]),
    "conv2d": ("out_of_bounds", ["SIM003", "gather", "x: f32[40, 50], k: f32[3, 3]"]),
    "batched_matmul": ("mismatch", ["only batch 0 is right"]),
    "matmul_kloop": ("mismatch", ["only the first K tile was multiplied"]),
    "matmul_mma": ("mismatch", ["the product of the last K tile only", "acc = mma(ta, tb, acc)"]),
    "matmul_grouped": ("requirement", ['tile_order="grouped"']),
    "split_k": ("race", ["SIM010", "grid=(3, 2, 4)", "store(c,"]),
    "dequant_matmul": ("mismatch", ["subtract 8"]),
    "flash_attention": ("mismatch", ["the accumulator is not rescaled"]),
}
EXERCISE_FAILURES = {
    "clip2d": ["tiles hold wrong elements"],
    "row_index": ["only the first tile row is right"],
    "tile_flip": ["z is x unchanged"],
    "col_sum": ["every element is wrong"],
    "third_cols": ["wrong values"],
}


@pytest.fixture(scope="module")
def puzzle_runs(tmp_path_factory):
    pytest.importorskip("nbformat")
    tmp = tmp_path_factory.mktemp("puzzles")
    out = tmp / "runs.json"
    proc = subprocess.run(
        [sys.executable, str(NB / "run_all.py"), "--quiet", "--json", str(out),
         "02-thinking-in-tiles.ipynb", "07-puzzles.ipynb", "07-puzzles-solutions.ipynb"],
        cwd=ROOT, env=_env(tmp), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, _tail(proc.stdout) + _tail(proc.stderr, 5000)
    return {r["notebook"]: r for r in json.loads(out.read_text())}


def _first_checks(rec) -> dict:
    first = {}
    for c in rec["checks"]:
        first.setdefault(c["puzzle"], c)
    return first


def test_there_are_enough_puzzles(puzzles):
    assert len(puzzles.PUZZLES) >= 16
    for p in puzzles.PUZZLES.values():
        assert p.hint and p.reference and p.cases, p.name


def test_puzzle_stubs_fail_their_checks_with_their_intended_feedback(puzzle_runs):
    rec = puzzle_runs["07-puzzles.ipynb"]
    assert rec["ok"]
    first = _first_checks(rec)
    assert set(first) == set(STUB_FAILURES)
    for name, (kind, words) in STUB_FAILURES.items():
        r = first[name]
        assert not r["ok"], name
        assert r["kind"] == kind, (name, r["message"])
        assert r["message"].startswith(f"✗ {name}: "), r["message"]
        for w in words:
            assert w in r["message"], (name, w, r["message"])
        assert "Traceback" not in r["message"] and "bug in cutile_lab" not in r["message"]
        if kind not in ("requirement",):          # every case-based report names its seed
            assert f"`check_{name}({name}, seed=" in r["message"], r["message"]
        if kind in ("mismatch", "race"):
            assert r["picture"], name
    # the failed redefinition of `scale` made the name unusable, and the check says so
    scale = [c for c in rec["checks"] if c["puzzle"] == "scale"]
    assert [c["kind"] for c in scale] == ["mismatch", "stale"]
    assert "`scale` is unusable" in scale[1]["message"]


def test_puzzle_solutions_pass_every_check(puzzle_runs):
    rec = puzzle_runs["07-puzzles-solutions.ipynb"]
    assert rec["ok"]
    results = rec["puzzles"]
    assert set(results) == set(STUB_FAILURES)
    for name, r in results.items():
        assert r["ok"] and r["kind"] == "ok", (name, r["message"])
        assert "no races, nothing out of bounds" in r["message"]


def test_exercises_of_notebook_02_fail_then_pass(puzzle_runs):
    rec = puzzle_runs["02-thinking-in-tiles.ipynb"]
    assert rec["ok"]
    by_name: dict = {}
    for c in rec["checks"]:
        by_name.setdefault(c["puzzle"], []).append(c)
    assert set(by_name) == set(EXERCISE_FAILURES)
    for name, words in EXERCISE_FAILURES.items():
        stub, solution = by_name[name]
        assert stub["kind"] == "mismatch", (name, stub["message"])
        for w in words:
            assert w in stub["message"], (name, w, stub["message"])
        assert solution["ok"], (name, solution["message"])


# --- each kind of feedback, in this process ------------------------------------------------------

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


OUTER_WRONG = ('def outer(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?"], '
               'y: Tensor[f32, "?"]):\n'
               '    tx = reshape(load_tile(x, (tile_id(0),), (BM,)), (BM, 1))\n'
               '    ty = reshape(load_tile(y, (tile_id(0),), (BN,)), (1, BN))\n'
               '    z.store(tx * ty)\n')


def test_mismatch_shows_the_wrong_elements_over_the_tile_grid_and_their_pattern(puzzles):
    r = puzzles.check_outer(_kernel(OUTER_WRONG, "outer"), gpu=False)
    assert r.kind == "mismatch", r.message
    assert r.picture is not None and r.picture[:4] == b"\x89PNG"
    assert any("only the tiles on the diagonal of the tile grid" in p for p in r.pattern)
    assert "case 1 of 2: `outer(z.partition((32, 32)), x, y) with x: f32[64], y: f32[96], " \
           "z: f32[64, 96]`" in r.message
    # a wrong value only in the last, ragged tile of a row sum: "only the ragged edge"
    k = _kernel('def long_row_sum(z: Mut[Tensor[f32, "BR, 1"]], x: Tensor[f32, "?, ?"], '
                'BN: Const[int] = 64):\n'
                '    acc = full((BR, 1), 0.0, dtype=f32)\n'
                '    for j in range(num_tiles(x, 1, (BR, BN))):\n'
                '        t = load_tile(x, (tile_id(0), j), (BR, BN), padding="neg_inf")\n'
                '        acc = acc + sum(t, axis=1, keepdims=True)\n'
                '    z.store(acc)\n', "long_row_sum")
    r = puzzles.check_long_row_sum(k, gpu=False)
    assert r.kind == "mismatch" and "got -inf" in r.message, r.message


def test_patterns_name_where_the_wrong_elements_are(puzzles):
    def says(wrong, tile, words):
        found = puzzles.patterns(wrong, tile)
        assert any(words in p for p in found), (words, found)

    w = np.zeros((100, 100), dtype=bool)
    w[96:, :] = True                                   # the last, ragged tile row of 32
    says(w, (32, 32), "only the ragged edge")
    w = np.zeros((96, 96), dtype=bool)
    w[32:64, :] = True
    says(w, (32, 32), "one tile row: only tile row 1 (rows 32–63)")
    w = np.zeros((96, 96), dtype=bool)
    w[:, 64:] = True
    says(w, (32, 32), "one tile column: only tile column 2 (columns 64–95)")
    says(np.eye(64, dtype=bool), (16, 16), "exactly the elements on the diagonal are wrong")
    says(np.tril(np.ones((64, 64), dtype=bool), -1), (16, 16), "below the diagonal")
    w = np.ones((96, 64), dtype=bool)
    w[:32] = False
    says(w, (32, 32), "only the first tile row is right")
    w = np.zeros((64, 64), dtype=bool)
    w[::16, :] = True                                  # the first row of every tile
    says(w, (16, 16), "the same positions are wrong inside every tile")
    w = np.ones((3, 16, 16), dtype=bool)
    w[0] = False
    says(w, (1, 8, 8), "only batch 0 is right")
    says(np.ones((8, 8), dtype=bool), (4, 4), "every element is wrong")


def test_out_of_bounds_names_the_case_and_its_shapes(puzzles):
    k = _kernel('def add_row(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"], '
                'row: Tensor[f32, "?"]):\n'
                '    r = load_tile(row, (tile_id(0),), (BN,))\n'
                '    z.store(load_tile_like(x, z) + reshape(r, (1, BN)))\n', "add_row")
    r = puzzles.check_add_row(k, gpu=False, seed=7)
    assert r.kind == "out_of_bounds", r.message
    assert ("case 2 of 2: `add_row(z.partition((16, 128)), x, row) with x: f32[64, 256], "
            "row: f32[256], z: f32[64, 256]`") in r.message
    assert "<add_row>:2" in r.message and "SIM001" in r.message
    assert "`check_add_row(add_row, seed=7)` replays this check" in r.message


def test_race_names_the_case_and_draws_the_owners(puzzles):
    k = _kernel('def split_k(c: Mut[Tensor[f32, "BM, BN"]], a: Tensor[f32, "?, ?"], '
                'b: Tensor[f32, "?, ?"], BK: Const[int] = 16):\n'
                '    with unsafe():\n'
                '        s = tile_id(2)\n'
                '        part = matmul(load_tile(a, (tile_id(0), s), (BM, BK)), '
                'load_tile(b, (s, tile_id(1)), (BK, BN)))\n'
                '        store(c, index=(tile_id(0), tile_id(1)), tile=part)\n', "split_k")
    r = puzzles.check_split_k(k, gpu=False)
    assert r.kind == "race", r.message
    assert "SIM010" in r.message and "<split_k>:5" in r.message
    assert "grid=(3, 2, 4)) with a: f32[40, 64], b: f32[64, 24], c: f32[40, 24]" in r.message
    assert r.picture is not None and r.picture[:4] == b"\x89PNG"


def test_a_kernel_whose_cell_failed_is_not_checked(puzzles):
    from cutile_lab.notebook.tilecell import FailedKernel
    r = puzzles.check_scale(FailedKernel("scale", "<tilekernel-cell-9>"), gpu=False)
    assert not r and r.kind == "stale"
    assert "`scale` is unusable: its last %%tilekernel cell (<tilekernel-cell-9>)" in r.message


def test_inputs_are_fresh_and_a_seed_replays_them(puzzles):
    k = _kernel('def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], alpha: f32):\n'
                '    z.store(load_tile_like(x, z))\n', "scale")
    a, b = (puzzles.check_scale(k, gpu=False, seed=s) for s in (11, 11))
    assert a.message == b.message and a.seed == 11
    seeds = {puzzles.check_scale(k, gpu=False).seed for _ in range(4)}
    assert len(seeds) > 1


def test_known_mistakes_are_named(puzzles):
    k = _kernel('def matmul_mma(c: Mut[Tensor[f32, "BM, BN"]], a: Tensor[f16, "?, ?"], '
                'bt: Tensor[f16, "?, ?"], BK: Const[int] = 32):\n'
                '    zero = full((BM, BN), 0.0, dtype=f32)\n'
                '    acc = zero\n'
                '    for k in range(num_tiles(a, 1, (BM, BK))):\n'
                '        acc = mma(load_tile(a, (tile_id(0), k), (BM, BK)), '
                'transpose(load_tile(bt, (tile_id(1), k), (BN, BK))), zero)\n'
                '    c.store(acc)\n', "matmul_mma")
    r = puzzles.check_matmul_mma(k, gpu=False)
    assert r.kind == "mismatch" and "likely: c is the product of the last K tile only" \
        in r.message, r.message


# wrong answers as a learner writes them (not the stubs), and what the feedback must point at
LEARNER = {
    "causal_mask": ("""
def causal_mask(z: Mut[Tensor[f32, "B, B"]], x: Tensor[f32, "?, ?"]):
    rows = reshape(arange(B, dtype=i32), (B, 1)) + tile_id(0) * B
    cols = reshape(arange(B, dtype=i32), (1, B)) + tile_id(1) * B
    z.store(where(cols < rows, load_tile_like(x, z), 0.0))
""", "mismatch", "exactly the elements on the diagonal are wrong"),
    "online_softmax": ("""
def online_softmax(z: Mut[Tensor[f32, "BR, BN"]], x: Tensor[f32, "?, ?"]):
    m = full((BR, 1), -1.0e30, dtype=f32)
    l = full((BR, 1), 0.0, dtype=f32)
    for j in range(num_tiles(x, 1, (BR, BN))):
        t = load_tile(x, (tile_id(0), j), (BR, BN), padding="neg_inf")
        m_new = maximum(m, max(t, axis=1, keepdims=True))
        l = l + sum(exp(t - m_new), axis=1, keepdims=True)
        m = m_new
    z.store(exp(load_tile_like(x, z) - m) / l)
""", "mismatch", "the running sum l was not rescaled"),
    "split_k": ("""
def split_k(c: Mut[Tensor[f32, "BM, BN"]], a: Tensor[f32, "?, ?"], b: Tensor[f32, "?, ?"],
            BK: Const[int] = 16):
    rows = reshape(arange(BM, dtype=i32), (BM, 1))
    cols = reshape(arange(BN, dtype=i32), (1, BN))
    with unsafe():
        s = tile_id(2)
        part = matmul(load_tile(a, (tile_id(0), s), (BM, BK)), load_tile(b, (s, tile_id(1)), (BK, BN)))
        atomic_add(c, (rows, cols), part)
""", "unwritten", "offset by tile_id * the tile size"),
    "batched_matmul": ("""
def batched_matmul(c: Mut[Tensor[f32, "1, BM, BN"]], a: Tensor[f32, "?, ?, ?"],
                   b: Tensor[f32, "?, ?, ?"], BK: Const[int] = 32):
    acc = full((BM, BN), 0.0, dtype=f32)
    for k in range(num_tiles(a, 2, (1, BM, BK))):
        ta = reshape(load_tile(a, (tile_id(0), tile_id(1), k), (1, BM, BK)), (BM, BK))
        tb = reshape(load_tile(b, (tile_id(0), k, tile_id(1)), (1, BK, BN)), (BK, BN))
        acc = acc + matmul(ta, tb)
    c.store(reshape(acc, (1, BM, BN)))
""", "out_of_bounds", "a: f32[3, 40, 64], b: f32[3, 64, 24], c: f32[3, 40, 24]"),
}


@pytest.mark.parametrize("name", sorted(LEARNER))
def test_a_learners_wrong_answer_gets_feedback_that_points_at_the_fix(puzzles, name):
    src, kind, words = LEARNER[name]
    r = puzzles.check(name, _kernel(src.lstrip(), name), gpu=False)
    assert r.kind == kind and words in r.message, r.message


def test_check_explains_a_signature_that_does_not_fit(puzzles):
    k = _kernel('def scale(z: Mut[Tensor[f16, "B"]], x: Tensor[f32, "?"], alpha: f32):\n'
                '    z.store(load_tile_like(x, z).astype(f16))\n', "scale")
    r = puzzles.check_scale(k, gpu=False)
    assert not r and r.kind == "signature"
    assert "declared with dtype f16, but the puzzle's `z` holds f32" in r.message
    assert "expected: scale(" in r.message and "yours:" in r.message

    k = _kernel('def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'
                '    z.store(load_tile_like(x, z))\n', "scale")
    r = puzzles.check_scale(k, gpu=False)
    assert r.kind == "signature" and "takes 2 parameter(s) but the puzzle passes 3" in r.message

    k = _kernel('def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], '
                'alpha: Tensor[f32, "?"]):\n    z.store(load_tile_like(x, z))\n', "scale")
    r = puzzles.check_scale(k, gpu=False)
    assert r.kind == "signature" and "`alpha` is a shared input" in r.message


def test_check_explains_what_is_not_a_kernel(puzzles):
    def scale(z, x, alpha):
        pass
    r = puzzles.check_scale(scale, gpu=False)
    assert r.kind == "not_a_kernel" and "%%tilekernel" in r.message
    assert puzzles.check_scale(None, gpu=False).kind == "not_a_kernel"
    assert "not a tile kernel (a int)" in puzzles.check_scale(3, gpu=False).message


def test_check_reports_a_crash_at_the_users_line(puzzles):
    k = _kernel('def add_row(z: Mut[Tensor[f32, "BM, BN"]], x: Tensor[f32, "?, ?"], '
                'row: Tensor[f32, "?"]):\n'
                '    r = load_tile(row, (tile_id(1),), (BM,))\n'
                '    m = max(load_tile_like(x, z) + r)\n'    # the checker cannot tell BM from BN
                '    z.store(load_tile_like(x, z) * m)\n', "add_row")
    r = puzzles.check_add_row(k, gpu=False)
    assert r.kind == "crash", r.message
    assert "<add_row>:3" in r.message and "cannot be broadcast" in r.message
    assert "case 1 of 2" in r.message


def test_check_reports_unwritten_elements(puzzles):
    k = _kernel('def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], alpha: f32):\n'
                '    t = load_tile_like(x, z) * alpha\n'
                '    if tile_id(0) > 0:\n'
                '        z.store(t)\n', "scale")
    r = puzzles.check_scale(k, gpu=False)
    assert r.kind == "unwritten", r.message
    assert "were never written" in r.message and "the first is z[0]" in r.message
    assert r.picture is not None


def test_check_reports_a_refused_launch(puzzles):
    # the output declared with a fixed tile that the check's partition does not have
    k = _kernel('def scale(z: Mut[Tensor[f32, "128"]], x: Tensor[f32, "?"], alpha: f32):\n'
                '    z.store(load_tile_like(x, z) * alpha)\n', "scale")
    r = puzzles.check_scale(k, gpu=False)
    assert r.kind == "launch", r.message
    assert "was refused" in r.message and "TL110" in r.message


def test_check_passes_a_right_kernel_and_remembers_it(puzzles):
    k = _kernel('def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], alpha: f32):\n'
                '    z.store(load_tile_like(x, z) * alpha)\n', "scale")
    r = puzzles.check("scale", k, gpu=False)
    assert r and r.kind == "ok" and puzzles.RESULTS["scale"] is r
    assert "✓ scale" in puzzles.progress()
    assert "hint for scale" in _printed(lambda: puzzles.hint("scale"))


def _printed(fn) -> str:
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fn()
    return buf.getvalue()


# --- run_all.py ------------------------------------------------------------------------------

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
