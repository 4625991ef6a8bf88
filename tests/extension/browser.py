"""Helpers of the browser tests (the fixture and the summary hook are used by conftest.py): one JupyterLab server for the whole session (started on first
use), Node.js and Chromium discovery, playwright-core installed on demand, and a line at the end
of the run when the browser tests were skipped, with the one command that enables them."""
from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BROWSER = REPO / "tests" / "browser"
ARTIFACTS = BROWSER / "artifacts"
LABEXTENSION = REPO / "cutile_lab" / "labextension"
ENABLE = "apt-get install -y chromium   (as root; then run the tests again)"


def _chromium() -> str | None:
    explicit = os.environ.get("CUTILE_LAB_CHROMIUM")
    if explicit:                        # an explicit choice is the only one
        return explicit if Path(explicit).exists() else None
    for candidate in ("/usr/bin/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).exists():
            return candidate
    return None


NODE = shutil.which("node")
CHROMIUM = _chromium()

SKIP_REASON = ("Node.js is not installed" if NODE is None else
               "Chromium is not installed (/usr/bin/chromium)" if CHROMIUM is None else None)
browser_test = pytest.mark.skipif(SKIP_REASON is not None, reason=f"browser test: {SKIP_REASON}")


# --- JupyterLab ------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """A JupyterLab server with only this checkout's build of the extension added, shared by
    every browser test of the session (starting one costs seconds)."""
    tmp_path = tmp_path_factory.mktemp("jupyterlab")
    if not (LABEXTENSION / "package.json").exists():
        pytest.fail(f"the extension is not built: run `cd extension && jlpm install && jlpm build` ({LABEXTENSION})")
    root = tmp_path / "root"
    root.mkdir()
    jupyter_path = tmp_path / "jupyter_path"
    (jupyter_path / "labextensions").mkdir(parents=True)
    (jupyter_path / "labextensions" / "cutile-lab").symlink_to(LABEXTENSION, target_is_directory=True)
    settings = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    # Every cell in the DOM (JupyterLab 4 renders only the visible cells by default), so that
    # the tests can find the outputs of a whole notebook.
    notebook_settings = tmp_path / "settings" / "@jupyterlab" / "notebook-extension"
    notebook_settings.mkdir(parents=True)
    (notebook_settings / "tracker.jupyterlab-settings").write_text(
        json.dumps({"windowingMode": "none"}))

    port, token = _free_port(), secrets.token_hex(16)
    env = dict(
        os.environ,
        JUPYTER_PATH=str(jupyter_path),
        JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
        JUPYTER_DATA_DIR=str(tmp_path / "data"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
        IPYTHONDIR=str(tmp_path / "ipython"),
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    )
    log = open(tmp_path / "jupyterlab.log", "w")
    server = subprocess.Popen(
        [
            sys.executable, "-m", "jupyterlab", "--no-browser",
            "--ip=127.0.0.1", f"--port={port}", "--port-retries=0", "--allow-root",
            f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
            "--LabApp.expose_app_in_browser=True",
            f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
            f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
        ],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2).read()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail("JupyterLab did not start:\n" + (tmp_path / "jupyterlab.log").read_text()[-4000:])
                time.sleep(0.3)
        yield {"url": url, "token": token, "root": root, "log": tmp_path / "jupyterlab.log"}
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def ensure_playwright() -> None:
    if (BROWSER / "node_modules" / "playwright-core").exists():
        return
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is needed to install playwright-core into tests/browser (npm install)")
    subprocess.run([npm, "install", "--no-audit", "--no-fund"], cwd=BROWSER, check=True)




def notebook(cells: list[str]) -> dict:
    """An nbformat 4 notebook of code cells."""
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
        },
        "cells": [
            {"cell_type": "code", "id": f"cell-{i}", "metadata": {}, "execution_count": None,
             "outputs": [], "source": source}
            for i, source in enumerate(cells)
        ],
    }


def run_script(script: str, config: dict, timeout: int = 600) -> dict:
    """Run ``tests/browser/<script>`` with ``config``; its observations (the last stdout line)."""
    ensure_playwright()
    run = subprocess.run([NODE, str(BROWSER / script), json.dumps(config)], cwd=BROWSER,
                         capture_output=True, text=True, timeout=timeout)
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def pytest_terminal_summary(terminalreporter):
    """Say at the end of the run that the browser tests did not run, and how to run them."""
    skipped = [r for r in terminalreporter.stats.get("skipped", [])
               if "browser test" in str(getattr(r, "longrepr", ""))]
    if skipped:
        terminalreporter.write_sep("-", "browser tests skipped", yellow=True)
        terminalreporter.write_line(f"{len(skipped)} browser test(s) of the JupyterLab extension "
                                    f"did not run: {SKIP_REASON}.")
        terminalreporter.write_line(f"To run them: {ENABLE}")
