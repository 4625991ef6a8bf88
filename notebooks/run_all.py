#!/usr/bin/env python3
"""Runs the tutorial notebooks top to bottom in a plain IPython shell: no Jupyter, no kernel.

    python notebooks/run_all.py                       # every notebook of this folder, in order
    python notebooks/run_all.py 03 07-puzzles.ipynb   # some of them (names or name prefixes)
    python notebooks/run_all.py --quiet --json runs.json
    python notebooks/run_all.py --store 03            # store outputs (CPU, as tests/notebooks)

Each notebook runs in a fresh process, in this folder (as Jupyter would run it), with the
repository on ``sys.path``. Cell outputs are printed as text (images and HTML are summarized),
and the wall time of every notebook at the end. A cell tagged ``raises-exception`` may raise
(on a GPU some of them finish too fast to: that is reported, not failed); any other exception
stops that notebook, prints the cell and its traceback, and makes the exit status 1.

This is how the notebooks are run on a GPU machine that has IPython but no Jupyter: there,
launches go to the GPU and the timing cells time.

``--store`` is how the outputs committed in the ``.ipynb`` files are made: each notebook is
first synced with its paired ``.py`` (jupytext), then executed in a Jupyter kernel (nbclient)
with no GPU visible and a fresh compile cache -- what ``tests/notebooks`` compares against --
and written back.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MAX_LINES = 40          # of a cell's printed output, unless --full


def notebooks(selected: list[str]) -> list[Path]:
    found = sorted(p for p in HERE.glob("[0-9]*.ipynb"))
    if not selected:
        return found
    out = []
    for s in selected:
        p = Path(s)
        if p.suffix == ".ipynb" and (p.exists() or (HERE / p.name).exists()):
            out.append(p.resolve() if p.exists() else HERE / p.name)
            continue
        matches = [f for f in found if f.name.startswith(s)]
        if not matches:
            raise SystemExit(f"run_all: no notebook matches {s!r} "
                             f"(have: {', '.join(f.name for f in found)})")
        out.extend(m for m in matches if m not in out)
    return out


# --- one notebook, in this process ---------------------------------------------------------------

class Cell:
    __slots__ = ("source", "tags")

    def __init__(self, source: str, tags: list[str]):
        self.source = source
        self.tags = tags


def code_cells(path: Path) -> list[Cell]:
    """The code cells of a notebook, read as the JSON it is (no nbformat needed)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for c in nb.get("cells", []):
        if c.get("cell_type") != "code":
            continue
        src = c.get("source", "")
        out.append(Cell("".join(src) if isinstance(src, list) else src,
                        list(c.get("metadata", {}).get("tags", []))))
    return out


def _shell():
    from IPython.core.interactiveshell import InteractiveShell

    class Shell(InteractiveShell):
        def enable_gui(self, gui=None):       # %matplotlib inline: nothing to drive here
            pass

    shell = Shell.instance()
    shell.colors = "nocolor" if hasattr(shell, "colors") else None
    return shell


def _text_of(outputs, full: bool) -> str:
    parts = []
    for o in outputs:
        data = o.data
        if "text/plain" in data:
            text = data["text/plain"]
            if "image/png" in data:
                text = f"[image] {text}"
            parts.append(text)
        elif "image/png" in data:
            parts.append("[image]")
        elif "text/html" in data:
            parts.append("[html]")
    text = "\n".join(parts)
    return text if full else _clip(text)


def _clip(text: str) -> str:
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        lines = lines[:MAX_LINES] + [f"... ({len(lines) - MAX_LINES} more lines)"]
    return "\n".join(lines)


try:
    import matplotlib_inline  # noqa: F401  (what `%matplotlib inline` needs)
    _HAS_INLINE = True
except ImportError:
    _HAS_INLINE = False


def run_one(path: Path, quiet: bool, full: bool) -> dict:
    """Run one notebook's code cells in this process; return its record."""
    from IPython.utils.capture import capture_output

    os.chdir(path.parent)
    sys.path[:0] = [str(path.parent), str(ROOT)]
    shell = _shell()
    try:                        # tables printed as text: show every column
        import pandas as pd
        pd.set_option("display.width", 160)
        pd.set_option("display.max_columns", 40)
    except ImportError:
        pass
    record = {"notebook": path.name, "ok": True, "cells": [], "seconds": 0.0}
    t_nb = time.perf_counter()
    for i, cell in enumerate(code_cells(path), start=1):
        tags = set(cell.tags)
        may_raise = "raises-exception" in tags
        t0 = time.perf_counter()
        source = cell.source
        if not _HAS_INLINE:       # a bare GPU machine: no matplotlib-inline; draw off screen
            source = source.replace("%matplotlib inline", "import matplotlib; matplotlib.use('agg')")
        with capture_output() as cap:
            result = shell.run_cell(source, store_history=True)
        dt = time.perf_counter() - t0
        err = result.error_before_exec or result.error_in_exec
        entry = {"cell": i, "seconds": round(dt, 3), "tags": sorted(tags),
                 "error": f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
                 if err is not None else None}
        record["cells"].append(entry)
        head = cell.source.strip().splitlines()[0][:70] if cell.source.strip() else ""
        if not quiet:
            print(f"--- [{path.name} cell {i}] {head}  ({dt:.2f} s)", flush=True)
            out = "".join(x for x in (cap.stdout, cap.stderr) if x)
            text = "\n".join(x for x in (out.rstrip("\n"), _text_of(cap.outputs, full)) if x)
            if text:
                print(text if full else _clip(text), flush=True)
        if err is not None and not may_raise:
            record["ok"] = False
            print(f"\n*** {path.name}: cell {i} raised {type(err).__name__} unexpectedly ***",
                  flush=True)
            print("----- cell source -----\n" + cell.source, flush=True)
            print("----- output -----\n" + cap.stdout + cap.stderr, flush=True)
            print("----- traceback -----", flush=True)
            traceback.print_exception(type(err), err, err.__traceback__, file=sys.stdout)
            break
        if may_raise and err is None:
            entry["note"] = "tagged raises-exception but did not raise"
            if not quiet:
                print("(note: this cell is tagged raises-exception but did not raise)",
                      flush=True)
    record["seconds"] = round(time.perf_counter() - t_nb, 3)
    puzzles = sys.modules.get("puzzles")
    if puzzles is not None and getattr(puzzles, "RESULTS", None):
        record["puzzles"] = {k: {"ok": r.ok, "kind": r.kind, "message": r.message}
                             for k, r in puzzles.RESULTS.items()}
        record["checks"] = [{"puzzle": r.puzzle, "ok": r.ok, "kind": r.kind,
                             "message": r.message, "pattern": r.pattern,
                             "picture": r.picture is not None}
                            for r in getattr(puzzles, "HISTORY", [])]
    return record


# --- storing outputs -------------------------------------------------------------------------

def store_env(cache_dir: str) -> dict:
    """The environment stored outputs are made in (and tests/notebooks runs in): no GPU, a
    fresh compile cache, the repository importable."""
    env = dict(os.environ)
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["CUTILE_LAB_CACHE_DIR"] = cache_dir
    env.pop("CUTILE_LAB_BACKEND", None)
    env.pop("CUTILE_LAB_NO_CACHE", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]]
                                                      if env.get("PYTHONPATH") else []))
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    return env


def store(path: Path) -> float:
    """Sync ``path`` with its paired text file, execute it on the CPU, write its outputs."""
    import tempfile

    import jupytext
    from jupytext.cli import jupytext as jupytext_cli
    from nbclient import NotebookClient
    jupytext_cli(["--sync", "--quiet", str(path)])
    nb = jupytext.read(path)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cutile-lab-nb-cache-") as cache:
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(store_env(cache))
        try:
            NotebookClient(nb, timeout=900, kernel_name="python3", record_timing=False,
                           resources={"metadata": {"path": str(path.parent)}}).execute()
        finally:
            os.environ.clear()
            os.environ.update(saved)
    jupytext.write(nb, path)
    return time.perf_counter() - t0


# --- every notebook, one process each ---------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("notebooks", nargs="*", help="names or name prefixes (default: all)")
    ap.add_argument("--quiet", action="store_true", help="print only the summary")
    ap.add_argument("--full", action="store_true", help="do not shorten long outputs")
    ap.add_argument("--json", metavar="FILE", help="write the per-notebook records as JSON")
    ap.add_argument("--store", action="store_true",
                    help="sync each notebook with its .py, run it on the CPU in a Jupyter "
                         "kernel and store its outputs in the .ipynb")
    ap.add_argument("--one", metavar="NOTEBOOK", help=argparse.SUPPRESS)
    ap.add_argument("--record", metavar="FILE", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.one:                                   # the child: one notebook in this process
        rec = run_one(Path(args.one), args.quiet, args.full)
        if args.record:
            Path(args.record).write_text(json.dumps(rec))
        return 0 if rec["ok"] else 1

    paths = notebooks(args.notebooks)
    if args.store:
        for path in paths:
            print(f"stored {path.name} in {store(path):.1f} s", flush=True)
        return 0
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]]
                                                      if env.get("PYTHONPATH") else []))
    env.setdefault("MPLBACKEND", "Agg")
    env.setdefault("PYTHONUNBUFFERED", "1")
    records = []
    import tempfile
    for path in paths:
        print(f"=== {path.name}", flush=True)
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
            rec_file = f.name
        cmd = [sys.executable, str(Path(__file__).resolve()), "--one", str(path),
               "--record", rec_file]
        if args.quiet:
            cmd.append("--quiet")
        if args.full:
            cmd.append("--full")
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=env, cwd=str(path.parent))
        wall = time.perf_counter() - t0
        try:
            rec = json.loads(Path(rec_file).read_text() or "{}")
        except (OSError, ValueError):
            rec = {}
        finally:
            try:
                os.unlink(rec_file)
            except OSError:
                pass
        rec.setdefault("notebook", path.name)
        rec["ok"] = rec.get("ok", False) and proc.returncode == 0
        rec["wall_seconds"] = round(wall, 2)
        records.append(rec)
        print(f"=== {path.name}: {'ok' if rec['ok'] else 'FAILED'} in {wall:.1f} s\n",
              flush=True)

    print("summary (wall time per notebook, including the process start):")
    for rec in records:
        notes = [c for c in rec.get("cells", []) if c.get("note")]
        extra = f", {len(notes)} tagged cell(s) did not raise" if notes else ""
        print(f"  {'ok    ' if rec['ok'] else 'FAILED'} {rec['wall_seconds']:7.1f} s  "
              f"{rec['notebook']}{extra}")
    total = sum(r["wall_seconds"] for r in records)
    print(f"  total {total:.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    return 0 if all(r["ok"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
