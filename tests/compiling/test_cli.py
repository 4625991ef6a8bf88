"""The cutile-lab command, run as a user would: a subprocess, real files, exit codes."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cutile_lab.compiling.cubin import cubin_arch, is_nvidia_elf

KERNELS = Path(__file__).with_name("example_kernels.py")

BAD = '''from cutile_lab.lang import *

def bad(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    x.store(t)
'''


@pytest.fixture
def run(tmp_path):
    env = dict(os.environ, CUTILE_LAB_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(KERNELS.parents[2]), os.environ.get("PYTHONPATH", "")]))

    def run(*args):
        return subprocess.run([sys.executable, "-m", "cutile_lab", *args], capture_output=True,
                              text=True, env=env, cwd=tmp_path, timeout=300)
    return run


def test_info_names_versions_toolchain_gpu_and_cache(run, tmp_path):
    r = run("info")
    assert r.returncode == 0, r.stderr
    for field in ("cuda-tile", "tileiras", "GPU", "cache"):
        assert field in r.stdout
    assert str(tmp_path / "cache") in r.stdout


def test_check_bad_file_exits_1_with_a_located_message(run, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(BAD)
    r = run("check", str(bad))
    assert r.returncode == 1
    assert "error[TL010]" in r.stdout and f"{bad}:5:5" in r.stdout
    assert run("check", str(KERNELS)).returncode == 0


def test_compile_emits_tileir_cubin_and_report(run, tmp_path):
    r = run("compile", str(KERNELS), "--kernel", "gemm", "--arch", "sm_90",
            "--spec", "BM=64,BN=64,BK=32", "--emit", "tileir")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("entry @gemm") and "mmaf" in r.stdout
    out = tmp_path / "add.cubin"
    r = run("compile", str(KERNELS), "--kernel", "vector_add", "--arch", "sm_100",
            "--spec", "B=256", "--emit", "cubin", "-o", str(out))
    assert r.returncode == 0, r.stderr
    data = out.read_bytes()
    assert is_nvidia_elf(data) and cubin_arch(data) == "sm_100"
    r = run("compile", str(KERNELS), "--kernel", "vector_add", "--spec", "B=256",
            "--emit", "report")
    assert "registers" in r.stdout and "cache           miss" in r.stdout
    r = run("compile", str(KERNELS), "--kernel", "vector_add", "--spec", "B=256",
            "--emit", "report")
    assert "cache           disk" in r.stdout


def test_compile_errors_are_one_clear_message(run):
    r = run("compile", str(KERNELS), "--kernel", "gemm")
    assert r.returncode == 1 and "needs a value for `BM`, `BN`" in r.stderr
    assert "Traceback" not in r.stderr
    r = run("compile", str(KERNELS), "--kernel", "nope", "--spec", "B=1")
    assert r.returncode == 1 and "no kernel named 'nope'" in r.stderr
    r = run("compile", str(KERNELS), "--kernel", "vector_add", "--spec", "B=x")
    assert r.returncode == 1 and "--spec B must be an integer" in r.stderr
    r = run("compile", str(KERNELS), "--kernel", "vector_add", "--spec", "B=100")
    assert r.returncode == 1 and "power of two" in r.stderr and "Traceback" not in r.stderr


def test_cache_info_and_clear(run):
    run("compile", str(KERNELS), "--kernel", "vector_add", "--spec", "B=128")
    r = run("cache", "info")
    assert r.returncode == 0 and "entries" in r.stdout
    r = run("cache", "clear")
    assert r.returncode == 0 and "removed 1 entries" in r.stdout


def test_check_and_compile_of_a_file_that_is_not_utf8_is_one_clear_message(run, tmp_path):
    """A binary file was a UnicodeDecodeError traceback from inside the command."""
    binary = tmp_path / "kernels.py"
    binary.write_bytes(b"\xff\xfe\x00" + bytes(range(256)))
    for command in ("check", "compile"):
        r = run(command, str(binary))
        assert r.returncode == 1, r.stderr
        assert "Traceback" not in r.stderr
        assert f"cannot read {binary}: it is not UTF-8 text" in r.stderr
        assert "help: a file of kernels is Python source, saved as UTF-8" in r.stderr


@pytest.mark.parametrize("emit", ["tileir", "cubin", "report"])
def test_compile_output_into_a_missing_folder_is_one_clear_message(run, tmp_path, emit):
    """-o into a folder that does not exist was a FileNotFoundError traceback."""
    out = tmp_path / "missing" / f"vector_add.{emit}"
    r = run("compile", str(KERNELS), "--kernel", "vector_add", "--spec", "B=128", "--emit", emit,
            "-o", str(out))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"error[CL000]: cannot write {out}: No such file or directory" in r.stderr
    assert "help: give -o a path in a folder that exists" in r.stderr
