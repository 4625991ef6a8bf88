"""How the typing pass resolves a name the kernel body does not bind: a module-level definition
or import of the file the kernel was written in (the last binding wins, as at the end of an
import), an object of the kernel's namespace, or a name of the language itself.

A module-level function becomes a ``HelperV`` (its body is checked where it is called), an
import of ``cuda.tile`` a module or cuTile function, a module-level constant a loose scalar.
What the reading cannot vouch for is not read as if it ran: a function under a decorator other
than cuTile's or the lab's ``function``/``kernel`` (or an object of the namespace wrapping
another through ``__wrapped__``) is a helper that cannot be followed; a name the module also
binds inside an ``if``/``for``/``with``/``try``, by ``:=``, by a ``global`` in a function or
through ``globals()``/``setattr`` (and every name, where it calls ``exec``, ``globals()`` or
``vars()`` with a key it does not write out) is what the namespace holds, or unknown.
``NameResolution`` is mixed into ``typecheck.Typing``.
"""
from __future__ import annotations

import ast
import inspect
import textwrap

from cutile_lab.checking.tiletypes import DTypeV, TileV, Val, loose_const
from cutile_lab.checking.typecheck_values import ConstAnnV, FuncV, HelperV, ModuleV
from cutile_lab.language import surface
from cutile_lab.language.dtypes import ALIASES, DTYPES

_MISSING = object()


class NameResolution:
    """The part of ``Typing`` that gives a type to a global name (cached per checked kernel)."""

    def _is_const_annotation(self, ann: ast.AST) -> bool:
        if isinstance(ann, ast.Subscript):
            head = ann.value
            name = head.attr if isinstance(head, ast.Attribute) else \
                (head.id if isinstance(head, ast.Name) else None)
            if name in ("Constant", "Const"):
                return True
        if isinstance(ann, ast.Attribute) and ann.attr == "Constant":
            return True
        if isinstance(ann, ast.Name):
            v = self._global(ann.id)
            return isinstance(v, ConstAnnV)
        return False

    def _module_tree(self) -> list[tuple[ast.Module, str, int]]:
        """The module(s) the kernel was written in: its source text and, when the kernel was cut
        out of a file, the whole file."""
        if getattr(self.ctx, "_module_trees", None) is None:
            import linecache
            trees = []
            src = self.ctx.source
            try:
                trees.append((ast.parse(src.text), src.filename, src.line_offset))
            except (SyntaxError, ValueError):
                pass
            if src.line_offset:
                lines = linecache.getlines(src.filename)
                try:
                    trees.append((ast.parse("".join(lines)), src.filename, 0))
                except (SyntaxError, ValueError):
                    pass
            self.ctx._module_trees = trees
        return self.ctx._module_trees

    def _global(self, name: str) -> Val:
        if name in self._globals_cache:
            return self._globals_cache[name]
        self._globals_cache[name] = None          # a module-level name defined by itself
        v = self._resolve_global(name)
        self._globals_cache[name] = v
        return v

    def _resolve_global(self, name: str) -> Val:
        g = self.ctx.globals
        for tree, filename, offset in self._module_tree():
            cache = self.ctx.__dict__.setdefault("_rebound", {})
            if id(tree) not in cache:
                cache[id(tree)] = _rebound_names(tree)
            rebound, dynamic, imported = cache[id(tree)]
            if dynamic or name in rebound:
                # bound where the checker does not follow (inside an `if`, by a `global` in a
                # function, through `globals()`): only the namespace, if at hand, says what it is
                return value_of_object(g[name], name) if g is not None and name in g else None
            where = ast.Module([imported[name]], []) if name in imported else tree
            found = _lookup_module_name(where, name, filename, offset, self.kdef.node)
            if found is not _MISSING:
                if isinstance(found, ast.AST):           # a module-level assignment's value
                    return self._module_value(found)
                return found
        if g is not None and name in g:
            return value_of_object(g[name], name)
        return self._language(name)

    def _module_value(self, node: ast.AST) -> Val:
        """The type of a module-level ``NAME = value`` (a literal, a constant annotation, a
        dtype, or an alias of another module-level name)."""
        try:
            lit = ast.literal_eval(node)
            if isinstance(lit, (bool, int, float)):
                return loose_const(lit)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        if isinstance(node, ast.Subscript):
            head = node.value
            hname = head.attr if isinstance(head, ast.Attribute) else \
                (head.id if isinstance(head, ast.Name) else None)
            if hname in ("Constant", "Const"):
                return ConstAnnV()
        if isinstance(node, ast.Attribute) and node.attr == "Constant":
            return ConstAnnV()
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            base = self._global(node.value.id)
            if isinstance(base, ModuleV) and base.name.startswith(("cuda.tile", "cutile_lab")):
                dt = DTYPES.get(node.attr) or ALIASES.get(node.attr)
                if dt is not None:
                    return DTypeV(dt)
                if base.name.startswith("cuda.tile"):
                    return FuncV("ct", node.attr)
        if isinstance(node, ast.Name) and node.id not in ("True", "False", "None"):
            return self._global(node.id)
        calls, self.calls = self.calls, {}   # the host runs these calls, not the kernel
        try:
            v = self._eval(node, {})
        finally:
            self.calls = calls
        if v is None and isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Call, ast.Attribute)):
            return TileV((), None, True)    # a number the host computes when the module loads
        return v

    def _language(self, name: str) -> Val:
        dt = DTYPES.get(name) or ALIASES.get(name)
        if dt is not None:
            return DTypeV(dt)
        if name == "ct":
            return ModuleV("cuda.tile")
        if name == "cl":
            return ModuleV("cutile_lab")
        if name in surface.all_known_names():
            return FuncV("lang", name)
        return None


def _lookup_module_name(tree: ast.Module, name: str, filename: str, offset: int,
                        kernel: ast.FunctionDef):
    """What a module's top level binds ``name`` to: a ``HelperV`` for a function, a module or
    cuTile function for an import, the value node of an assignment; ``_MISSING`` if nothing.
    The last binding wins, as at the end of an import."""
    found = _MISSING
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            wrapper = next((d for d in node.decorator_list if not _transparent(d)), None)
            if _same_def(node, kernel):
                found = HelperV(name, kernel, filename, offset)
            elif wrapper is not None:
                found = HelperV(name, None, filename, offset, problem=(
                    f"it is wrapped by the decorator `@{ast.unparse(wrapper)}`, so the checker "
                    "cannot tell which function runs"))
            else:
                found = HelperV(name, node, filename, offset)
        elif isinstance(node, ast.ClassDef) and node.name == name:
            found = None
        elif isinstance(node, ast.Import):
            for a in node.names:
                if (a.asname or a.name.split(".")[0]) == name:
                    found = ModuleV(a.name if a.asname else a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            for a in node.names:
                if (a.asname or a.name) == name:
                    if mod == "cuda" and a.name == "tile":
                        found = ModuleV("cuda.tile")
                    elif mod.startswith("cuda.tile"):
                        dt = DTYPES.get(a.name) or ALIASES.get(a.name)
                        found = DTypeV(dt) if dt is not None else (
                            ConstAnnV() if a.name == "Constant" else FuncV("ct", a.name))
                    elif mod.startswith("cutile_lab"):
                        found = _lang_value(a.name)
                    else:
                        found = ModuleV(f"{mod}.{a.name}")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name) and t.id == name and node.value is not None:
                    found = node.value
                elif isinstance(t, (ast.Tuple, ast.List)) and any(
                        isinstance(x, ast.Name) and x.id == name for x in t.elts):
                    found = None
    return found


def _transparent(decorator: ast.AST) -> bool:
    """A decorator that leaves the function's body what runs: cuTile's and the lab's
    ``function`` and ``kernel`` (``@ct.function``, ``@cl.kernel(occupancy=2)``)."""
    d = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = d.attr if isinstance(d, ast.Attribute) else (d.id if isinstance(d, ast.Name) else "")
    return name in ("function", "kernel")


_DYNAMIC = frozenset({"globals", "vars", "setattr", "exec", "eval"})


def _rebound_names(tree: ast.Module) -> tuple[frozenset[str], bool, dict]:
    """The names a module binds other than by a statement of its top level (inside an `if`,
    `for`, `with` or `try` there, by `:=`, by a `global` declaration in a function), and whether
    it may rebind names at run time in ways no reading follows (``globals()``, ``setattr``,
    ``exec``...): for these, the last top-level binding is not what the kernel calls. A name
    that such a statement only imports, always from one place (``try: import cuda.tile as ct``),
    is no doubt: the third value maps it to that import statement."""
    names: set[str] = set()
    named: set[int] = set()          # globals()["put"], setattr(m, "put", f): one name each
    imports: dict[str, dict] = {}    # name -> {where it is imported from: the statement}
    dynamic = False
    for node in tree.body:
        top = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom,
                                ast.Expr))
        for n in ast.walk(node):
            key = _literal_key(n)
            if key is not None:
                names.add(key[1])
                named.add(id(key[0]))
            if isinstance(n, ast.Global):
                names.update(n.names)
            elif isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name):
                names.add(n.target.id)
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and \
                    n.func.id in _DYNAMIC and id(n) not in named:
                dynamic = True
            elif isinstance(n, (ast.Import, ast.ImportFrom)) and (not top or n is node):
                for a in n.names:
                    origin = (getattr(n, "module", None), a.name, a.asname)
                    imports.setdefault((a.asname or a.name).split(".")[0], {})[origin] = n
            elif not top and isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and \
                    not _none_fallback(n, node):
                names.add(n.id)
            elif not top and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                            ast.ClassDef)):
                names.add(n.name)
    top_level = {t.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                 for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                 if isinstance(t, ast.Name)} | \
        {node.name for node in tree.body
         if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    nested: dict = {}
    for name, origins in imports.items():
        if len(origins) > 1 or name in top_level:
            names.add(name)              # imported from two places, or bound otherwise too
        elif name not in names:
            nested[name] = next(iter(origins.values()))
    return frozenset(names), dynamic, nested


def _none_fallback(target: ast.Name, stmt: ast.AST) -> bool:
    """``except ImportError: ct = None``: a name set to None where an import failed. Nothing can
    be called through None, so it cannot make a kernel run other code than the import's."""
    return any(isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and
               n.value.value is None and any(t is target for t in n.targets)
               for n in ast.walk(stmt))


def _literal_key(n: ast.AST) -> tuple[ast.Call, str] | None:
    """``globals()["put"]`` or ``setattr(m, "put", f)``: the call, and the one name it reaches."""
    if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Call) and \
            isinstance(n.value.func, ast.Name) and n.value.func.id in ("globals", "vars") and \
            isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str):
        return n.value, n.slice.value
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "setattr" and \
            len(n.args) == 3 and isinstance(n.args[1], ast.Constant) and \
            isinstance(n.args[1].value, str):
        return n, n.args[1].value
    return None


def _same_def(a: ast.FunctionDef, b: ast.FunctionDef) -> bool:
    return a.name == b.name and a.col_offset == b.col_offset and \
        ast.dump(a.args) == ast.dump(b.args) and len(a.body) == len(b.body)


def _lang_value(name: str) -> Val:
    dt = DTYPES.get(name) or ALIASES.get(name)
    if dt is not None:
        return DTypeV(dt)
    if name in surface.all_known_names():
        return FuncV("lang", name)
    return None


def value_of_object(obj, name: str) -> Val:
    """The type of a Python object the kernel's namespace binds ``name`` to."""
    import types as pytypes
    from cutile_lab.language.constants import is_constant_annotation
    from cutile_lab.language.dtypes import DType
    import numbers
    if isinstance(obj, bool) or isinstance(obj, (int, float)):
        return loose_const(obj)
    if isinstance(obj, numbers.Integral):
        return loose_const(int(obj))
    if isinstance(obj, numbers.Real):
        return loose_const(float(obj))
    if isinstance(obj, DType):
        return DTypeV(obj)
    if isinstance(obj, pytypes.ModuleType):
        return ModuleV(obj.__name__)
    try:
        if is_constant_annotation(obj):
            return ConstAnnV()
    except Exception:
        pass
    module = getattr(obj, "__module__", "") or ""
    if module.startswith("cutile_lab"):
        return _lang_value(name) or _lang_value(getattr(obj, "__name__", name))
    if module.startswith("cuda.tile"):
        dt = DTYPES.get(getattr(obj, "__name__", "")) or ALIASES.get(str(obj))
        if dt is not None:
            return DTypeV(dt)
        fn_name = getattr(obj, "__name__", None)
        if fn_name is None:
            return None
        return FuncV("ct", fn_name)
    if hasattr(obj, "_cutile_tile_function") or hasattr(obj, "_pyfunc"):
        fn = getattr(obj, "__wrapped__", None) or getattr(obj, "_pyfunc", None) or obj
    elif hasattr(obj, "__wrapped__"):      # another decorator's wrapper: which body runs?
        return HelperV(name, None, problem="it is wrapped by a decorator, so the checker cannot "
                                           "tell which function runs")
    else:
        fn = obj
    if inspect.isfunction(fn):
        return _helper_of_function(fn, name)
    return None


def _helper_of_function(fn, name: str) -> HelperV:
    try:
        lines, start = inspect.findsource(fn)
        block = inspect.getblock(lines[start:])
        text = textwrap.dedent("".join(block))
        tree = ast.parse(text)
        node = next(n for n in tree.body if isinstance(n, (ast.FunctionDef,
                                                          ast.AsyncFunctionDef)))
        return HelperV(name, node, inspect.getsourcefile(fn) or fn.__code__.co_filename, start)
    except Exception:
        return HelperV(name, None)
