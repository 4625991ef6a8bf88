"""Where the browser tests cannot run, the test command says so at the end, with the one
command that enables them (a newcomer's run must not skip them silently)."""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_skipped_browser_tests_are_named_with_the_command_that_enables_them(tmp_path):
    env = dict(os.environ, CUTILE_LAB_CHROMIUM=str(tmp_path / "no-chromium"))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "tests/extension/test_browser_experience.py"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    out = run.stdout
    assert run.returncode == 0, out[-3000:]
    assert "browser tests skipped" in out, out[-3000:]
    assert "To run them: apt-get install -y chromium" in out, out[-3000:]
