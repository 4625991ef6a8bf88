"""Backend choice and device discovery (CPU-only machine behaviour is tested where no GPU is
present; the GPU side is in test_gpu.py)."""
import subprocess
import sys
from pathlib import Path

import pytest

import cutile_lab as cl
from cutile_lab.errors import LaunchError, NoDeviceError
import importlib
B = importlib.import_module("cutile_lab.runtime.backend")
from tests.runtime.conftest import gpu_present

ROOT = str(Path(__file__).resolve().parents[2])
no_gpu = pytest.mark.skipif(gpu_present(), reason="this machine has a GPU")


def run_py(code: str, **env) -> subprocess.CompletedProcess:
    import os
    e = dict(os.environ, PYTHONPATH=ROOT, **env)
    e.pop("CUTILE_LAB_BACKEND", None) if "CUTILE_LAB_BACKEND" not in env else None
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e,
                          cwd=ROOT, timeout=120)


def test_unknown_backend_name():
    with pytest.raises(LaunchError, match="unknown backend"):
        cl.set_backend("tpu")


def test_set_backend_aliases(sim):
    assert cl.set_backend("cpu") == "sim"
    assert cl.backend() == "sim"


@no_gpu
def test_gpu_backend_without_gpu_says_so():
    with pytest.raises(NoDeviceError) as e:
        cl.set_backend("gpu")
    text = str(e.value)
    assert "no GPU found" in text and "simulator" in text
    with pytest.raises(NoDeviceError, match="simulator"):
        cl.describe_device()
    assert not cl.gpu_available()


@no_gpu
def test_automatic_choice_is_announced_once():
    r = run_py("import cutile_lab as cl\n"
               "a = cl.zeros(3).sync(); b = cl.ones(3).sync()\n"
               "print(cl.backend(), a.backend)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["sim", "sim"]
    assert r.stderr.count("no GPU found") == 1 and len(r.stderr.strip().splitlines()) == 1


def test_env_var_chooses_sim_silently():
    r = run_py("import cutile_lab as cl\nprint(cl.backend())", CUTILE_LAB_BACKEND="sim")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "sim" and r.stderr.strip() == ""


def test_import_and_compile_need_no_gpu():
    r = run_py("import cutile_lab, cutile_lab.runtime\n"
               "from cutile_lab.runtime import device\n"
               "print('imported', device._context is None)")
    assert r.returncode == 0, r.stderr
    assert "imported True" in r.stdout


def test_reset_goes_back_to_automatic(sim):
    cl.set_backend(None)
    assert cl.backend() in ("gpu", "sim")
    assert B.backend() == cl.backend()
