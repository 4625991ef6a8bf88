"""Good kernels written in the lab's own idioms are never rejected: every kernel of the kernel
library (each template, each dtype it is instantiated for) and every ``%%tilekernel`` cell of every
notebook checks without an error or a warning (a notebook cell tagged ``raises-exception`` is a
lesson about an error and is skipped; a warning a lesson shows in its stored output is allowed).

Kernels are discovered, not listed: a template added to ``cutile_lab/kernels/`` or a cell added
to a notebook is checked by this test without editing it.
"""
from __future__ import annotations

import ast
import importlib
import json
import pkgutil
from pathlib import Path

import pytest

import cutile_lab.kernels as kernels_pkg
from cutile_lab.checking import check_source
from cutile_lab.kernels.library import KernelTemplate

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
DTYPES = ("f16", "bf16", "f32")


def _templates() -> list[tuple[str, KernelTemplate]]:
    found = []
    for info in pkgutil.iter_modules(kernels_pkg.__path__):
        mod = importlib.import_module(f"{kernels_pkg.__name__}.{info.name}")
        for name, value in vars(mod).items():
            if isinstance(value, KernelTemplate):
                found.append((f"{info.name}.{name}", value))
    return sorted(found, key=lambda t: t[0])


TEMPLATES = _templates()


def _variants(name: str, template: KernelTemplate, dt: str) -> list[dict]:
    """Every substitution the library's own code makes for a template's placeholders (its
    substitution functions, over exact and ragged sizes, each mask form), and its defaults."""
    import itertools
    import string
    from cutile_lab.kernels import elementwise, flash_attention, rowwise
    fields = {f for _, f, _, _ in string.Formatter().parse(template.text) if f}
    family = name.split(".")[-1].split("_")[0].lower()
    axes: list[list[dict]] = [[{"dt": dt, "hints": "", **template.defaults}]]
    if {"name", "op"} <= fields:
        axes.append([{"name": n, "op": op} for n, op in elementwise.OPERATORS.items()])
    if {"xi", "xs", "yi", "ys"} <= fields:
        fulls = [f for f in itertools.product((True, False), repeat=3) if any(f)]
        axes.append([elementwise.broadcast_substitutions(x, y)
                     for x in fulls[:4] for y in fulls[:4]])
    if "chunk" in fields or ("centered" in fields and "STATS" in name):
        axes.append([rowwise.long_substitutions(family, dt, cols, 1024)
                     for cols in (4096, 4000)])
    elif fields & {"pad", "centered"}:
        axes.append([rowwise.substitutions(family, dt, cols) for cols in (128, 100)])
    if "mask_apply" in fields:
        axes.append([{}] + [flash_attention.mask_substitutions(m, i, r, c)
                            for m in ("bool", dt) for i in ("0", "bh")
                            for r in (True, False) for c in (True, False)])
    out = []
    for combo in itertools.product(*axes):
        subs: dict = {}
        for part in combo:
            subs.update(part)
        missing = fields - set(subs)
        assert not missing, f"{name}: teach this test the placeholders {sorted(missing)}"
        out.append(subs)
    return out


def test_the_library_has_kernels():
    assert len(TEMPLATES) >= 5


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name,template", TEMPLATES, ids=[n for n, _ in TEMPLATES])
def test_library_kernels_check_clean(name, template, dt):
    for subs in _variants(name, template, dt):
        text = template.text.format(**subs)
        diags = check_source(text, template.filename, line_offset=template.line_offset,
                             globals_={})
        bad = [d for d in diags if d.severity in ("error", "warning")]
        assert not bad, "\n".join(f"{d.code} {d.span}: {d.message}" for d in bad)


def _notebook_cells():
    for nb_path in NOTEBOOKS:
        nb = json.loads(nb_path.read_text(encoding="utf-8"))
        names: dict = {}
        for i, cell in enumerate(nb["cells"]):
            if cell["cell_type"] != "code":
                continue
            src = "".join(cell["source"])
            first, _, body = src.partition("\n")
            if first.startswith("%%tilekernel"):
                tags = cell.get("metadata", {}).get("tags", [])
                shown = json.dumps(cell.get("outputs", []))
                yield pytest.param(nb_path.name, i, body, dict(names), tags, shown,
                                   id=f"{nb_path.stem}-cell{i}")
                text = body
            else:
                text = "\n".join(line for line in src.splitlines()
                                 if not line.lstrip().startswith(("%", "!")))
            try:
                tree = ast.parse(text)
            except SyntaxError:
                continue
            for node in tree.body:       # what a cell defines is known to later cells
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                        names[sub.id] = None
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                    names[node.name] = None
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    for a in node.names:
                        names[a.asname or a.name.split(".")[0]] = None


CELLS = list(_notebook_cells())


def test_the_notebooks_have_kernel_cells():
    assert len(CELLS) >= 20


@pytest.mark.parametrize("nb,index,body,names,tags,shown", CELLS)
def test_notebook_kernels_check_clean(nb, index, body, names, tags, shown):
    if "raises-exception" in tags:
        pytest.skip("a lesson about an error")
    diags = check_source(body, f"<{nb} cell {index}>", globals_=names)
    bad = [d for d in diags if d.is_error or (d.severity == "warning" and d.code not in shown)]
    assert not bad, "\n".join(f"{d.code} {d.span}: {d.message}" for d in bad)
