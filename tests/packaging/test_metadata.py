"""The package's metadata tells the truth: one license (Apache-2.0) for the Python package and
the JupyterLab extension, with its text; authors; project URLs; the Prebuilt-extension
classifier; the Python versions claimed are exactly the ones tested (CI runs the oldest and the
newest); the README's first screen serves a checkout and an installed user alike."""
from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]


def claimed_pythons() -> list[tuple[int, int]]:
    return sorted((3, int(m)) for c in PROJECT["classifiers"]
                  for m in re.findall(r"^Programming Language :: Python :: 3\.(\d+)$", c))


def test_one_license_with_its_text():
    ext = json.loads((ROOT / "extension" / "package.json").read_text(encoding="utf-8"))
    assert PROJECT["license"] == ext["license"] == "Apache-2.0"
    assert PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    # no legacy License classifier next to the SPDX expression (PEP 639 forbids both)
    assert not any(c.startswith("License ::") for c in PROJECT["classifiers"])


def test_authors_urls_and_the_prebuilt_classifier():
    assert PROJECT["authors"] and all(a.get("name") for a in PROJECT["authors"])
    urls = PROJECT["urls"]
    assert urls and all(u.startswith("https://") for u in urls.values())
    assert "Framework :: Jupyter :: JupyterLab :: Extensions :: Prebuilt" in PROJECT["classifiers"]
    # the wheel carries the prebuilt extension where JupyterLab finds it
    shared = PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["shared-data"]
    assert shared["cutile_lab/labextension"] == "share/jupyter/labextensions/cutile-lab"


def test_the_pythons_claimed_are_one_range_from_requires_python():
    lo = re.fullmatch(r">=(3)\.(\d+)", PROJECT["requires-python"])
    assert lo, PROJECT["requires-python"]
    oldest = (3, int(lo.group(2)))
    claimed = claimed_pythons()
    assert claimed[0] == oldest, "the classifiers must start at requires-python's bound"
    assert claimed == [(3, m) for m in range(claimed[0][1], claimed[-1][1] + 1)]


def test_ci_runs_the_oldest_and_the_newest_python():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "scripts/dev test" in ci
    assert "oldest" in ci and "newest" in ci
    dev = (ROOT / "scripts" / "dev").read_text(encoding="utf-8")
    assert "--python" in dev and "claimed_python" in dev


def test_dev_script_reads_oldest_and_newest_from_the_metadata():
    """`scripts/dev test --python oldest|newest` resolves to the bounds of the claimed range
    (its regular expressions read the same file this test parses with tomllib)."""
    import subprocess
    script = (ROOT / "scripts" / "dev").read_text(encoding="utf-8")
    body = script[script.index("claimed_python() {"):]
    body = body[:body.index("\n}\n") + 3]
    claimed = claimed_pythons()
    for which, want in (("oldest", claimed[0]), ("newest", claimed[-1])):
        out = subprocess.run(["bash", "-c", f'ROOT="{ROOT}"; say() {{ echo "$*" >&2; }}\n'
                              f"{body}\nclaimed_python {which}"],
                             capture_output=True, text=True, check=True).stdout.strip()
        assert out == f"{want[0]}.{want[1]}"


def test_readme_first_screen_serves_a_checkout_and_an_installed_user():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = "\n".join(readme.splitlines()[:24])
    commands = re.findall(r"^(scripts/dev \w+|pip install|cutile-lab \w+)", first, re.M)
    assert commands[:2] == ["scripts/dev lab", "scripts/dev test"]     # the checkout's two
    assert readme.startswith("```sh\nscripts/dev lab     # sets everything up, opens JupyterLab"
                             " on notebooks/\nscripts/dev test    # sets everything up, runs "
                             "the tests\n```\n")
    assert "pip install cutile-lab" in first and "%load_ext cutile_lab" in first
    assert "cutile-lab tutorials" in first and "cutile-lab explain" in first
    assert "## Install" in readme
    # the README is the package's description on an index: no link into the source tree
    assert not re.search(r"\]\((?!https?://|#)[^)]+\)", readme), "relative link in README"


def test_every_tutorial_is_shipped_and_nothing_else_from_notebooks():
    forced = PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert forced["docs/diagnostics.md"] == "cutile_lab/docs/diagnostics.md"
    wanted = {f"notebooks/{p.name}" for p in (ROOT / "notebooks").glob("[0-9]*.ipynb")}
    wanted |= {"notebooks/puzzles.py", "notebooks/README.md", "notebooks/recorded.py"}
    # and what recorded.py reads, beside them
    import importlib.util
    spec = importlib.util.spec_from_file_location("recorded", ROOT / "notebooks" / "recorded.py")
    recorded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recorded)
    for name in (recorded.KERNELS, recorded.RUNTIME):
        assert forced[f"benchmarks/results/{name}"] == f"cutile_lab/tutorials/results/{name}"
    shipped = {k for k in forced if k.startswith("notebooks")}
    assert shipped == wanted, ("pyproject.toml's [tool.hatch.build.targets.wheel.force-include] "
                               "must list each tutorial: " + ", ".join(sorted(wanted ^ shipped)))
    for src in shipped:
        assert forced[src] == "cutile_lab/tutorials/" + src.split("/", 1)[1]
