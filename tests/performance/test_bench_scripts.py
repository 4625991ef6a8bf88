"""The benchmark scripts as a user runs them, without a GPU: one script per kernel family plus
``bench_kernels.py`` for all of them, a clear refusal where there is no GPU, a clear error for a
family that does not exist, and plots redrawn from a stored results file."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
FAMILY_SCRIPTS = {"bench_elementwise.py": "add", "bench_rowwise.py": "rowwise",
                  "bench_gemm.py": "gemm", "bench_attention.py": "attention"}


def run(*args, timeout=120):
    return subprocess.run([sys.executable, *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def gpu_present() -> bool:
    from tests.runtime.conftest import gpu_present as present
    return present()


@pytest.mark.parametrize("script", sorted(FAMILY_SCRIPTS))
def test_each_family_has_its_own_script(script):
    r = run(BENCH / script, "--help")
    assert r.returncode == 0, r.stderr
    assert "--only" not in r.stdout            # the family is fixed
    assert "--tune" in r.stdout and "--out" in r.stdout


def test_an_unknown_family_is_refused_with_the_known_ones():
    r = run(BENCH / "bench_kernels.py", "--only", "gemm,softmx")
    assert r.returncode == 2
    assert "unknown family softmx" in r.stderr and "add, rowwise, gemm, attention" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.skipif("gpu_present()")
@pytest.mark.parametrize("script", ["bench_gemm.py", "bench_kernels.py", "bench_runtime.py",
                                    "bench_userpath.py"])
def test_without_a_gpu_the_scripts_say_so(script):
    r = run(BENCH / script, "--quick")
    assert r.returncode == 2
    assert "this benchmark needs a GPU" in r.stdout
    assert "Traceback" not in r.stdout + r.stderr


def test_plots_are_redrawn_from_a_results_file_under_its_own_name(tmp_path):
    pytest.importorskip("matplotlib")
    stored = sorted((BENCH / "results").glob("kernels-nvidia-*.json"))
    if not stored:
        pytest.skip("no stored kernel results")
    data = json.loads(stored[0].read_text())
    data["rows"] = [r for r in data["rows"] if r["family"] in ("gemm", "softmax", "add")]
    results = tmp_path / "kernels-gemm-some-gpu.json"
    results.write_text(json.dumps(data))
    r = run(BENCH / "bench_gemm.py", "--replot", results)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "kernels-gemm-some-gpu-roofline.png").stat().st_size > 0
    assert (tmp_path / "kernels-gemm-some-gpu-bandwidth.png").stat().st_size > 0
    assert not (BENCH / "results" / "kernels-gemm-some-gpu-roofline.png").exists()
    # a run of one family without row-wise kernels draws no (empty) bandwidth figure
    data["rows"] = [r for r in data["rows"] if r["family"] == "gemm"]
    only_gemm = tmp_path / "kernels-gemm-other-gpu.json"
    only_gemm.write_text(json.dumps(data))
    r = run(BENCH / "bench_gemm.py", "--replot", only_gemm)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "kernels-gemm-other-gpu-roofline.png").exists()
    assert not (tmp_path / "kernels-gemm-other-gpu-bandwidth.png").exists()
    shutil.rmtree(tmp_path)
