"""``cutile-lab check/compile`` on plain cuTile Python files: ``--arg`` gives argument types,
shapes and constants (float and bool included); mistakes are one located message, never a
traceback."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cutile_lab.cli import parse_arg
from cutile_lab.compiling.specialization import ArrayLayout, ScalarLayout
from cutile_lab.errors import CompileError

ROOT = Path(__file__).parents[2]

PLAIN = textwrap.dedent('''\
    import cuda.tile as ct
    import numpy as np

    ConstInt = ct.Constant[int]
    ConstFloat = ct.Constant[float]
    ConstBool = ct.Constant[bool]
    EPS_FLOOR = np.float32(1e-12)


    @ct.kernel
    def rms_scale(x, out, n, eps: ConstFloat, SQUARE: ConstBool, TILE: ConstInt):
        t = ct.load(x, index=(ct.bid(0), 0), shape=(1, TILE), padding_mode=ct.PaddingMode.ZERO)
        if SQUARE:
            t = t * t
        ms = ct.sum(t * t, axis=1, keepdims=True) / n
        y = t * ct.rsqrt(ms + eps + EPS_FLOOR)
        ct.store(out, index=(ct.bid(0), 0), tile=y.astype(out.dtype))
    ''')


@pytest.fixture
def run(tmp_path):
    env = dict(os.environ, CUTILE_LAB_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))

    def run(*args):
        return subprocess.run([sys.executable, "-m", "cutile_lab", *args], capture_output=True,
                              text=True, env=env, cwd=tmp_path, timeout=300)
    return run


def test_parse_arg_forms():
    assert parse_arg("x=f16[?,?]") == ("x", ArrayLayout("f16", 2))
    assert parse_arg("x=float32[1024]") == ("x", ArrayLayout("f32", 1))
    assert parse_arg("n=i32") == ("n", ScalarLayout("i32"))
    assert parse_arg("eps=1e-6") == ("eps", 1e-6)
    assert parse_arg("B=128") == ("B", 128) and parse_arg("B=0x40") == ("B", 64)
    assert parse_arg("causal=true") == ("causal", True) and parse_arg("c=False") == ("c", False)
    for bad, says in [("x", "bad argument"), ("x=fp16[?]", "did you mean 'f16'"),
                      ("x=f16[?,0]", "bad dimension"), ("x=f16[]", "at least one dimension"),
                      ("x=1e-6e3", "cannot read")]:
        with pytest.raises(CompileError, match=says):
            parse_arg(bad)


def test_check_and_compile_a_plain_kernel_from_the_cli(run, tmp_path):
    path = tmp_path / "plain.py"
    path.write_text(PLAIN)
    r = run("check", str(path))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    r = run("compile", str(path), "--arg", "x=f16[?,?]", "--arg", "out=f16[?,?]", "--arg",
            "n=f32", "--arg", "eps=1e-6", "--arg", "SQUARE=true", "--arg", "TILE=128",
            "--emit", "tileir")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("entry @rms_scale") and "f16" in r.stdout


@pytest.mark.parametrize("args,says", [
    ([], "give the type of `x`, `out`, `n` and the value of `eps`, `SQUARE`, `TILE`"),
    ([], "--arg eps=1e-6 --arg SQUARE=true --arg TILE=128"),
    (["--arg", "x=f16[?,?]", "--arg", "out=f16[?,?]", "--arg", "n=f32", "--arg", "eps=f32"],
     "`eps` is a compile-time constant"),
    (["--arg", "x=1.5"], "`x` is a runtime parameter, not a constant"),
    (["--arg", "y=f16[?]"], "has no parameter `y`"),
    (["--arg", "x=half[?,"], "cannot read"),
])
def test_cli_argument_mistakes_are_one_clear_message(run, tmp_path, args, says):
    path = tmp_path / "plain.py"
    path.write_text(PLAIN)
    r = run("compile", str(path), *args)
    assert r.returncode == 1
    assert says in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_file_whose_top_level_fails_is_located_not_a_traceback(run, tmp_path):
    path = tmp_path / "broken.py"
    path.write_text(PLAIN.replace("EPS_FLOOR = np.float32(1e-12)", "EPS_FLOOR = np.nope"))
    for cmd in (["check", str(path)], ["compile", str(path), "--arg", "TILE=1"]):
        r = run(*cmd)
        assert r.returncode == 1 and "Traceback" not in r.stderr + r.stdout
        line = PLAIN.splitlines().index("EPS_FLOOR = np.float32(1e-12)") + 1
        assert f"{path}:{line}" in r.stdout + r.stderr
        assert "AttributeError" in r.stdout + r.stderr
