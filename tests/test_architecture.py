"""The package's shape, as tests a change cannot quietly break.

- No import circle inside ``cutile_lab/``: every ``import`` counts, at module level and inside
  functions alike (a lazy import only moves a circle to run time), and so does
  ``importlib.import_module("cutile_lab...")``.
- No module imports a stage above its own: data flows one way (DESIGN.md: source -> checked
  kernel -> compiled artifact -> launch -> measurement -> display). ``STAGES`` below is the order.
- No file over ``MAX_FILE_LINES`` lines and no function over ``MAX_FUNCTION_LINES``, except in a
  module whose docstring has a line starting ``Size:`` that says why.
- No ``except ImportError`` around an import of the package's own modules: they are always
  there, and such a guard only hides a broken import (optional third-party packages may be
  guarded).

Each test reports every violation at once, each with its file and line. The analysis is plain
``ast`` over the source (nothing is imported), and is itself tested on a small made-up package.
"""
from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "cutile_lab"

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80

# The pipeline order. A module may import its own stage and the stages below it (lower rank),
# never one above. A module belongs to the longest prefix that names it.
STAGES: list[tuple[int, tuple[str, ...], str]] = [
    (0, ("cutile_lab.diagnostics",),
     "spans, diagnostics, codes and their rendering: the leaf every stage reports with"),
    (1, ("cutile_lab.errors",),
     "the exception classes: they carry spans and render diagnostics, and every stage raises them"),
    (2, ("cutile_lab.language", "cutile_lab.lang"),
     "source -> KernelDef: the tile language's types, dtypes, options and parser; `lang` is the "
     "names a kernel is written with"),
    (3, ("cutile_lab.checking",),
     "KernelDef -> diagnostics and the typed kernel; the launch rules judge descriptions of "
     "arguments, not a runtime"),
    (4, ("cutile_lab.compiling",),
     "checked kernel -> cuTile -> Tile IR -> cubin; the lowering reads the checker's types"),
    (5, ("cutile_lab.simulation",),
     "runs a lowered kernel tile by tile on NumPy: a backend of the runtime, below the runtime "
     "that picks it (as the driver is for the GPU)"),
    (6, ("cutile_lab.runtime",),
     "launches compiled kernels on the GPU or the simulator, with the launch checks"),
    (7, ("cutile_lab.kernel",),
     "the public `Kernel`: check, compile and launch composed; the kernel library and the "
     "notebook build on it"),
    (8, ("cutile_lab.kernels",),
     "the library of safe kernels, written with `@kernel` and called on the runtime"),
    (9, ("cutile_lab.models",),
     "whole models built from the kernel library"),
    (10, ("cutile_lab.performance",),
     "measurement of launches: timing, counted work, peaks, ceilings, rooflines"),
    (11, ("cutile_lab.notebook",),
     "display: the magics, reports and widgets show what every stage below produced"),
    (12, ("cutile_lab", "cutile_lab.cli", "cutile_lab.__main__", "cutile_lab.catalog"),
     "the package's face (`import cutile_lab as cl`), the command line, and the catalog runner "
     "whose examples drive every stage"),
]


@dataclass(frozen=True)
class Edge:
    source: str       # importing module
    target: str       # imported module (resolved to a module of the package)
    path: Path
    line: int
    lazy: bool        # inside a function

    def where(self, root: Path) -> str:
        return (f"{self.path.relative_to(root)}:{self.line}"
                f"{' (inside a function)' if self.lazy else ''}")


def modules_of(root: Path, package: str = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of ``root/package``."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module ``name`` refers to: itself, or the nearest package/module above it (an
    attribute of a module: ``pkg.mod.func`` -> ``pkg.mod``)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _import_targets(node: ast.AST, module: str, is_package: bool,
                    modules: dict[str, Path]) -> list[str]:
    """The dotted names one statement or call imports (not yet resolved to modules)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - node.level + 1]
            full = ".".join(base + ([node.module] if node.module else []))
        else:
            full = node.module or ""
        # `from pkg import sub` imports the submodule `pkg.sub` where there is one, else a
        # name of `pkg` itself
        return [f"{full}.{a.name}" if f"{full}.{a.name}" in modules else full
                for a in node.names]
    if (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)):
        fn = node.func
        name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
        if name in ("import_module", "__import__"):
            return [node.args[0].value]
    return []


def import_edges(root: Path, package: str = PACKAGE) -> list[Edge]:
    """Every import of a module of ``package`` by a module of ``package``."""
    modules = modules_of(root, package)
    edges = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_package = path.name == "__init__.py"

        def visit(node: ast.AST, lazy: bool) -> None:
            for target in _import_targets(node, module, is_package, modules):
                if target != package and not target.startswith(package + "."):
                    continue
                resolved = _resolve(target, modules)
                if resolved and resolved != module:
                    edges.append(Edge(module, resolved, path, node.lineno, lazy))
            inner = lazy or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            for child in ast.iter_child_nodes(node):
                visit(child, inner)

        visit(tree, False)
    return sorted(set(edges), key=lambda e: (e.source, e.line, e.target))


def import_cycles(edges: list[Edge]) -> list[list[Edge]]:
    """One cycle (as its edges, in order) per strongly connected group of modules."""
    graph: dict[str, list[Edge]] = {}
    for e in edges:
        graph.setdefault(e.source, []).append(e)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def connect(v: str) -> None:      # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for e in graph.get(v, []):
            if e.target not in index:
                connect(e.target)
                low[v] = min(low[v], low[e.target])
            elif e.target in on_stack:
                low[v] = min(low[v], index[e.target])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return [_one_cycle(group, graph) for group in groups]


def _one_cycle(group: set[str], graph: dict[str, list[Edge]]) -> list[Edge]:
    """The shortest cycle through the group's first module (breadth-first)."""
    start = min(group)
    paths: dict[str, list[Edge]] = {start: []}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for e in graph.get(v, []):
                if e.target == start:
                    return paths[v] + [e]
                if e.target in group and e.target not in paths:
                    paths[e.target] = paths[v] + [e]
                    nxt.append(e.target)
        frontier = nxt
    raise AssertionError(f"no cycle through {start}")    # a strongly connected group has one


def tangled_with(module: str, edges: list[Edge]) -> set[str]:
    """The modules that ``module`` reaches and that reach it back (its circle's members)."""
    def reach(start: str, forward: bool) -> set[str]:
        seen, todo = {start}, [start]
        while todo:
            v = todo.pop()
            for e in edges:
                a, b = (e.source, e.target) if forward else (e.target, e.source)
                if a == v and b not in seen:
                    seen.add(b)
                    todo.append(b)
        return seen
    return reach(module, True) & reach(module, False)


def stage_of(module: str, stages=STAGES) -> tuple[int, str] | None:
    """(rank, prefix) of the longest prefix in ``stages`` that names ``module``."""
    best = None
    for rank, prefixes, _ in stages:
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > len(best[1]):
                    best = (rank, prefix)
    return best


def upward_imports(edges: list[Edge], stages=STAGES) -> list[Edge]:
    return [e for e in edges
            if stage_of(e.source, stages)[0] < stage_of(e.target, stages)[0]]


def _size_exempt(tree: ast.Module) -> bool:
    doc = ast.get_docstring(tree) or ""
    return any(line.strip().startswith("Size:") for line in doc.splitlines())


def size_violations(root: Path, package: str = PACKAGE, max_file: int = MAX_FILE_LINES,
                    max_function: int = MAX_FUNCTION_LINES) -> list[str]:
    out = []
    for path in modules_of(root, package).values():
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text, str(path))
        if _size_exempt(tree):
            continue
        rel = path.relative_to(root)
        n = len(text.splitlines())
        if n > max_file:
            out.append(f"{rel}: {n} lines (at most {max_file})")
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > max_function:
                    out.append(f"{rel}:{node.lineno}: function `{node.name}` has {length} "
                               f"lines (at most {max_function})")
    return out


def _cycle_text(cycle: list[Edge], root: Path, tangle: set[str] | None = None) -> str:
    chain = " -> ".join([cycle[0].source] + [e.target for e in cycle])
    steps = "\n".join(f"      {e.source} imports {e.target} at {e.where(root)}" for e in cycle)
    more = ""
    if tangle and len(tangle) > len(cycle):
        more = (f"\n      (one circle of {len(tangle)} modules that all reach each other: "
                f"{', '.join(sorted(tangle))})")
    return f"  {chain}\n{steps}{more}"


# --- the package --------------------------------------------------------------------------


@functools.cache
def _package_edges() -> tuple[Edge, ...]:
    return tuple(import_edges(ROOT))


def test_no_import_cycle_in_the_package():
    edges = list(_package_edges())
    cycles = import_cycles(edges)
    if cycles:
        pytest.fail(f"{len(cycles)} import circle(s) in {PACKAGE}/ (break each by moving what "
                    "both sides need below both):\n"
                    + "\n".join(_cycle_text(c, ROOT, tangled_with(c[0].source, edges))
                                 for c in cycles), pytrace=False)


def test_every_module_has_a_stage():
    missing = [m for m in modules_of(ROOT) if stage_of(m) is None]
    assert not missing, f"modules in no stage of STAGES: {missing}"


def test_no_module_imports_a_later_stage():
    bad = upward_imports(list(_package_edges()))
    if bad:
        pytest.fail(f"{len(bad)} import(s) of a later stage (data flows one way; move the shared "
                    "part down, or pass it in):\n"
                    + "\n".join(f"  {e.where(ROOT)}: {e.source} (stage {stage_of(e.source)[0]}) "
                                 f"imports {e.target} (stage {stage_of(e.target)[0]})"
                                 for e in bad), pytrace=False)


def test_files_and_functions_are_short():
    bad = size_violations(ROOT)
    if bad:
        pytest.fail(f"{len(bad)} file(s)/function(s) too long (split them, or say why in a "
                    "`Size:` line of the module docstring):\n  " + "\n  ".join(bad),
                    pytrace=False)


def guarded_own_imports(root: Path, package: str = PACKAGE) -> list[str]:
    """``file:line`` of each import of ``package`` inside a ``try`` with a handler naming
    ``ImportError`` or ``ModuleNotFoundError`` (a handler of every ``Exception`` reports a
    failure of the work around the import, which is another matter)."""
    def catches_import_error(handler: ast.ExceptHandler) -> bool:
        names = [] if handler.type is None else (
            handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type])
        return any(isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError")
                   for n in names)

    def own(node: ast.AST) -> bool:
        if isinstance(node, ast.Import):
            return any(a.name == package or a.name.startswith(package + ".") for a in node.names)
        if isinstance(node, ast.ImportFrom):
            return node.level > 0 or (node.module or "").split(".")[0] == package
        return False

    out = []
    for path in modules_of(root, package).values():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Try) and any(catches_import_error(h) for h in node.handlers):
                for stmt in node.body:
                    for inner in ast.walk(stmt):
                        if own(inner):
                            out.append(f"{path.relative_to(root)}:{inner.lineno}")
    return out


def test_no_guard_around_the_packages_own_imports():
    bad = guarded_own_imports(ROOT)
    assert not bad, ("imports of the package's own modules inside `try: ... except "
                     "ImportError` (import them plainly; a missing module is a bug to see):\n  "
                     + "\n  ".join(bad))


# --- the checks themselves, on a made-up package ------------------------------------------

TOY_STAGES = [(0, ("toy.low",), "below"), (1, ("toy.high",), "above"), (2, ("toy",), "face")]


def _toy(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "toy" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_the_checks_find_a_lazy_circle_and_an_upward_import(tmp_path):
    root = _toy(tmp_path, {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/a.py": "def f():\n    from toy.high import b\n",          # lazy, upward
        "high/__init__.py": "",
        "high/b.py": "from toy.low import a\n",
        "high/c.py": "from . import d\n",
        "high/d.py": "import importlib\n"
                     "def g():\n    return importlib.import_module('toy.high.c')\n",
    })
    edges = import_edges(root, "toy")
    cycles = import_cycles(edges)
    assert sorted(sorted({e.source for e in c}) for c in cycles) == [
        ["toy.high.b", "toy.low.a"], ["toy.high.c", "toy.high.d"]]
    [up] = upward_imports(edges, TOY_STAGES)
    assert (up.source, up.target, up.line, up.lazy) == ("toy.low.a", "toy.high.b", 2, True)
    text = "\n".join(_cycle_text(c, root) for c in cycles)
    assert "toy.high.b -> toy.low.a -> toy.high.b" in text
    assert "toy/high/d.py:3 (inside a function)" in text


@pytest.mark.parametrize("doc, expected", [("", 2), ('"""Big.\n\nSize: a table."""\n', 0)])
def test_the_size_check_counts_files_and_functions_unless_a_size_line_says_why(
        tmp_path, doc, expected):
    body = "def long():\n" + "    x = 1\n" * 12 + "\n"
    root = _toy(tmp_path, {"__init__.py": "", "big.py": doc + body + "y = 2\n" * 20})
    bad = size_violations(root, "toy", max_file=30, max_function=10)
    assert len(bad) == expected
    if expected:
        assert any("function `long` has 13 lines" in b for b in bad)


def test_the_guard_check_finds_a_guarded_own_import_only(tmp_path):
    root = _toy(tmp_path, {
        "__init__.py": "",
        "a.py": "try:\n    from toy import b\nexcept ImportError:\n    b = None\n",
        "b.py": "try:\n    import numpy\nexcept ImportError:\n    numpy = None\n",
        "c.py": "def f():\n    try:\n        from . import b\n    except (ValueError, ImportError):"
                "\n        pass\n",
        "d.py": "try:\n    from toy import b\nexcept KeyError:\n    pass\n",
    })
    bad = guarded_own_imports(root, "toy")
    assert sorted(bad) == [str(Path("toy/a.py")) + ":2", str(Path("toy/c.py")) + ":3"]
