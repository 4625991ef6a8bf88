"""The extension's TypeScript unit tests (jest), run from the Python suite so CI runs them."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXTENSION = Path(__file__).resolve().parents[2] / "extension"


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_jest_unit_tests_pass():
    bin_dir = Path(sys.executable).parent      # the venv's jlpm, even when not on PATH
    if shutil.which("jlpm", path=str(bin_dir)) is None and shutil.which("jlpm") is None:
        pytest.skip("jlpm (comes with jupyterlab) is not installed")
    env = dict(os.environ, CI="true", PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    if not (EXTENSION / "node_modules").is_dir():
        install = subprocess.run(["bash", "scripts/jlpm.sh", "install"], cwd=EXTENSION,
                                 env=env, capture_output=True, text=True, timeout=600)
        assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    result = subprocess.run(["bash", "scripts/jlpm.sh", "test"], cwd=EXTENSION, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "failed" not in (result.stdout + result.stderr).split("Tests:")[-1].split("\n")[0]
