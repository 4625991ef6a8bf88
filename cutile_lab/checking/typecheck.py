"""The typing pass: every expression of a kernel body gets a type, and types flow through every
binding, so that the other passes reason about *values*, not names.

What it proves (and records for the other passes):

* each expression's type: a tensor parameter (``TensorV``: a shared tensor, or the kernel's own
  ``Mut`` tile, a move-only value), a tile (``TileV``: dtype and a symbolic shape, see
  ``tiletypes``), a tuple, a dtype, a bound method (``z.store`` carries ``z``), a module
  (``import cuda.tile as ctile``), a function, a module-level helper, raw memory
  (``x.get_raw_memory()``), or unknown (``None``);
* types flow through assignment, tuple packing and unpacking, attribute access, branches (joined
  where they merge: a name that is one tensor on one branch and another on the other is
  *unknown*), loops (iterated to a fixed point), returns, and calls of helper functions, which
  are checked through their bodies (under the call path, so two calls with different arguments
  are two sets of types) or, where their source cannot be read, recorded as calls the checker
  cannot follow;
* every call's meaning (``CallInfo``): a language or cuTile function (by what the name is bound
  to, so ``import cuda.tile as ctile; ctile.store`` is cuTile's raw ``store`` and a local
  ``store = z.store`` is ``z``'s method), a method on a value, a helper, or unknown; whether it
  runs inside ``with unsafe():`` (in the kernel or in a helper), and the kernel-level call it
  happens under (its *anchor*, where diagnostics point);
* moves: ``w = z`` moves the own tile ``z`` into ``w``; a later use of ``z`` is recorded (the
  ownership pass reports it, like rustc's E0382).

Nothing here reports a diagnostic: the passes that read these facts do.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any

from cutile_lab.checking.tiletypes import (DTypeV, NoneV, RangeV, Shape, TensorV, TileV, TupleV,
                                           Val, broadcast, dim_arith, dim_of, int_of, join,
                                           loose_const, promote_vals, reduce_shape, shape_of,
                                           symbol, _fold, _norm_axis, _resolve_reshape)
from cutile_lab.language import surface
from cutile_lab.language.dtypes import ALIASES, DTYPES, bool_, i32

RAW_OFFSET_WRITES = frozenset({"store_offset", "atomic_cas_offset", "atomic_xchg_offset",
                               "atomic_add_offset", "atomic_max_offset", "atomic_min_offset",
                               "atomic_and_offset", "atomic_or_offset", "atomic_xor_offset"})
RAW_OFFSET_READS = frozenset({"load_offset"})
CT_RAW = frozenset(surface.RAW_MEMORY | {"store_advanced_indexing", "load_advanced_indexing"})


# --- values beyond tiles --------------------------------------------------------------------

@dataclass(frozen=True)
class BoundV:
    """``obj.name`` not yet called: a bound method carries its receiver's ownership."""
    recv: Any
    name: str


@dataclass(frozen=True)
class ModuleV:
    name: str           # "cuda.tile", "cutile_lab", "numpy", ...


@dataclass(frozen=True)
class FuncV:
    space: str          # "lang" (a bare language / cuTile name), "ct" (an attribute of cuda.tile)
    name: str


@dataclass(frozen=True, eq=False)
class HelperV:
    """A function defined outside the kernel (module level, an earlier cell, ``@ct.function``)."""
    name: str
    node: ast.FunctionDef | None       # None: its source cannot be read
    filename: str = ""
    line_offset: int = 0


@dataclass(frozen=True)
class RawMemV:
    """``x.get_raw_memory()``: loads and stores at element offsets of ``array``."""
    array: Any


@dataclass(frozen=True)
class ConstAnnV:
    """An annotation object that marks a compile-time constant (``ct.Constant[int]``)."""


@dataclass
class CallInfo:
    node: ast.Call
    kind: str                   # "lang", "method", "helper", "unknown"
    name: str
    space: str = ""             # for "lang": "lang" (bare) or "ct"
    recv: Any = None            # for "method": the receiver's value
    args: tuple = ()
    kw: dict = field(default_factory=dict)
    helper: HelperV | None = None      # the helper whose body holds this call (None: the kernel)
    anchor: ast.AST | None = None      # the kernel-level call this happens under
    path: tuple = ()
    in_unsafe: bool = False
    callee: HelperV | None = None      # for "helper": the function called
    problem: str | None = None         # for "helper": why it cannot be followed

    @property
    def raw_op(self) -> str | None:
        """The raw memory operation this call performs, if any."""
        if self.kind == "lang":
            if self.space == "lang" and self.name in surface.RAW_MEMORY:
                return self.name
            if self.space == "ct" and self.name in CT_RAW:
                return self.name
        if self.kind == "method" and self.name == "get_raw_memory" and \
                isinstance(self.recv, TensorV):
            return "get_raw_memory"
        if self.kind == "method" and isinstance(self.recv, RawMemV) and \
                self.name in RAW_OFFSET_WRITES | RAW_OFFSET_READS:
            return self.name
        return None

    def arg(self, i: int, *names: str):
        if len(self.args) > i:
            return self.args[i]
        for n in names:
            if n in self.kw:
                return self.kw[n]
        return None

    def arg_node(self, i: int, *names: str) -> ast.AST | None:
        if len(self.node.args) > i:
            return self.node.args[i]
        return next((k.value for k in self.node.keywords if k.arg in names), None)


@dataclass
class Use:
    """A use of a name after its own tile was moved out of it."""
    node: ast.Name
    moved_at: ast.AST
    into: str
    helper: HelperV | None
    anchor: ast.AST


_UNARY_SAME = {"abs", "negative", "floor", "ceil", "bitwise_not", "cumsum", "cumprod"}
_UNARY_FLOAT = {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh",
                "cosh", "tanh"}
_BINARY = {"add", "sub", "mul", "floordiv", "mod", "pow", "maximum", "minimum", "atan2",
           "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_lshift", "bitwise_rshift"}
_COMPARE = {"equal", "not_equal", "greater", "greater_equal", "less", "less_equal"}
_REDUCE = {"sum", "prod", "max", "min"}
_NAMED_OPS = {"add": ast.Add, "sub": ast.Sub, "mul": ast.Mult, "floordiv": ast.FloorDiv,
              "mod": ast.Mod, "pow": ast.Pow}
_MOVED = "#moved:"


def _is_unsafe_with(node: ast.With) -> bool:
    if len(node.items) != 1:
        return False
    expr = node.items[0].context_expr
    target = expr.func if isinstance(expr, ast.Call) else expr
    return (isinstance(target, ast.Name) and target.id == "unsafe") or \
        (isinstance(target, ast.Attribute) and target.attr == "unsafe")


def _join_env(a: dict, b: dict) -> dict:
    out = {}
    for k in set(a) | set(b):
        if isinstance(k, str) and k.startswith(_MOVED):
            out[k] = a.get(k) or b.get(k)
        else:
            out[k] = join(a.get(k), b.get(k))
    return out


class Typing:
    """Runs once over a kernel body; ``of(expr)`` is the type the body gives ``expr``."""

    MAX_LOOP_PASSES = 4
    MAX_DEPTH = 8

    def __init__(self, ctx):
        self.ctx = ctx
        kdef = ctx.kdef
        self.kdef = kdef
        self.locals = ctx.locals
        self.types: dict = {}           # (path, id(node)) -> Val
        self.calls: dict = {}           # (path, id(node)) -> CallInfo
        self.moved_uses: dict = {}      # (path, id(node)) -> Use
        self.path: tuple = ()
        self.helper_stack: list[HelperV] = []
        self.anchor: ast.AST | None = None
        self.unsafe_depth = 0
        self.returns: list[list] = []
        self.helper_locals: list[set] = []
        self._globals_cache: dict = {}
        # names used only for the tile's shape and position (`load_tile_like(x, z)`, `z.shape`):
        # not a use of its memory, so allowed after the tile moved to another name
        self.metadata_uses: set[int] = set()
        self.loop_depth = 0
        env: dict = {}
        for g in kdef.const_generics:
            env[g] = symbol(g)
        for p in kdef.params:
            if p.role in ("mut", "shared"):
                env[p.name] = TensorV(p)
            elif p.role == "scalar":
                env[p.name] = TileV((), p.dtype)
            elif p.role == "const":
                env[p.name] = symbol(p.name)
        if kdef.kind == "cutile":
            for p in kdef.params:
                if p.annotation is not None and self._is_const_annotation(p.annotation):
                    env[p.name] = symbol(p.name)
        self.env = self._block(kdef.node.body, env)

    # --- what the other passes read ---------------------------------------------------------

    def of(self, node: ast.AST, path: tuple = ()) -> Val:
        return self.types.get((path, id(node)))

    def call(self, node: ast.AST, path: tuple = ()) -> CallInfo | None:
        return self.calls.get((path, id(node)))

    def all_calls(self) -> list[CallInfo]:
        """Every call, in the kernel and in the helpers it calls, in source order per body."""
        return sorted(self.calls.values(),
                      key=lambda c: (len(c.path), c.path, c.node.lineno, c.node.col_offset))

    # --- names ----------------------------------------------------------------------------

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
        for tree, filename, offset in self._module_tree():
            found = _lookup_module_name(tree, name, filename, offset, self.kdef.node)
            if found is not _MISSING:
                if isinstance(found, ast.AST):           # a module-level assignment's value
                    return self._module_value(found)
                return found
        g = self.ctx.globals
        if g is not None and name in g:
            return _value_of_object(g[name], name)
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
        v = self._eval(node, {})
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

    def _name(self, e: ast.Name, env: dict) -> Val:
        moved = env.get(_MOVED + e.id)
        if moved is not None and id(e) not in self.metadata_uses:
            move_node, into = moved
            self.moved_uses[(self.path, id(e))] = Use(
                e, move_node, into, self.helper_stack[-1] if self.helper_stack else None,
                self.anchor if self.anchor is not None else e)
        if e.id in env:
            return env[e.id]
        if e.id in (self.helper_locals[-1] if self.helper_locals else self.locals):
            return None          # assigned later (or on another path): not known here
        return self._global(e.id)

    # --- statements -------------------------------------------------------------------------

    def _block(self, stmts, env: dict) -> dict:
        for s in stmts:
            env = self._stmt(s, env)
        return env

    def _stmt(self, s: ast.stmt, env: dict) -> dict:
        if isinstance(s, ast.Assign):
            v = self._eval(s.value, env)
            for t in s.targets:
                self._bind(t, v, env)
            self._moves(s.value, s.targets, s, env)
        elif isinstance(s, ast.AnnAssign):
            v = self._eval(s.value, env) if s.value is not None else None
            self._bind(s.target, v, env)
            if s.value is not None:
                self._moves(s.value, [s.target], s, env)
        elif isinstance(s, ast.AugAssign):
            cur = self._eval(s.target, env) if isinstance(s.target, ast.Name) else None
            rhs = self._eval(s.value, env)
            self._bind(s.target, self._binop(type(s.op), cur, rhs), env)
        elif isinstance(s, ast.If):
            self._eval(s.test, env)
            a = self._block(s.body, dict(env))
            b = self._block(s.orelse, dict(env))
            env = _join_env(a, b)
        elif isinstance(s, (ast.For, ast.AsyncFor, ast.While)):
            if isinstance(s, ast.While):
                self._eval(s.test, env)
            else:
                it = self._eval(s.iter, env)
                self._bind(s.target, (it.item or TileV((), i32)) if isinstance(it, RangeV)
                           else None, env)
            cur = dict(env)
            self.loop_depth += 1
            try:
                cur = self._loop(s, env, cur)
            finally:
                self.loop_depth -= 1
            env = self._block(s.orelse, cur)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            unsafe = isinstance(s, ast.With) and _is_unsafe_with(s)
            for item in s.items:
                self._eval(item.context_expr, env)
                if item.optional_vars is not None:
                    self._bind(item.optional_vars, None, env)
            self.unsafe_depth += unsafe
            try:
                env = self._block(s.body, env)
            finally:
                self.unsafe_depth -= unsafe
        elif isinstance(s, (ast.Try,) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())):
            env = self._block(s.body, env)
            for h in s.handlers:
                env = self._block(h.body, env)
            env = self._block(s.orelse, env)
            env = self._block(s.finalbody, env)
        elif isinstance(s, ast.Expr):
            self._eval(s.value, env)
        elif isinstance(s, ast.Return):
            v = self._eval(s.value, env) if s.value is not None else NoneV()
            if self.returns:
                self.returns[-1].append(v)
        elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            env[s.name] = None
        else:
            for child in ast.iter_child_nodes(s):
                if isinstance(child, ast.expr):
                    self._eval(child, env)
        return env

    def _loop(self, s, env: dict, cur: dict) -> dict:
        """A loop's body, run until the types it carries stop changing (a fixed point)."""
        for i in range(self.MAX_LOOP_PASSES + 1):
            if not isinstance(s, ast.While) and isinstance(s.target, ast.Name):
                cur[s.target.id] = env.get(s.target.id)
            out = self._block(s.body, dict(cur))
            joined = _join_env(cur, out)
            if joined == cur:
                break
            if i == self.MAX_LOOP_PASSES - 1:   # no fixpoint: forget what keeps changing
                joined = {k: (v if v == cur.get(k) or
                              (isinstance(k, str) and k.startswith(_MOVED)) else None)
                          for k, v in joined.items()}
            cur = joined
        return cur

    def _moves(self, value: ast.AST, targets, stmt: ast.AST, env: dict) -> None:
        """``w = z`` (or ``pair = (z, x)``): the own tile ``z`` now lives in the target."""
        sources = value.elts if isinstance(value, ast.Tuple) else [value]
        into = ", ".join(ast.unparse(t) for t in targets)
        for src in sources:
            if isinstance(src, ast.Name):
                v = self.types.get((self.path, id(src)))
                if isinstance(v, TensorV) and v.param.role == "mut" and \
                        not any(isinstance(t, ast.Name) and t.id == src.id for t in targets):
                    env[_MOVED + src.id] = (stmt, into)

    def _bind(self, target: ast.AST, v: Val, env: dict) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = v
            env.pop(_MOVED + target.id, None)
            self.types[(self.path, id(target))] = v
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = v.items if isinstance(v, TupleV) and len(v.items) == len(target.elts) \
                else (None,) * len(target.elts)
            for t, x in zip(target.elts, items):
                self._bind(t, x, env)
        elif isinstance(target, ast.Starred):
            self._bind(target.value, None, env)
        else:   # attribute / subscript targets: evaluate for their sub-expressions
            for child in ast.iter_child_nodes(target):
                if isinstance(child, ast.expr):
                    self._eval(child, env)

    # --- expressions ------------------------------------------------------------------------

    def _eval(self, e: ast.expr, env: dict) -> Val:
        v = self._eval_inner(e, env)
        self.types[(self.path, id(e))] = v
        return v

    def _eval_inner(self, e: ast.expr, env: dict) -> Val:
        if isinstance(e, ast.Constant):
            if isinstance(e.value, (bool, int, float)):
                return loose_const(e.value)
            if e.value is None:
                return NoneV()
            return None
        if isinstance(e, ast.Name):
            return self._name(e, env)
        if isinstance(e, ast.Tuple):
            return TupleV(tuple(self._eval(x, env) for x in e.elts))
        if isinstance(e, ast.BinOp):
            a = self._eval(e.left, env)
            b = self._eval(e.right, env)
            return self._binop(type(e.op), a, b)
        if isinstance(e, ast.UnaryOp):
            a = self._eval(e.operand, env)
            if isinstance(e.op, ast.Not):
                return TileV(a.shape, bool_) if isinstance(a, TileV) else None
            if isinstance(a, TileV):
                if a.loose and isinstance(a.const, (int, float)) and \
                        not isinstance(a.const, bool):
                    if isinstance(e.op, ast.USub):
                        return loose_const(-a.const)
                    if isinstance(e.op, ast.UAdd):
                        return a
                if a.loose and isinstance(e.op, ast.USub):
                    d = dim_arith(ast.Mult, -1, dim_of(a))
                    if d is not None:
                        return TileV((), a.dtype, True, d)
                return TileV(a.shape, a.dtype, a.loose)
            return None
        if isinstance(e, ast.Compare):
            vals = [self._eval(e.left, env)] + [self._eval(c, env) for c in e.comparators]
            shape: Shape = ()
            for v in vals:
                shape = broadcast(shape, v.shape) if isinstance(v, TileV) else None
            return TileV(shape, bool_)
        if isinstance(e, ast.BoolOp):
            for v in e.values:
                self._eval(v, env)
            return None
        if isinstance(e, ast.IfExp):
            self._eval(e.test, env)
            return join(self._eval(e.body, env), self._eval(e.orelse, env))
        if isinstance(e, ast.Attribute):
            return self._attribute(e, env)
        if isinstance(e, ast.Subscript):
            base = self._eval(e.value, env)
            idx = self._eval(e.slice, env)
            if isinstance(base, TupleV):
                i = int_of(idx)
                if i is not None and -len(base.items) <= i < len(base.items):
                    return base.items[i]
            return None
        if isinstance(e, ast.Call):
            return self._call(e, env)
        if isinstance(e, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                          ast.GeneratorExp)):
            return None          # reported as unsupported; their own names are not the body's
        for child in ast.iter_child_nodes(e):
            if isinstance(child, ast.expr):
                self._eval(child, env)
        return None

    def _attribute(self, e: ast.Attribute, env: dict) -> Val:
        if e.attr in ("shape", "dtype", "ndim") and isinstance(e.value, ast.Name):
            self.metadata_uses.add(id(e.value))
        base = self._eval(e.value, env)
        if isinstance(base, ModuleV):
            if base.name.startswith(("cuda.tile", "cutile_lab")):
                dt = DTYPES.get(e.attr) or ALIASES.get(e.attr)
                if dt is not None:
                    return DTypeV(dt)
                if e.attr == "Constant":
                    return ConstAnnV()
                if base.name == "cuda" and e.attr == "tile":
                    return ModuleV("cuda.tile")
                return FuncV("ct" if base.name.startswith("cuda.tile") else "lang", e.attr)
            if base.name == "cuda" and e.attr == "tile":
                return ModuleV("cuda.tile")
            import sys
            mod = sys.modules.get(base.name)      # an imported module's constant (math.pi)
            if mod is not None and hasattr(mod, e.attr):
                return _value_of_object(getattr(mod, e.attr), e.attr)
            return ModuleV(f"{base.name}.{e.attr}")
        if isinstance(base, TensorV):
            p = base.param
            if e.attr == "dtype" and p.dtype is not None:
                return DTypeV(p.dtype)
            if e.attr == "ndim" and p.shape:
                return loose_const(len(p.shape))
            if e.attr == "shape" and p.role == "mut":
                return TupleV(tuple(_dim_value(d) for d in p.shape))
            if e.attr in ("shape", "dtype", "ndim"):
                return None
            return BoundV(base, e.attr)
        if isinstance(base, RawMemV):
            return BoundV(base, e.attr)
        if isinstance(base, TileV) and not base.loose:
            if e.attr == "dtype" and base.dtype is not None:
                return DTypeV(base.dtype)
            if e.attr == "shape" and base.shape is not None:
                return TupleV(tuple(_dim_value(d) for d in base.shape))
            if e.attr == "ndim" and base.shape is not None:
                return loose_const(len(base.shape))
            if e.attr in ("shape", "dtype", "ndim"):
                return None
            return BoundV(base, e.attr)
        return None

    def _binop(self, op: type, a: Val, b: Val) -> Val:
        if op is ast.MatMult:
            return self._matmul(a, b)
        if not (isinstance(a, TileV) and isinstance(b, TileV)):
            return None
        if a.loose and b.loose and a.const is not None and b.const is not None:
            da, db = a.const, b.const
            if isinstance(da, (int, float)) and isinstance(db, (int, float)) and \
                    not isinstance(da, str) and not isinstance(db, str):
                try:
                    value = _fold(op, da, db)
                except Exception:   # division by zero, overflow: leave it to the compiler
                    value = None
                if value is not None:
                    return loose_const(value)
            else:
                d = dim_arith(op, dim_of(a), dim_of(b))
                if d is not None:
                    return TileV((), i32, True, d)
        dtype = promote_vals(a, b, force_float=op is ast.Div)
        origin = None
        # `b // n` and `b % n` of the block's own id `b`: together, an injective pair (the
        # row-major split of a 1-D grid into two coordinates)
        if op in (ast.FloorDiv, ast.Mod) and isinstance(a.origin, tuple) and \
                a.origin[0] == "bid" and value_token(b) is not None:
            origin = ("div" if op is ast.FloorDiv else "mod", a.origin, value_token(b))
        return TileV(broadcast(a.shape, b.shape), dtype, a.loose and b.loose, origin=origin)

    def _matmul(self, a: Val, b: Val) -> Val:
        if not (isinstance(a, TileV) and isinstance(b, TileV)):
            return None
        dtype = promote_vals(a, b)
        if a.shape is None or b.shape is None or len(a.shape) < 2 or len(b.shape) < 2:
            return TileV(None, dtype)
        batch = broadcast(a.shape[:-2], b.shape[:-2])
        if batch is None:
            return TileV(None, dtype)
        return TileV(tuple(batch) + (a.shape[-2], b.shape[-1]), dtype)

    # --- calls ------------------------------------------------------------------------------

    def _call(self, e: ast.Call, env: dict) -> Val:
        fval = self._eval(e.func, env)
        if fval == FuncV("lang", "load_tile_like") and len(e.args) == 2 and \
                isinstance(e.args[1], ast.Name):
            self.metadata_uses.add(id(e.args[1]))
        args = tuple(self._eval(a.value if isinstance(a, ast.Starred) else a, env)
                     for a in e.args)
        kw = {k.arg: self._eval(k.value, env) for k in e.keywords}
        info = CallInfo(e, "unknown", _callee_text(e.func), args=args, kw=kw,
                        helper=self.helper_stack[-1] if self.helper_stack else None,
                        anchor=self.anchor if self.anchor is not None else e, path=self.path,
                        in_unsafe=self.unsafe_depth > 0)
        self.calls[(self.path, id(e))] = info
        if isinstance(fval, FuncV):
            info.kind, info.name, info.space = "lang", fval.name, fval.space
            out = self._function(fval.name, list(args), kw)
            if isinstance(out, TileV) and out.shape == () and not out.loose and \
                    out.origin is None and not self.loop_depth:
                # a scalar computed once (not in a loop, where one call gives many values)
                out = TileV((), out.dtype, origin=("v", self.path, id(e)))
            return out
        if isinstance(fval, BoundV):
            info.kind, info.name, info.recv = "method", fval.name, fval.recv
            if isinstance(fval.recv, TensorV) and fval.name == "get_raw_memory":
                return RawMemV(fval.recv)
            return self._method(fval.recv, fval.name, list(args), kw)
        if isinstance(fval, HelperV):
            info.kind, info.name, info.callee = "helper", fval.name, fval
            if fval.node is self.kdef.node:
                info.kind = "unknown"      # the kernel calling itself: TL032
                return None
            return self._inline(info, fval, e, list(args), kw)
        if isinstance(fval, DTypeV) and len(args) == 1 and isinstance(args[0], TileV):
            return TileV(args[0].shape, fval.dtype)
        if fval is None and isinstance(e.func, ast.Attribute) and \
                self.types.get((self.path, id(e.func.value))) is None:
            info.kind, info.name = "method", e.func.attr     # a method of an unknown value
        if isinstance(fval, ModuleV) and isinstance(e.func, ast.Name):
            # a function imported from another module, without its source at hand
            info.kind, info.name = "helper", e.func.id
            info.problem = f"it comes from `{fval.name}`, whose source the checker does not read"
        return None

    def _inline(self, info: CallInfo, h: HelperV, e: ast.Call, args: list, kw: dict) -> Val:
        """A helper's body, run with its parameters bound to the arguments' types."""
        if h.node is None:
            info.problem = "its source cannot be read"
            return None
        if any(s.node is h.node for s in self.helper_stack):
            info.problem = "it calls itself"
            return None
        if len(self.helper_stack) >= self.MAX_DEPTH:
            info.problem = f"helpers nest more than {self.MAX_DEPTH} deep"
            return None
        fn = h.node
        a = fn.args
        if a.vararg is not None or a.kwarg is not None or a.kwonlyargs or \
                any(isinstance(x, ast.Starred) for x in e.args) or \
                any(k.arg is None for k in e.keywords):
            info.problem = "it takes or is given `*args` / `**kwargs`"
            return None
        params = a.posonlyargs + a.args
        if len(args) > len(params) or any(k not in {p.arg for p in params} for k in kw):
            info.problem = "the arguments do not match its parameters"
            return None
        env: dict = {}
        defaults = [None] * (len(params) - len(a.defaults)) + list(a.defaults)
        saved = (self.path, self.anchor)
        if self.anchor is None:
            self.anchor = e
        self.path = self.path + (id(e),)
        for i, (p, d) in enumerate(zip(params, defaults)):
            if i < len(args):
                env[p.arg] = args[i]
            elif p.arg in kw:
                env[p.arg] = kw[p.arg]
            elif d is not None:
                env[p.arg] = self._eval(d, {})
            else:
                self.path, self.anchor = saved
                info.problem = f"its parameter `{p.arg}` is not given"
                return None
        self.helper_stack.append(h)
        self.helper_locals.append(_assigned_names(fn) | {p.arg for p in params})
        self.returns.append([])
        try:
            self._block(fn.body, env)
            rets = self.returns[-1]
        finally:
            self.returns.pop()
            self.helper_locals.pop()
            self.helper_stack.pop()
            self.path, self.anchor = saved
        if not rets:
            return NoneV()
        out = rets[0]
        for r in rets[1:]:
            out = join(out, r)
        return out

    def _arg(self, args, kw, i, name, default=None):
        if len(args) > i:
            return args[i]
        return kw.get(name, default)

    def _function(self, name: str, args: list, kw: dict) -> Val:
        a0 = args[0] if args else None
        if name == "load_tile_like":
            x, z = self._arg(args, kw, 0, "x"), self._arg(args, kw, 1, "z")
            dtype = x.param.dtype if isinstance(x, TensorV) else None
            shape = tuple(z.param.shape) if isinstance(z, TensorV) and z.param.role == "mut" \
                else None
            return TileV(shape, dtype)
        if name in ("load_tile", "load"):
            x = self._arg(args, kw, 0, "array")
            dtype = x.param.dtype if isinstance(x, TensorV) else None
            return TileV(shape_of(self._arg(args, kw, 2, "shape")), dtype)
        if name == "gather":
            # element-wise indexed reads: the result has the shape the index tiles broadcast to
            x = self._arg(args, kw, 0, "array")
            idx = self._arg(args, kw, 1, "indices")
            dtype = x.param.dtype if isinstance(x, TensorV) else None
            shape: Any = ()
            for part in (idx.items if isinstance(idx, TupleV) else (idx,)):
                shape = broadcast(shape, part.shape) if isinstance(part, TileV) else None
            return TileV(shape, dtype)
        if name in ("bid", "tile_id"):
            axis = int_of(self._arg(args, kw, 0, "axis"))
            return TileV((), i32, origin=("bid", axis) if axis is not None else None)
        if name in ("num_tiles", "num_blocks", "cdiv"):
            axis = int_of(self._arg(args, kw, 0, "axis"))
            return TileV((), i32, origin=("num", axis) if name == "num_blocks" and
                         axis is not None else None)
        if name == "range":
            return _range(args)
        if name in ("full", "zeros", "ones"):
            shape = shape_of(self._arg(args, kw, 0, "shape"))
            dt = self._arg(args, kw, 2 if name == "full" else 1, "dtype")
            return TileV(shape, dt.dtype if isinstance(dt, DTypeV) else None)
        if name == "arange":
            dt = kw.get("dtype")
            n = self._arg(args, kw, 0, "size")
            return TileV((dim_of(n),), dt.dtype if isinstance(dt, DTypeV) else None)
        if name in ("astype", "bitcast"):
            dt = self._arg(args, kw, 1, "dtype")
            shape = a0.shape if isinstance(a0, TileV) else None
            return TileV(shape, dt.dtype if isinstance(dt, DTypeV) else None)
        if name == "where" and len(args) == 3:
            c, x, y = args
            if not all(isinstance(v, TileV) for v in args):
                return None
            return TileV(broadcast(broadcast(c.shape, x.shape), y.shape), promote_vals(x, y))
        if name == "mma":
            acc = self._arg(args, kw, 2, "acc")
            return TileV(acc.shape, acc.dtype) if isinstance(acc, TileV) else None
        if name in ("reshape", "permute", "transpose", "expand_dims", "broadcast_to",
                    "extract") and isinstance(a0, TileV):
            return self._method(a0, name, args[1:], kw)
        if not isinstance(a0, TileV):
            return None
        if name in _UNARY_SAME:
            return TileV(a0.shape, a0.dtype, a0.loose)
        if name in _UNARY_FLOAT:
            return TileV(a0.shape, a0.dtype if a0.dtype is not None and a0.dtype.is_float
                         else None)
        if name == "isnan":
            return TileV(a0.shape, bool_)
        if name in _BINARY and len(args) >= 2:
            return self._binop(_NAMED_OPS.get(name, ast.BitAnd), a0, args[1])
        if name == "truediv" and len(args) >= 2:
            return self._binop(ast.Div, a0, args[1])
        if name in _COMPARE and len(args) >= 2 and isinstance(args[1], TileV):
            return TileV(broadcast(a0.shape, args[1].shape), bool_)
        if name in _REDUCE or name in ("argmax", "argmin"):
            if a0.shape == () or a0.loose:
                return None          # Python's min/max of scalars: not a reduction
            axis = self._arg(args, kw, 1, "axis", "all")
            keep = self._arg(args, kw, 2, "keepdims", loose_const(False))
            if not (isinstance(keep, TileV) and keep.loose and keep.const is not None):
                return TileV(None, a0.dtype)
            keepdims = bool(keep.const)
            dtype = i32 if name in ("argmax", "argmin") else a0.dtype
            return TileV(reduce_shape(a0.shape, axis, keepdims), dtype)
        if name == "matmul" and len(args) >= 2:
            return self._matmul(a0, args[1])
        return None

    def _method(self, obj: Val, name: str, args: list, kw: dict) -> Val:
        if isinstance(obj, TensorV):
            p = obj.param
            if name == "load" and p.role == "mut":
                return TileV(tuple(p.shape), p.dtype)
            return None
        if isinstance(obj, RawMemV):
            if name == "load_offset":
                off = self._arg(args, kw, 0, "offset")
                dt = obj.array.param.dtype if isinstance(obj.array, TensorV) else None
                return TileV(off.shape if isinstance(off, TileV) else None, dt)
            return None
        if not isinstance(obj, TileV):
            return None
        if name in ("astype", "bitcast"):
            dt = self._arg(args, kw, 0, "dtype")
            return TileV(obj.shape, dt.dtype if isinstance(dt, DTypeV) else None)
        if name == "reshape":
            shape = shape_of(self._arg(args, kw, 0, "shape"))
            return TileV(_resolve_reshape(obj.shape, shape), obj.dtype)
        if name == "permute":
            axes = self._arg(args, kw, 0, "axes")
            if obj.shape is None or not isinstance(axes, TupleV):
                return TileV(None, obj.dtype)
            idx = [int_of(a) for a in axes.items]
            if any(i is None for i in idx) or sorted(idx) != list(range(len(obj.shape))):
                return TileV(None, obj.dtype)
            return TileV(tuple(obj.shape[i] for i in idx), obj.dtype)
        if name == "transpose":
            if obj.shape is None:
                return TileV(None, obj.dtype)
            a0 = self._arg(args, kw, 0, "axis0")
            a1 = self._arg(args, kw, 1, "axis1")
            rank = len(obj.shape)
            if a0 is None and a1 is None:
                if rank != 2:
                    return TileV(None, obj.dtype)
                return TileV((obj.shape[1], obj.shape[0]), obj.dtype)
            i, j = int_of(a0), int_of(a1)
            if i is None or j is None:
                return TileV(None, obj.dtype)
            i, j = _norm_axis(i, rank), _norm_axis(j, rank)
            if i is None or j is None:
                return TileV(None, obj.dtype)
            shape = list(obj.shape)
            shape[i], shape[j] = shape[j], shape[i]
            return TileV(tuple(shape), obj.dtype)
        if name == "expand_dims":
            axis = int_of(self._arg(args, kw, 0, "axis"))
            if obj.shape is None or axis is None:
                return TileV(None, obj.dtype)
            rank = len(obj.shape) + 1
            axis = _norm_axis(axis, rank)
            if axis is None:
                return TileV(None, obj.dtype)
            shape = list(obj.shape)
            shape.insert(axis, 1)
            return TileV(tuple(shape), obj.dtype)
        if name == "broadcast_to":
            return TileV(shape_of(self._arg(args, kw, 0, "shape")), obj.dtype)
        if name == "item":
            return TileV((), obj.dtype)
        if name in _REDUCE or name in ("argmax", "argmin") or name in _UNARY_SAME or \
                name in _UNARY_FLOAT:
            return self._function(name, [obj] + list(args), kw)
        return None


# --- helpers ---------------------------------------------------------------------------------

_MISSING = object()


def _dim_value(d) -> Val:
    if d is None:
        return None
    if isinstance(d, int):
        return loose_const(d)
    return TileV((), i32, True, d)


def value_token(v) -> Any:
    """What identifies a scalar's value, where two of them are provably equal: a constant (its
    value or symbol), or a scalar computed once (the call that made it)."""
    if not isinstance(v, TileV) or v.shape != ():
        return None
    if v.loose and v.const is not None and not isinstance(v.const, bool):
        return ("k", v.const)
    if isinstance(v.origin, tuple) and v.origin[0] in ("v", "num"):
        return v.origin
    return None


def _range(args: list) -> RangeV:
    """``range(...)``: its loop variable is a scalar; ``range(bid(a), n, num_blocks(a))`` gives
    each block its own disjoint set of values (a persistent loop), which the race analysis of
    plain cuTile kernels counts as the block's own id."""
    item = TileV((), i32)
    if len(args) == 3:
        start, step = args[0], args[2]
        if isinstance(start, TileV) and isinstance(step, TileV) and \
                isinstance(start.origin, tuple) and start.origin[0] == "bid" and \
                step.origin == ("num", start.origin[1]):
            item = TileV((), i32, origin=start.origin)
    return RangeV(item)


def _callee_text(func: ast.AST) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _assigned_names(fn: ast.FunctionDef) -> set[str]:
    out = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
    return out


def _lookup_module_name(tree: ast.Module, name: str, filename: str, offset: int,
                        kernel: ast.FunctionDef):
    """What a module's top level binds ``name`` to: a ``HelperV`` for a function, a module or
    cuTile function for an import, the value node of an assignment; ``_MISSING`` if nothing.
    The last binding wins, as at the end of an import."""
    found = _MISSING
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            if _same_def(node, kernel):
                found = HelperV(name, kernel, filename, offset)
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


def _value_of_object(obj, name: str) -> Val:
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
    fn = getattr(obj, "__wrapped__", None) or getattr(obj, "_pyfunc", None) or obj
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
