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
* moves: ``w = z`` moves the own tile ``z`` into ``w`` (so does binding any value that holds it:
  ``pair = (z, x)``, ``w = same(z)``); a later use of ``z`` is recorded, and so is the second
  ``z`` of ``a, b = z, z`` (the ownership pass reports them, like rustc's E0382).

Nothing here reports a diagnostic: the passes that read these facts do.

Where it lives: this module walks statements, expressions and calls; ``typecheck_values`` holds
the values and records, ``typecheck_names`` resolves global names, ``typecheck_ops`` types what
each function, method and operator returns.
"""
from __future__ import annotations

import ast

from cutile_lab.checking.tiletypes import (DTypeV, NoneV, RangeV, Shape, TensorV, TileV, TupleV,
                                           Val, broadcast, dim_arith, dim_of, int_of, join,
                                           loose_const, symbol)
from cutile_lab.checking.typecheck_names import NameResolution, value_of_object
from cutile_lab.checking.typecheck_ops import TileResults
from cutile_lab.checking.typecheck_values import (BoundV, CallInfo, ConstAnnV, FuncV, HelperV,
                                                  ModuleV, RawMemV, Use, dim_value)
from cutile_lab.language.dtypes import ALIASES, DTYPES, bool_, i32

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


class Typing(NameResolution, TileResults):
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
        """``w = z`` (or ``pair = (z, x)``, ``w = same(z)``: any value that holds the own tile
        ``z``): the own tile now lives in the target. ``a, b = z, z`` moves it twice: the
        second is a use after the first move."""
        owned = _mut_names(self.types.get((self.path, id(value))))
        if not owned:
            return
        into = ", ".join(ast.unparse(t) for t in targets)
        direct = value.elts if isinstance(value, ast.Tuple) else [value]
        unpacked = targets[0].elts if len(targets) == 1 and isinstance(
            targets[0], (ast.Tuple, ast.List)) and len(targets[0].elts) == len(direct) else None
        first: dict[str, str] = {}       # a tuple item's name -> the target it moved into
        for src in ast.walk(value):
            if not isinstance(src, ast.Name) or src.id not in owned or \
                    any(isinstance(t, ast.Name) and t.id == src.id for t in targets):
                continue
            v = self.types.get((self.path, id(src)))
            if not (isinstance(v, TensorV) and v.param.role == "mut"):
                continue
            i = next((k for k, d in enumerate(direct) if d is src), None)
            if i is not None and src.id in first:
                self.moved_uses[(self.path, id(src))] = Use(
                    src, stmt, first[src.id], self.helper_stack[-1] if self.helper_stack
                    else None, self.anchor if self.anchor is not None else src)
            elif i is not None:
                first[src.id] = ast.unparse(unpacked[i]) if unpacked else into
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
                if e.attr.startswith("_"):
                    return None    # `ct.__dict__`, `ct._private`: not an operation (TL038)
                return FuncV("ct" if base.name.startswith("cuda.tile") else "lang", e.attr)
            if base.name == "cuda" and e.attr == "tile":
                return ModuleV("cuda.tile")
            import sys
            mod = sys.modules.get(base.name)      # an imported module's constant (math.pi)
            if mod is not None and hasattr(mod, e.attr):
                return value_of_object(getattr(mod, e.attr), e.attr)
            return ModuleV(f"{base.name}.{e.attr}")
        if isinstance(base, TensorV):
            p = base.param
            if e.attr == "dtype" and p.dtype is not None:
                return DTypeV(p.dtype)
            if e.attr == "ndim" and p.shape:
                return loose_const(len(p.shape))
            if e.attr == "shape" and p.role == "mut":
                return TupleV(tuple(dim_value(d) for d in p.shape))
            if e.attr in ("shape", "dtype", "ndim"):
                return None
            return BoundV(base, e.attr)
        if isinstance(base, RawMemV):
            return BoundV(base, e.attr)
        if isinstance(base, TileV) and not base.loose:
            if e.attr == "dtype" and base.dtype is not None:
                return DTypeV(base.dtype)
            if e.attr == "shape" and base.shape is not None:
                return TupleV(tuple(dim_value(d) for d in base.shape))
            if e.attr == "ndim" and base.shape is not None:
                return loose_const(len(base.shape))
            if e.attr in ("shape", "dtype", "ndim"):
                return None
            return BoundV(base, e.attr)
        return None

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
                if self.helper_stack:      # a helper calling the kernel back: TL037
                    info.problem = f"it calls the kernel `{fval.name}` back (recursion)"
                else:
                    info.kind = "unknown"  # the kernel calling itself: TL032
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
            info.problem = h.problem or "its source cannot be read"
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


# --- helpers ---------------------------------------------------------------------------------

def _callee_text(func: ast.AST) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _mut_names(v) -> set[str]:
    """The ``Mut`` outputs a value holds (itself, or items of a tuple)."""
    if isinstance(v, TensorV) and v.param.role == "mut":
        return {v.param.name}
    if isinstance(v, TupleV):
        return set().union(*(_mut_names(x) for x in v.items)) if v.items else set()
    return set()


def _assigned_names(fn: ast.FunctionDef) -> set[str]:
    out = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
    return out


