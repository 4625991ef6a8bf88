"""Helpers the kernel's namespace gives (an earlier notebook cell, the module a ``@cl.kernel``
lives in, a file compat's loader ran) are followed through their source, like helpers written
next to the kernel; ``@ct.function`` helpers included."""
from __future__ import annotations

import importlib.util

import pytest

from cutile_lab.checking import check_source

HELPERS = '''import cuda.tile as ct


def put(dst, t):
    dst.store(t)


@ct.function
def spread(y, idx, t):
    ct.scatter(y, idx, t)


def own(y, t):
    ct.store(y, index=(ct.bid(0),), tile=t)
'''


@pytest.fixture
def helpers(tmp_path):
    pytest.importorskip("cuda.tile")
    path = tmp_path / "lab_helpers_for_test.py"
    path.write_text(HELPERS)
    spec = importlib.util.spec_from_file_location("lab_helpers_for_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return vars(mod)


def test_a_namespace_helper_storing_into_a_shared_input_is_caught(helpers):
    text = '''def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = load_tile_like(x, z)
    put(x, t)
    z.store(t)
'''
    assert [d.code for d in check_source(text, "<k>", globals_=helpers)] == ["TL010"]
    ok = text.replace("put(x, t)\n    z.store(t)", "put(z, t)")
    assert check_source(ok, "<k>", globals_=helpers) == []


def test_a_ct_function_helper_is_followed_in_a_plain_kernel(helpers):
    text = '''import cuda.tile as ct


@ct.kernel
def k(x, y, B: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0),), shape=(B,))
    {call}
'''
    flagged = check_source(text.format(call="spread(y, ct.arange(B, dtype=ct.int32), t)"),
                           "<k>", globals_=helpers)
    assert [d.code for d in flagged] == ["TL060"] and "scatter" in flagged[0].message
    assert check_source(text.format(call="own(y, t)"), "<k>", globals_=helpers) == []
