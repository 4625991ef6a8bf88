"""The runtime's place in the pipeline, read from the source: no module of ``runtime/``,
``simulation/`` or ``kernel.py`` is part of an import circle, and the runtime and the simulator
import no stage above them (``kernel.py``, the kernel library, performance, notebook). Imports
inside functions count: a lazy import is still a dependency."""
from __future__ import annotations

import ast
from pathlib import Path

import cutile_lab

ROOT = Path(cutile_lab.__file__).parent

# what the runtime and the simulator must never import (stages above them, the user-facing
# decorator at the top); the runtime fills hooks instead (backend.Backend.implement,
# launch.set_kernel_adapter, ops.GRAPH_CAPTURE, simulation.adapters.FUNCTION_KERNEL)
ABOVE = ("cutile_lab.kernel", "cutile_lab.kernels", "cutile_lab.performance",
         "cutile_lab.notebook", "cutile_lab.models")
LOWER_STAGES = ("cutile_lab.runtime", "cutile_lab.simulation")


def _modules() -> dict[str, Path]:
    mods = {}
    for p in ROOT.rglob("*.py"):
        parts = ["cutile_lab", *p.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    return mods


def _imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the cutile_lab modules it imports (anywhere in its body)."""
    def resolve(name):
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        pkg = m if p.name == "__init__.py" else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    full = ".".join(base + ([node.module] if node.module else []))
                else:
                    full = node.module or ""
                targets = [f"{full}.{a.name}" if f"{full}.{a.name}" in mods else full
                           for a in node.names]
            for t in targets:
                if t.startswith("cutile_lab"):
                    r = resolve(t)
                    if r and r != m:
                        edges[m].add(r)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_no_import_circle_through_the_runtime():
    edges = _imports(_modules())
    ours = [c for c in _cycles(edges)
            if any(m.startswith(LOWER_STAGES) or m == "cutile_lab.kernel" for m in c)]
    assert ours == [], f"import circles through the runtime/simulator: {ours}"


def test_runtime_and_simulator_import_no_stage_above_them():
    edges = _imports(_modules())
    bad = sorted((m, t) for m, ts in edges.items() if m.startswith(LOWER_STAGES)
                 for t in ts if t.startswith(ABOVE))
    assert bad == [], f"modules importing a stage above them: {bad}"


def test_the_checker_finds_a_circle():
    """The circle finder itself: a two-module circle and a self-contained chain."""
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
