"""``cutile-lab tutorials`` copies the shipped notebooks out (keeping a user's copies), and the
extension's build says what is missing (Node.js, the registry) and how to get past it."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cutile_lab import cli

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "extension"


def test_tutorials_are_copied_and_a_users_copy_is_kept(tmp_path, capsys):
    dest = tmp_path / "tut"
    assert cli.main(["tutorials", str(dest), "--no-open"]) == 0
    names = sorted(p.name for p in dest.iterdir())
    wanted = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9]*.ipynb"))
    assert set(wanted) <= set(names) and "puzzles.py" in names and "README.md" in names
    assert "build.py" not in names                     # the maintainers' tools stay behind
    nb = json.loads((dest / "01-hello-tile.ipynb").read_text(encoding="utf-8"))
    assert nb["cells"]
    assert capsys.readouterr().out.strip() == str(dest.resolve())
    mine = dest / "01-hello-tile.ipynb"
    mine.write_text("my work", encoding="utf-8")
    assert cli.main(["tutorials", str(dest), "--no-open"]) == 0
    assert mine.read_text(encoding="utf-8") == "my work"
    assert "already there and kept" in capsys.readouterr().err
    assert cli.main(["tutorials", str(dest), "--no-open", "--force"]) == 0
    assert mine.read_text(encoding="utf-8") != "my work"


def test_tutorials_opens_jupyterlab_on_the_folder(tmp_path, monkeypatch):
    import sys
    calls = []
    monkeypatch.setattr(cli.os, "execv", lambda exe, argv: calls.append((exe, argv)))
    assert cli.main(["tutorials", str(tmp_path / "t")]) == 0
    [(exe, argv)] = calls
    assert exe == sys.executable
    assert argv[:5] == [sys.executable, "-m", "jupyter", "lab", str(tmp_path / "t")]


def test_tutorials_come_from_the_package_first(tmp_path, monkeypatch):
    assert cli.tutorials_source() == ROOT / "notebooks"          # a checkout
    fake = tmp_path / "cutile_lab"
    (fake / "tutorials").mkdir(parents=True)
    (fake / "tutorials" / "01-x.ipynb").write_text("{}", encoding="utf-8")
    monkeypatch.setattr(cli, "__file__", str(fake / "cli.py"))
    assert cli.tutorials_source() == fake / "tutorials"
    (fake / "tutorials" / "01-x.ipynb").unlink()
    with pytest.raises(cli.CutileLabError, match="tutorial notebooks are missing"):
        cli.tutorials_source()


def _copy_extension(tmp_path: Path) -> Path:
    ext = tmp_path / "extension"
    ext.mkdir()
    for name in ("package.json", "yarn.lock"):
        shutil.copy(EXTENSION / name, ext / name)
    shutil.copytree(EXTENSION / "scripts", ext / "scripts")
    return ext


def test_build_without_node_says_so_and_how_to_get_past_it(tmp_path):
    ext = _copy_extension(tmp_path)
    bin_dir = tmp_path / "bin"                        # a PATH with the basics and no node
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "sed", "cat", "tr", "tail"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    proc = subprocess.run([str(bin_dir / "bash"), "scripts/jlpm.sh", "install"], cwd=ext,
                          env={"PATH": str(bin_dir), "HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "Node.js is not installed" in proc.stderr
    assert "wheel" in proc.stderr and "sdist" in proc.stderr and "apt-get install" in proc.stderr


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_build_without_a_registry_says_so_and_how_to_get_past_it(tmp_path):
    import sys
    ext = _copy_extension(tmp_path)
    # a registry nobody listens on, and no Yarn mirror to fall back on
    (ext / ".yarnrc.yml").write_text('nodeLinker: node-modules\nenableGlobalCache: false\n'
                                     'enableTelemetry: false\nhttpRetry: 0\n'
                                     'npmRegistryServer: "http://127.0.0.1:9"\n',
                                     encoding="utf-8")
    env = dict(os.environ, YARN_GLOBAL_FOLDER=str(tmp_path / "yarn-global"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run(["bash", "scripts/jlpm.sh", "install"], cwd=ext, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "could not install the extension's JavaScript dependencies" in proc.stderr
    assert "http://127.0.0.1:9" in proc.stderr and "npm config set registry" in proc.stderr
    assert "wheel" in proc.stderr


def test_registry_probe_without_npm_is_not_silent(tmp_path):
    ext = _copy_extension(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "tail", "tr", "pwd"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    proc = subprocess.run([str(bin_dir / "bash"), "scripts/configure-registry.sh"], cwd=ext,
                          env={"PATH": str(bin_dir)}, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "npm is not installed" in proc.stderr
    assert "nodeLinker: node-modules" in (ext / ".yarnrc.yml").read_text(encoding="utf-8")


def test_tutorials_into_a_path_that_is_a_file_is_one_clear_message(tmp_path, capsys):
    """A DIR that is an existing file was a FileExistsError traceback; the file is kept."""
    taken = tmp_path / "notes.txt"
    taken.write_text("my notes")
    assert cli.main(["tutorials", str(taken), "--no-open"]) == 1
    err = capsys.readouterr().err
    assert f"error[CL000]: cannot make the folder {taken}" in err and "help: give a folder" in err
    assert taken.read_text() == "my notes"
