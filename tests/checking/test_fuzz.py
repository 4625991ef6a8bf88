"""Fuzzing the checker: random text and mutations of the corpus (deleted, duplicated and swapped
lines, renamed names, re-indented lines, inserted snippets of unsupported, aliased or wrong code)
go through ``parse_kernels`` + ``check_kernel``. The result is always diagnostics, or a
``LanguageError`` for text that is not a kernel at all: never an internal exception, and no rule
ever fails internally (``TL099``). Rendering every result must work too, and a mutant the
checker accepts lowers to valid Python (never a traceback from generated code).

Over 30,000 inputs in all: hypothesis drives ~700 of them (shrinking a failure to a small
example), and seeded source mutation (``SEEDS`` x ``PER_SEED``, plain ``random``: cheap, and the
same inputs on every run) the rest; split over several test ids so that a failure names its seed.
"""
from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ast

from cutile_lab.checking import check_kernel, check_source
from cutile_lab.compiling.lowering import lower
from cutile_lab.diagnostics import Diagnostic
from cutile_lab.diagnostics.render import render_html, render_text, to_json
from cutile_lab.errors import LanguageError
from cutile_lab.language.frontend import KernelSource, parse_kernels

from tests.checking.corpus import BAD, GOOD

# random text makes Python's parser warn (`1f`, invalid escapes): that is not what is tested
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")

SOURCES = sorted(GOOD.values()) + sorted(b.text for b in BAD)

NAMES = ["z", "x", "y", "t", "B", "BM", "BN", "BK", "N", "k", "acc", "out", "alpha", "i",
         "load_tile_like", "load_tile", "tile_id", "num_tiles", "store", "load", "unsafe",
         "f16", "f32", "i32", "sum", "max", "min", "mma", "full", "zeros", "exp", "where",
         "reshape", "transpose", "permute", "astype", "ct", "cl", "range", "print", "Mut",
         "Tensor", "Const", "None", "True", "len", "bid", "atomic_add", "unknown_name"]

SNIPPETS = [
    "while t:", "try:", "except Exception:", "finally:", "return t", "yield t", "del t",
    "x.store(t)", "z.store(t)", "z.store(3.0)", "z.store(t, t)", "z.load(t)", "x.load()",
    "with unsafe():", "with open('f'):", "for i in range(3):", "for i in (1, 2):",
    "for i in range(2):\n        z.store(t)", "if t:", "elif t:", "else:", "global q",
    "nonlocal q", "import math", "from math import pi", "t = t @ t", "a, *b = t",
    "f = lambda: 0", "z = t", "store(z, (0,), t)", "atomic_add(x, (0,), t)", "print(t)",
    "print(f'{t}')", "def f(): pass", "class C: pass", "return", "pass", "break", "continue",
    "t = load_tile(x, (0,), (B, B))", "t = max(t, t)", "t = sum(t, axis=5)",
    "t = sum(t, axis=(0, 1), keepdims=True)", "t = reshape(t, (-1,))",
    "t = transpose(t, 0, 7)", "t = permute(t, (1, 1))", "t = t.astype(z.dtype)",
    "t = cat((t, t), 0)", "t = load_tile_like(t, t)", "t = load_tile_like(x)",
    "t = load_tile(z, (0,), (B,))", "t = x.shape[0] + x.dtype", "t = z.shape[5]",
    "t = where(t, t)", "t = mma(t)", "t = mma(t, t, acc=t)", "t = full((B,), 0)",
    "t = full(B, 0.0, f16)", "t = arange(B)", "t = expand_dims(t, 9)", "t = t.reshape()",
    "t = broadcast_to(t, 3)", "t = ct.store(x, t)", "t = cl.f32", "t = t[:, None]",
    "t: f32 = 0", "t += 1", "t //= 0", "t = 1 // 0", "t = 2 ** 1000", "t = -t",
    "t = not t", "t = t if t else t", "t = (yield)", "assert t", "t = [1, 2]",
    "t = {1: 2}", "t = {1}", "t = [i for i in range(3)]", "t = (i for i in range(3))",
    "t = (q := 3)", "raise ValueError()", "z.store(load_tile_like(x, z).astype(f64))",
    "with unsafe():\n        with unsafe():\n            pass", "k(z, x)", "t = z.stor(t)",
    "t = ct.bid(0)", "t = ct.nonexistent(t)", "t.sum(axis=0)", "t = int(t) + float(t)",
    "t = f(*t)", "t = f(**t)", "async def g(): pass", "t = await t",
    # values flowing through names: aliases, bound methods, tuples, helpers, renamed imports
    "w = z", "w.store(t)", "w = x", "w.store(load_tile_like(x, z))", "s = z.store", "s(t)",
    "s = x.store", "a, b = z, x", "b.store(t)", "a.store(t)", "p = (z, x)", "p[0].store(t)",
    "p[1].store(t)", "w = z if t else x", "z = w", "helper(z, t)", "helper(x, t)",
    "t = helper(t)", "def helper(d, t):\n    d.store(t)", "import cuda.tile as ctile",
    "ctile.store(z, (tile_id(0),), t)", "from cuda.tile import store as put",
    "put(z, (0,), t)", "r = z.get_raw_memory()", "r.store_offset(0, t)",
    "t = load_tile(x, (tile_id(1),), (B,))", "t = load_tile(x, (tile_id(k),), (2 * B,))",
    "t = reshape(t, (B // 2, 2))", "t = full((B * 2,), 0.0, dtype=f32)",
    "z.store(t.astype(i32))", "z.store(t.astype(f16))", "ConstInt = ct.Constant[int]",
    "row = ct.bid(0)", "ct.store(z, index=(row, 0), tile=t)", "idx = (ct.bid(0),)",
    "ct.store(x, index=idx, tile=t)", "ct.scatter(x, t, t)", "@kernel(**{})",
    "@ct.function", "@ct.kernel", "def k(z: Mut[Tensor[f32, \"for\"]]):",
    "for i in range(ct.bid(0), 8, ct.num_blocks(0)):",
]


class _Rng:
    """The draws a mutation needs, from hypothesis (``data``) or from a seeded ``random``."""

    def __init__(self, data=None, rng: random.Random | None = None):
        self.data, self.rng = data, rng

    def integers(self, lo: int, hi: int) -> int:
        if self.rng is not None:
            return self.rng.randint(lo, hi)
        return self.data.draw(st.integers(lo, hi))

    def sampled_from(self, seq):
        if self.rng is not None:
            return self.rng.choice(seq)
        return self.data.draw(st.sampled_from(seq))


def _mutate(lines: list[str], op: str, r: _Rng) -> list[str]:
    if not lines:
        return lines
    i = r.integers(0, len(lines) - 1)
    if op == "delete":
        return lines[:i] + lines[i + 1:]
    if op == "duplicate":
        return lines[:i + 1] + [lines[i]] + lines[i + 1:]
    if op == "swap":
        j = r.integers(0, len(lines) - 1)
        lines = list(lines)
        lines[i], lines[j] = lines[j], lines[i]
        return lines
    if op == "rename":
        words = re.findall(r"[A-Za-z_]\w*", lines[i])
        if not words:
            return lines
        old = r.sampled_from(words)
        new = r.sampled_from(NAMES)
        lines = list(lines)
        lines[i] = re.sub(rf"\b{re.escape(old)}\b", new, lines[i], count=1)
        return lines
    if op == "indent":
        delta = r.sampled_from([-4, 4, 8, -1, 1])
        lines = list(lines)
        lines[i] = " " * max(0, len(lines[i]) - len(lines[i].lstrip()) + delta) + \
            lines[i].lstrip()
        return lines
    snippet = r.sampled_from(SNIPPETS)
    indent = r.sampled_from(["", "    ", "        "])
    return lines[:i] + [indent + snippet] + lines[i:]


def _check_text(text: str) -> None:
    source = KernelSource(text, "<fuzz>")
    try:
        kdefs = parse_kernels(source, all_functions=True)
    except LanguageError:
        return
    for k in kdefs:
        diags = check_kernel(k)
        assert all(isinstance(d, Diagnostic) for d in diags)
        broken = [d for d in diags if d.code == "TL099"]
        assert not broken, broken[0].message
        lookup = source.line
        render_text(diags, lambda f, n: lookup(n))
        render_html(diags, lambda f, n: lookup(n))
        to_json(diags)
        if k.kind == "tile" and not any(d.is_error for d in diags):
            ast.parse(lower(k).text)       # what the checker accepts lowers to valid Python


def _mutant(r: _Rng) -> str:
    lines = r.sampled_from(SOURCES).splitlines()
    for _ in range(r.integers(1, 4)):
        op = r.sampled_from(["delete", "duplicate", "swap", "rename", "indent", "insert",
                             "insert"])
        lines = _mutate(lines, op, r)
    return "\n".join(lines) + "\n"


FUZZ = settings(max_examples=400, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FUZZ
@given(st.data())
def test_mutated_kernels_never_crash_the_checker(data):
    _check_text(_mutant(_Rng(data=data)))


SEEDS = 12
PER_SEED = 2500


def test_enough_inputs_are_fuzzed():
    hypothesis_examples = FUZZ.max_examples + 150 + 150
    assert SEEDS * PER_SEED + hypothesis_examples >= 30_000


@pytest.mark.parametrize("seed", range(SEEDS))
def test_seeded_mutants_never_crash_the_checker(seed):
    r = _Rng(rng=random.Random(seed))
    for i in range(PER_SEED):
        text = _mutant(r)
        try:
            _check_text(text)
        except Exception as e:
            raise AssertionError(f"seed {seed}, mutant {i}:\n{text}") from e


@settings(max_examples=150, deadline=None, database=None)
@given(st.text(max_size=300))
def test_random_text_never_crashes(text):
    _check_text(text)
    diags = check_source(text, "<fuzz-text>")
    assert all(isinstance(d, Diagnostic) for d in diags)


TOKENS = list("defz:xt(),=[]\"'.+*@ _BMNf1623") + [
    "Mut", "Tensor", "f32", "load_tile_like", "store", "with unsafe():", "for i in range(",
    "\n    ", "\n        ", " if ", "else", "sum(", "z.", "x."]
PYISH = st.lists(st.sampled_from(TOKENS), max_size=40).map("".join)


@settings(max_examples=150, deadline=None, database=None)
@given(PYISH)
def test_python_ish_text_never_crashes(body):
    _check_text('def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n    ' + body + "\n")
