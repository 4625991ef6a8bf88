"""The report bundle's JSON Schema (``cutile_lab/notebook/report.schema.json``): every bundle the
real report code publishes -- a clean compile, errors, warnings, an unchecked block, a kernel
checked but not compiled, a CUDA C++ kernel, a launch error, a launch warning about tiles that
read padding, a simulator run under ``%tile_time``, a timed run with its roofline, a
``%tile_diff`` -- validates against it; the schema's own examples (which the extension's jest
test feeds to its parser and renderer) do too; and the schema rejects what the extension could
not read."""
from __future__ import annotations

import copy
import io
import json
import random
import warnings
from pathlib import Path

import numpy as np
import pytest

jsonschema = pytest.importorskip("jsonschema")   # a dev dependency; absent on GPU images

from cutile_lab.notebook.report import REPORT_MIME, SCHEMA_PATH, benchmark_report_bundle

ADD = '''def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    tx = load_tile_like(x, z)
    ty = load_tile_like(y, z)
    z.store(tx + ty)
'''


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(Path(SCHEMA_PATH).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _valid(validator, report: dict) -> dict:
    json.dumps(report)                                   # plain JSON, as it travels
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in validator.iter_errors(report)]
    assert not errors, errors
    return report


def _reports(cell, kind: str) -> list[dict]:
    found = [r for r in cell.reports if r["kind"] == kind]
    assert found, (cell.error, cell.text)
    return found


def _b() -> int:
    return random.choice((64, 128, 256))


def test_the_schema_ships_in_the_package_and_its_examples_validate(validator):
    assert Path(SCHEMA_PATH).parent.name == "notebook"
    examples = validator.schema["examples"]
    assert {e["kind"] for e in examples} == {"compile", "launch", "benchmark", "diff"}
    assert {e.get("status") for e in examples} >= {"compiled", "checked", "error"}
    for example in examples:
        _valid(validator, example)


def test_the_browser_tests_sample_validates(validator):
    # the bundle the browser tests render (tests/browser/sample_report.json)
    sample = Path(__file__).resolve().parents[1] / "browser" / "sample_report.json"
    _valid(validator, json.loads(sample.read_text()))


def test_clean_compile(shell, validator):
    b = _b()
    r = _valid(validator, shell.run(f"%%tilekernel --spec B={b}\n" + ADD).report)
    assert r["status"] == "compiled" and r["consts"] == {"B": b} and r["tileir"]["line_map"]


def test_checked_not_compiled(shell, validator):
    r = _valid(validator, shell.run("%%tilekernel\n" + ADD).report)
    assert r["status"] == "checked" and r["tileir"] is None and r["notes"]


def test_errors(shell, validator):
    cell = shell.run("%%tilekernel\n" + ADD.replace("z.store", "x.store"))
    r = _valid(validator, cell.report)
    assert r["status"] == "error"
    assert {d["code"] for d in r["diagnostics"]} == {"TL010", "TL013"}
    assert any(d["labels"] for d in r["diagnostics"])


def test_warnings(shell, validator):
    cell = shell.run(f"%%tilekernel --spec B={_b()}\n" + ADD + "    z.store(tx)\n")
    r = _valid(validator, cell.report)
    assert r["status"] == "compiled" and [d["severity"] for d in r["diagnostics"]] == ["warning"]


def test_unchecked_block(shell, validator):
    cell = shell.run(f"%%tilekernel --spec B={_b()}\n"
                     'def shift(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'
                     "    t = load_tile_like(x, z)\n"
                     "    with unsafe():\n"
                     "        store(z, (tile_id(0) + 1,), t)\n")
    r = _valid(validator, cell.report)
    assert r["unchecked"] == [{"line": 3, "col": 4, "end_line": 4}]


def test_cuda_cpp_kernel(shell, validator):
    cell = shell.run("%%cuda\n__global__ void scale(float* y, const float* x, float a, int n) {\n"
                     "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                     "    if (i < n) y[i] = a * x[i];\n}\n")
    r = _valid(validator, cell.report)
    assert r["status"] == "compiled" and r["ptx"] and r["tileir"] is None


def test_launch_error(shell, validator):
    assert shell.run("%%tilekernel --sim\n" + ADD).ok
    n = random.randint(600, 2000)
    cell = shell.run(f"z = cl.zeros({n}).sync(); x = cl.randn({n}).sync()\n"
                     "zp = z.partition(128)\n"
                     "add(zp, z, x).sync()\n")
    assert not cell.ok
    [r] = _reports(cell, "launch")
    _valid(validator, r)
    assert r["status"] == "error" and r["diagnostics"][0]["code"] == "TL102"


def test_launch_warning_on_tiles_that_read_padding(shell, validator):
    from cutile_lab.notebook import launch_view
    from cutile_lab.simulation import on_error, set_on_error
    assert shell.run("%%tilekernel --sim\n" + ADD).ok
    half = random.randint(3, 7) * 128
    before = on_error()
    set_on_error("ignore")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = launch_view._showwarning
            cell = shell.run(f"z = cl.zeros({2 * half}).sync(); x = cl.randn({half}).sync(); "
                             f"y = cl.randn({2 * half}).sync()\n"
                             "add(z.partition(128), x, y).sync()\n")
    finally:
        set_on_error(before)
    assert cell.ok, cell.error
    [r] = _reports(cell, "launch")
    _valid(validator, r)
    assert r["status"] == "warning" and r["diagnostics"][0]["code"] == "TL120"


def test_benchmark_on_the_simulator(shell, validator):
    assert shell.run("%%tilekernel --sim\n" + ADD).ok
    n = random.randint(8, 16) * 256
    assert shell.run(f"import numpy as np\nxn = np.random.rand({n}).astype(np.float32)\n"
                     f"yn = np.random.rand({n}).astype(np.float32)\n"
                     f"zp = cl.asarray(np.zeros({n}, np.float32)).partition(256)\n").ok
    [r] = _reports(shell.run("%tile_time -n 3 add(zp, xn, yn)"), "benchmark")
    _valid(validator, r)
    assert r["benchmark"]["rows"][0]["backend"] == "sim"


def test_timed_run_with_its_roofline(validator):
    # what %tile_time publishes on a GPU: a measured row against the device's peaks, and
    # the roofline figure of the measurements
    from cutile_lab.performance.timing import measurement_row
    from cutile_lab.performance import Measurement, lookup_device, roofline_figure
    rng = np.random.default_rng()
    samples = list(rng.uniform(50e-6, 70e-6, size=20))
    n = int(rng.integers(1 << 20, 1 << 24))
    m = Measurement(name=f"add {n}", kernel="add", precision="f32", flops=float(n),
                    bytes=12.0 * n, seconds=float(np.median(samples)), samples=samples,
                    device="NVIDIA H100 80GB HBM3", params={"B": 1024})
    peaks = lookup_device(m.device)
    row = measurement_row(m, peaks)
    assert row["pct_of_roof"] is not None
    png = io.BytesIO()
    roofline_figure([m], peaks).savefig(png, format="png", dpi=30)
    bundle = benchmark_report_bundle([row], kernel="add", plot_png=png.getvalue(),
                                     device=m.device, notes=["noisy: one note"])
    r = _valid(validator, bundle[REPORT_MIME])
    assert r["benchmark"]["plot_png"]


def test_tile_diff(shell, validator):
    assert shell.run("%%tilekernel\n" + ADD).ok
    [r] = _reports(shell.run("%tile_diff add B=128 B=256"), "diff")
    _valid(validator, r)
    assert r["diff"]["tileir"]["rows"]


@pytest.mark.parametrize("breaks", [
    "an unknown key", "a 0-based line", "a compile without its source", "an unknown kind",
    "a line map of single numbers", "a diagnostic without a message", "a newer version"])
def test_the_schema_rejects_what_the_extension_could_not_read(validator, breaks):
    [example] = [e for e in validator.schema["examples"]
                 if e["kind"] == "compile" and e["status"] == "error"]
    bad = copy.deepcopy(example)
    if breaks == "an unknown key":
        bad["tileir_text"] = "module {}"
    elif breaks == "a 0-based line":
        bad["diagnostics"][0]["span"]["line"] = 0
    elif breaks == "a compile without its source":
        bad["source"] = None
    elif breaks == "an unknown kind":
        bad["kind"] = "profile"
    elif breaks == "a line map of single numbers":
        bad["tileir"] = {"text": "entry @f() {\n}\n", "line_map": [1, 2]}
    elif breaks == "a diagnostic without a message":
        del bad["diagnostics"][1]["message"]
    elif breaks == "a newer version":
        bad["version"] = 2
    assert not validator.is_valid(bad)
    _valid(validator, example)
