"""Tile puzzles: statements, NumPy references and checks for ``07-puzzles.ipynb``.

Each puzzle asks for one tile kernel. ``check_<name>(kernel)`` (or ``check("<name>", kernel)``)
launches the kernel on fresh random inputs that the notebook never showed -- two problem sizes,
one of them with ragged edges -- on the CPU simulator, and on the GPU too when there is one, and
says what is wrong in plain words:

* the kernel is not a tile kernel, or its signature does not fit the puzzle;
* the launch was refused (the lab's diagnostic is quoted);
* the kernel crashed in the simulator (at your line);
* a race: two tiles wrote the same element (with the ownership picture);
* an access out of bounds;
* elements that no tile wrote;
* wrong values: the first wrong element, expected versus got, and how many are wrong.

The checks never raise: whatever happens inside the lab becomes a message. The result is a
``CheckResult`` (true when the kernel is right); the last one of each puzzle is kept in
``RESULTS``. Inputs come from a generator seeded per puzzle, so a check says the same thing
every time it runs on the same kernel; ``seed=None`` draws new inputs each time.
"""
from __future__ import annotations

import base64
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

__all__ = ["PUZZLES", "RESULTS", "CheckResult", "check", "reference_source", "statement"]


# --- the puzzles ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Param:
    """One parameter the puzzle's kernel must declare, in order."""

    name: str
    role: str            # "mut" | "shared" | "scalar"
    dtype: str           # the tile-language dtype: f32, f16
    ndim: int = 0


@dataclass
class Case:
    """One launch of a check: inputs in parameter order (after the output), the output's shape
    and dtype, the partition's tile shape, and keywords for the launch (const generics)."""

    inputs: list
    out_shape: tuple
    out_dtype: str
    tile: tuple
    consts: dict = field(default_factory=dict)

    def describe(self, name: str, params) -> str:
        """``copy(z.partition((64,)), x) with x: f32[1000], z: f32[1000]``."""
        out, ins = params[0].name, params[1:]
        args, shapes = [f"{out}.partition({self.tile})"], []
        for p, a in zip(ins, self.inputs):
            if isinstance(a, np.ndarray):
                args.append(p.name)
                shapes.append(f"{p.name}: {_dt(a.dtype)}{list(a.shape)}")
            else:
                args.append(repr(a))
        shapes.append(f"{out}: {self.out_dtype}{list(self.out_shape)}")
        return f"{name}({', '.join(args)}) with {', '.join(shapes)}"


def _dt(np_dtype) -> str:
    return {"float32": "f32", "float16": "f16", "float64": "f64"}.get(str(np_dtype),
                                                                    str(np_dtype))


@dataclass
class Puzzle:
    name: str
    title: str
    params: tuple[Param, ...]
    cases: Callable[[np.random.Generator], list[Case]]
    reference: Callable
    rtol: float = 1e-5
    atol: float = 1e-5
    hints: tuple[str, ...] = ()


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# NumPy references: what each kernel must compute, from the same inputs.

def ref_copy(x):
    return x.copy()


def ref_scale(x, alpha):
    return x * np.float32(alpha)


def ref_add_row(x, row):
    return x + row[None, :]


def ref_transpose2d(x):
    return x.T.copy()


def ref_row_sum(x):
    return x.sum(axis=1, keepdims=True)


def ref_row_max(x):
    return x.max(axis=1, keepdims=True)


def ref_causal_mask(x):
    return np.tril(x)          # keep x[i, j] where j <= i, zero above the diagonal


def ref_log_softmax(x):
    s = x - x.max(axis=1, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=1, keepdims=True))


def ref_matmul(a, b):
    return a.astype(np.float32) @ b.astype(np.float32)


def _cases_copy(rng):
    return [Case([_f32(rng, 1000)], (1000,), "f32", (64,)),
            Case([_f32(rng, 4096)], (4096,), "f32", (256,))]


def _cases_scale(rng):
    return [Case([_f32(rng, 1000), 2.5], (1000,), "f32", (64,)),
            Case([_f32(rng, 3000), -0.75], (3000,), "f32", (512,))]


def _cases_add_row(rng):
    return [Case([_f32(rng, 100, 200), _f32(rng, 200)], (100, 200), "f32", (32, 64)),
            Case([_f32(rng, 64, 256), _f32(rng, 256)], (64, 256), "f32", (16, 128))]


def _cases_transpose2d(rng):
    return [Case([_f32(rng, 100, 200)], (200, 100), "f32", (32, 64)),
            Case([_f32(rng, 128, 64)], (64, 128), "f32", (16, 32))]


def _cases_row_sum(rng):
    return [Case([_f32(rng, 100, 100)], (100, 1), "f32", (16, 1)),
            Case([_f32(rng, 64, 128)], (64, 1), "f32", (8, 1))]


def _negative(rng, *shape):
    # every value below zero: a zero that sneaks into a max shows up at once
    return (-np.abs(rng.standard_normal(shape)) - 0.25).astype(np.float32)


def _cases_row_max(rng):
    return [Case([_negative(rng, 100, 200)], (100, 1), "f32", (16, 1)),
            Case([_f32(rng, 48, 256)], (48, 1), "f32", (16, 1))]


def _cases_causal_mask(rng):
    return [Case([_f32(rng, 96, 96)], (96, 96), "f32", (32, 32)),
            Case([_f32(rng, 100, 100)], (100, 100), "f32", (16, 16))]


def _cases_log_softmax(rng):
    return [Case([_f32(rng, 100, 200)], (100, 200), "f32", (16, 256)),
            Case([_f32(rng, 37, 64) * 4], (37, 64), "f32", (8, 64))]


def _cases_matmul(rng):
    def mat(*shape):
        return rng.standard_normal(shape).astype(np.float16)
    return [Case([mat(100, 72), mat(72, 80)], (100, 80), "f32", (32, 32)),
            Case([mat(64, 128), mat(128, 96)], (64, 96), "f32", (32, 32))]


PUZZLES: dict[str, Puzzle] = {p.name: p for p in [
    Puzzle("copy", "Copy a vector",
           (Param("z", "mut", "f32", 1), Param("x", "shared", "f32", 1)),
           _cases_copy, ref_copy, 0, 0),
    Puzzle("scale", "Scale by a scalar",
           (Param("z", "mut", "f32", 1), Param("x", "shared", "f32", 1),
            Param("alpha", "scalar", "f32")),
           _cases_scale, ref_scale),
    Puzzle("add_row", "Add a row vector to every row (broadcast)",
           (Param("z", "mut", "f32", 2), Param("x", "shared", "f32", 2),
            Param("row", "shared", "f32", 1)),
           _cases_add_row, ref_add_row),
    Puzzle("transpose2d", "Transpose a matrix",
           (Param("z", "mut", "f32", 2), Param("x", "shared", "f32", 2)),
           _cases_transpose2d, ref_transpose2d, 0, 0),
    Puzzle("row_sum", "Sum every row",
           (Param("z", "mut", "f32", 2), Param("x", "shared", "f32", 2)),
           _cases_row_sum, ref_row_sum, 1e-5, 1e-4),
    Puzzle("row_max", "Maximum of every row (rows shorter than the tile)",
           (Param("z", "mut", "f32", 2), Param("x", "shared", "f32", 2)),
           _cases_row_max, ref_row_max, 0, 0),
    Puzzle("causal_mask", "Causal mask: keep the lower triangle",
           (Param("z", "mut", "f32", 2), Param("x", "shared", "f32", 2)),
           _cases_causal_mask, ref_causal_mask, 0, 0),
    Puzzle("log_softmax", "Row log-softmax, fused",
           (Param("z", "mut", "f32", 2), Param("x", "shared", "f32", 2)),
           _cases_log_softmax, ref_log_softmax, 1e-5, 1e-5),
    Puzzle("matmul", "Matrix product on tensor cores (mma)",
           (Param("c", "mut", "f32", 2), Param("a", "shared", "f16", 2),
            Param("b", "shared", "f16", 2)),
           _cases_matmul, ref_matmul, 1e-3, 1e-2),
]}

# The last result of each puzzle's check (for a progress overview and for tests).
RESULTS: dict[str, "CheckResult"] = {}


def reference_source(name: str) -> str:
    """The NumPy reference of a puzzle, as source text."""
    return inspect.getsource(PUZZLES[name].reference)


def statement(name: str) -> str:
    """How the check launches the kernel of a puzzle (from its first case)."""
    p = PUZZLES[name]
    case = p.cases(np.random.default_rng(0))[0]
    return case.describe(name, p.params)


# --- the result ------------------------------------------------------------------------------

@dataclass
class CheckResult:
    """What a check found. True when the kernel is right; displays as plain text (and the
    ownership picture when there was a race or unwritten elements)."""

    puzzle: str
    ok: bool
    kind: str                    # ok | not_a_kernel | signature | launch | crash | race |
                                 # out_of_bounds | unwritten | mismatch | lab_error
    message: str
    picture: bytes | None = None  # PNG of the ownership map, when it helps

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return self.message

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(self.message)

    def _ipython_display_(self) -> None:
        from IPython.display import publish_display_data
        publish_display_data({"text/plain": self.message})
        if self.picture is not None:
            publish_display_data({"image/png": base64.b64encode(self.picture).decode("ascii"),
                                  "text/plain": f"<ownership map of the output of "
                                                f"`{self.puzzle}`>"})


class _Failed(Exception):
    """A check's finding (raised inside the check, turned into a CheckResult)."""

    def __init__(self, kind: str, lines: list[str], picture: bytes | None = None):
        super().__init__(kind)
        self.kind = kind
        self.lines = lines
        self.picture = picture


# --- checking ----------------------------------------------------------------------------------

def _fmt(v) -> str:
    v = float(v)
    if np.isnan(v):
        return "nan"
    if v == int(v) and abs(v) < 1e6:
        return f"{v:.1f}"
    return f"{v:.6g}"


def _index(ix) -> str:
    return "[" + ", ".join(str(int(i)) for i in ix) + "]"


def _signature_of(kernel) -> str:
    parts = []
    for p in kernel.definition.params:
        if p.role == "mut":
            parts.append(f"{p.name}: Mut[Tensor[{p.dtype}, ...]]")
        elif p.role == "shared":
            parts.append(f"{p.name}: Tensor[{p.dtype}, ...]")
        elif p.role == "const":
            parts.append(f"{p.name}: Const[int]")
        else:
            parts.append(f"{p.name}: {p.dtype}")
    return f"{kernel.name}({', '.join(parts)})"


def _expected_signature(puzzle: Puzzle) -> str:
    parts = []
    for p in puzzle.params:
        if p.role == "mut":
            parts.append(f"{p.name}: Mut[Tensor[{p.dtype}, ...]] ({p.ndim}-D output)")
        elif p.role == "shared":
            parts.append(f"{p.name}: Tensor[{p.dtype}, ...] ({p.ndim}-D input)")
        else:
            parts.append(f"{p.name}: {p.dtype} (a number)")
    return f"{puzzle.name}({', '.join(parts)})"


def _check_kernel_object(puzzle: Puzzle, kernel) -> None:
    if kernel is None:
        raise _Failed("not_a_kernel", [
            "there is no kernel to check (None): run the puzzle's %%tilekernel cell first; if "
            "it reported errors, the kernel was not defined"])
    if not hasattr(kernel, "definition") or not hasattr(kernel, "compile"):
        what = type(kernel).__name__
        extra = ""
        if inspect.isfunction(kernel):
            extra = (": it is a plain Python function. Put `%%tilekernel` on the first line of "
                     "its cell, so that the lab checks it and defines it as a tile kernel")
        raise _Failed("not_a_kernel", [f"this is not a tile kernel (a {what}){extra}"])


def _check_signature(puzzle: Puzzle, kernel) -> None:
    params = [p for p in kernel.definition.params
              if not (p.role == "const" and p.default is not None)]
    want = puzzle.params
    problems = []
    if len(params) != len(want):
        problems.append(f"it takes {len(params)} parameter(s) but the puzzle passes "
                        f"{len(want)}")
    else:
        for got, exp in zip(params, want):
            role_words = {"mut": "a `Mut` output", "shared": "a shared input `Tensor`",
                          "scalar": "a scalar", "const": "a `Const[int]`"}
            if got.role != exp.role:
                problems.append(f"`{got.name}` is {role_words.get(got.role, got.role)}, but "
                                f"the puzzle passes {role_words[exp.role]} there")
                continue
            if exp.role in ("mut", "shared"):
                dt = got.dtype.name if got.dtype is not None else "?"
                if dt != exp.dtype:
                    problems.append(f"`{got.name}` is declared with dtype {dt}, but the "
                                    f"puzzle's `{exp.name}` holds {exp.dtype}")
                if len(got.shape) != exp.ndim:
                    problems.append(f"`{got.name}` is declared with {len(got.shape)} "
                                    f"dimension(s), but the puzzle's `{exp.name}` has "
                                    f"{exp.ndim}")
            elif exp.role == "scalar":
                dt = got.dtype.name if got.dtype is not None else "?"
                if dt != exp.dtype:
                    problems.append(f"`{got.name}` is declared {dt}, but the puzzle passes "
                                    f"an {exp.dtype} number")
    if problems:
        raise _Failed("signature", [
            "the kernel's signature does not fit the puzzle: " + "; ".join(problems) + ".",
            f"  expected: {_expected_signature(puzzle)}",
            f"  yours:    {_signature_of(kernel)}"])


class _Backend:
    """Run the body with ``backend`` chosen for new tensors and launches, then restore."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        import cutile_lab as cl
        self._prev = _backend_module()._explicit
        cl.set_backend(self.name)

    def __exit__(self, *exc):
        _backend_module()._explicit = self._prev


def _backend_module():
    # the module (``cutile_lab.runtime.backend`` the attribute is its function of that name)
    import importlib
    return importlib.import_module("cutile_lab.runtime.backend")


def _render(diags) -> str:
    from cutile_lab.checking import render_text
    return render_text(list(diags))


def _indent(text: str, by: str = "    ") -> str:
    return "\n".join(by + line if line else line for line in text.splitlines())


def _launch(kernel, case: Case, backend: str, out_name: str):
    """Launch ``kernel`` on ``case``; return (output as NumPy, the launch op)."""
    import cutile_lab as cl
    from cutile_lab.errors import (CutileLabError, KernelDiagnosticsError, LaunchError,
                                   SimulationError)
    from cutile_lab.runtime.dtypes import numpy_dtype
    from cutile_lab.language.dtypes import dtype_by_name
    np_out = numpy_dtype(dtype_by_name(case.out_dtype))
    from cutile_lab.simulation import on_error, set_on_error
    launch_text = case.describe(kernel.name, _params_as(case, kernel))
    before = on_error()
    # the check reads the simulator's findings from op.sim_result itself (with the picture)
    set_on_error("ignore")
    with _Backend(backend):
        try:
            out = cl.from_numpy(np.zeros(case.out_shape, dtype=np_out)).sync()
            args = [cl.from_numpy(a).sync() if isinstance(a, np.ndarray) else a
                    for a in case.inputs]
            op = kernel(out.partition(case.tile), *args, **case.consts)
            result = op.sync()
        except KernelDiagnosticsError as e:
            errors = [d for d in e.diagnostics if d.is_error]
            raise _Failed("launch", [
                f"the launch {launch_text} was refused:",
                _indent(_render(errors or e.diagnostics))]) from None
        except SimulationError as e:
            where = f" at {e.span}" if e.span else ""
            lines = [f"your kernel failed while running{where}: {e.message}"]
            if e.help:
                lines.append(f"  help: {e.help}")
            raise _Failed("crash", lines) from None
        except LaunchError as e:
            lines = [f"the launch {launch_text} was refused: {e.message}"]
            if e.help:
                lines.append(f"  help: {e.help}")
            raise _Failed("launch", lines) from None
        except CutileLabError as e:
            lines = [f"{type(e).__name__}: {e.message}"]
            if e.help:
                lines.append(f"  help: {e.help}")
            raise _Failed("crash", lines) from None
        finally:
            set_on_error(before)
        z = result[0]
        z = z.unpartition() if hasattr(z, "unpartition") else z
        return z.to_numpy(), op


def _params_as(case: Case, kernel) -> list:
    """The kernel's own parameters, for describing a launch in its names."""
    return [Param(p.name, p.role, "") for p in kernel.definition.params
            if not (p.role == "const" and p.default is not None)][:len(case.inputs) + 1]


_RACE = ("SIM010", "SIM011")
_BOUNDS = ("SIM001", "SIM002", "SIM003", "SIM004", "SIM005")


def _picture(sim, name: str) -> bytes | None:
    try:
        from cutile_lab.performance import figure_png
        fig = sim.ownership_figure(name, width=6.0)
        return figure_png(fig, dpi=80)
    except Exception:
        return None


def _simulator_findings(sim, out_name: str, case: Case, kernel_name: str) -> None:
    diags = list(getattr(sim, "diagnostics", []) or [])
    races = [d for d in diags if d.code in _RACE and d.is_error]
    if races:
        d = races[0]
        kind = "write" if d.code == "SIM010" else "read-write"
        n = int(sim.conflicts[out_name].sum()) if out_name in sim.conflicts else None
        lines = [f"a {kind} race: {d.message}"
                 + (f" ({n} element(s) of `{out_name}` are written by more than one tile)"
                    if n else ""),
                 "  Each element must have exactly one owner. The simulator saw two tiles "
                 "write the same place; on a GPU the result would depend on timing.",
                 _indent(_render([d]))]
        raise _Failed("race", lines, _picture(sim, out_name))
    bounds = [d for d in diags if d.code in _BOUNDS and d.is_error]
    if bounds:
        d = bounds[0]
        raise _Failed("out_of_bounds", [
            f"an access out of bounds: {d.message}",
            "  On a GPU this is undefined behaviour; the simulator caught it.",
            _indent(_render([d]))])
    other = [d for d in diags if d.is_error]
    if other:
        d = other[0]
        raise _Failed("crash", [f"the simulator reported an error: {d.message}",
                                _indent(_render([d]))])
    own = getattr(sim, "ownership", {}).get(out_name)
    if own is not None:
        unwritten = own == -1
        if unwritten.any():
            first = np.argwhere(unwritten)[0]
            raise _Failed("unwritten", [
                f"{int(unwritten.sum())} of {own.size} elements of `{out_name}` were never "
                f"written; the first is {out_name}{_index(first)}.",
                "  Every element of the output belongs to one tile, and that tile must store "
                "it."], _picture(sim, out_name))


def _hints(puzzle: Puzzle, got: np.ndarray, exp: np.ndarray, wrong: np.ndarray,
           case: Case, out_name: str) -> list[str]:
    hints = []
    if np.isnan(got[wrong]).any() and not np.isnan(exp).any():
        hints.append("some results are NaN: an exp or a division of padding values? Check "
                     "what the loads put past the edge of the data.")
    if np.allclose(got[wrong], 0) and np.all(exp[wrong] < 0):
        hints.append("every expected value here is negative and you got 0.0: are padding "
                     "zeros taking part? Loads past the edge of the data pad with zeros unless "
                     "told otherwise (`padding=\"neg_inf\"` for a maximum).")
    elif not np.any(got):
        hints.append(f"the output is all zeros: is the result stored (`{out_name}.store(...)`), "
                     "and is it the result and not a placeholder?")
    if got.shape == exp.shape and got.ndim == 2 and got.shape[0] == got.shape[1] \
            and np.allclose(got, exp.T, rtol=1e-4, atol=1e-4):
        hints.append("the result is the transpose of the expected one.")
    if got.ndim == len(case.tile) and wrong.any():
        # the elements that sit in a last tile that sticks out past the edge
        edge = np.zeros(got.shape, dtype=bool)
        for axis, (n, t) in enumerate(zip(got.shape, case.tile)):
            if n % t:
                sl = [slice(None)] * got.ndim
                sl[axis] = slice(n - n % t, n)
                edge[tuple(sl)] = True
        if edge.any() and not edge.all() and not (wrong & ~edge).any():
            hints.append("all wrong elements are in the last, ragged tiles: what do your "
                         "loads read past the edge of the data?")
    with np.errstate(all="ignore"):
        ratio = got[wrong] / exp[wrong]
    if ratio.size > 1 and np.all(np.isfinite(ratio)) and np.allclose(ratio, ratio[0]) \
            and not np.isclose(ratio[0], 1.0) and not np.isclose(ratio[0], 0.0):
        hints.append(f"every wrong value is {_fmt(ratio[0])} times the expected one.")
    return hints


def _compare(puzzle: Puzzle, got: np.ndarray, case: Case, out_name: str, where: str) -> None:
    exp = np.asarray(puzzle.reference(*[np.asarray(a) if isinstance(a, np.ndarray) else a
                                        for a in case.inputs]))
    if got.shape != exp.shape:
        raise _Failed("mismatch", [f"{where}: the output has shape {got.shape}, expected "
                                   f"{exp.shape}."])
    got64 = got.astype(np.float64)
    exp64 = exp.astype(np.float64)
    close = np.isclose(got64, exp64, rtol=puzzle.rtol, atol=puzzle.atol, equal_nan=True)
    if close.all():
        return
    wrong = ~close
    first = np.argwhere(wrong)[0]
    ix = tuple(first)
    n_wrong = int(wrong.sum())
    lines = [f"{where}: wrong values. {n_wrong} of {got.size} elements differ; the first is "
             f"{out_name}{_index(first)}: expected {_fmt(exp64[ix])}, got {_fmt(got64[ix])}.",
             f"  launch: {case.describe(puzzle.name, puzzle.params)}"]
    lines += [f"  hint: {h}" for h in _hints(puzzle, got64, exp64, wrong, case, out_name)]
    raise _Failed("mismatch", lines)


def _gpu_present() -> bool:
    try:
        import cutile_lab as cl
        return bool(cl.gpu_available())
    except Exception:
        return False


def check(name: str, kernel, *, seed: int | None = 0, gpu: bool | None = None) -> CheckResult:
    """Check ``kernel`` against puzzle ``name``: on the simulator, then on the GPU when there is
    one (``gpu=False`` skips it). Never raises: problems come back as a ``CheckResult``."""
    puzzle = PUZZLES[name]
    if seed is not None:
        seed = seed + 1000 * list(PUZZLES).index(name)
    rng = np.random.default_rng(seed)
    use_gpu = _gpu_present() if gpu is None else bool(gpu)
    try:
        _check_kernel_object(puzzle, kernel)
        _check_signature(puzzle, kernel)
        out_name = kernel.definition.outputs[0].name
        cases = puzzle.cases(rng)
        # races, out-of-bounds accesses and crashes on any input come first: wrong values
        # are often only their consequence
        outputs = []
        for case in cases:
            got, op = _launch(kernel, case, "sim", out_name)
            sim = getattr(op, "sim_result", None)
            if sim is not None:
                _simulator_findings(sim, out_name, case, kernel.name)
            outputs.append(got)
        for case, got in zip(cases, outputs):
            _compare(puzzle, got, case, out_name, "on the simulator")
        if use_gpu:
            for case in cases:
                got, _ = _launch(kernel, case, "gpu", out_name)
                _compare(puzzle, got, case, out_name, "on the GPU")
        sizes = " and ".join("x".join(map(str, c.out_shape)) for c in cases)
        where = "the simulator and the GPU" if use_gpu else "the simulator"
        result = CheckResult(name, True, "ok",
                             f"✓ {name}: correct on {len(cases)} random inputs (outputs of "
                             f"{sizes}) on {where}: no races, nothing out of bounds.")
    except _Failed as f:
        result = CheckResult(name, False, f.kind, f"✗ {name}: " + "\n".join(f.lines),
                             f.picture)
    except Exception as e:     # a bug in the lab: say so, never a traceback from inside it
        result = CheckResult(name, False, "lab_error",
                             f"✗ {name}: the lab itself failed while checking your kernel "
                             f"({type(e).__name__}: {e}). This is most likely a bug in "
                             "cutile_lab, not in your kernel.")
    RESULTS[name] = result
    return result


def _make_check(name: str):
    def check_one(kernel, *, seed: int | None = 0, gpu: bool | None = None) -> CheckResult:
        return check(name, kernel, seed=seed, gpu=gpu)
    check_one.__name__ = f"check_{name}"
    check_one.__doc__ = (f"Check a kernel for the puzzle {PUZZLES[name].title!r}: "
                         f"{statement(name)}.")
    return check_one


for _name in PUZZLES:
    globals()[f"check_{_name}"] = _make_check(_name)
    __all__.append(f"check_{_name}")


def progress() -> str:
    """One line per puzzle: solved, failed (and why) or not tried yet."""
    lines = []
    for name, p in PUZZLES.items():
        r = RESULTS.get(name)
        mark = "·" if r is None else ("✓" if r.ok else "✗")
        state = "not checked yet" if r is None else ("solved" if r.ok else r.kind)
        lines.append(f"{mark} {name:<12} {p.title} — {state}")
    return "\n".join(lines)


__all__.append("progress")
