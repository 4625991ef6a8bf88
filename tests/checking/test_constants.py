"""Constants are recognised by what the annotation *is*, not by its spelling: ``ct.Constant[int]``
and any alias of it (``ConstInt = ct.Constant[int]``, defined in the file or given by the
namespace), and the lab's ``Const[int]``."""
from __future__ import annotations

import pytest

from cutile_lab.checking import check_source
from cutile_lab.language.constants import is_constant_annotation
from cutile_lab.language.types import Const

ct = pytest.importorskip("cuda.tile")

# Two stores into `y`: race-free only if their tiles provably have one shape, which needs `B`
# to be a compile-time constant (a runtime value would make the shape unknown).
TWO_STORES = '''import cuda.tile as ct


@ct.kernel
def k(x, y, B: {ann}):
    t = ct.load(x, index=(ct.bid(0),), shape=(B,))
    ct.store(y, index=(ct.bid(0),), tile=t)
    ct.store(y, index=(ct.bid(0),), tile=t * 2.0)
'''


def test_is_constant_annotation_by_value():
    ConstInt = ct.Constant[int]
    assert is_constant_annotation(ConstInt)
    assert is_constant_annotation(ct.Constant[float]) and is_constant_annotation(ct.Constant)
    assert is_constant_annotation(Const[int])
    for other in (int, float, None, "Constant", ct.float32, 3):
        assert not is_constant_annotation(other)


def test_an_alias_defined_in_the_file_is_a_constant():
    text = "ConstInt = ct.Constant[int]\n" + TWO_STORES.format(ann="ConstInt")
    assert check_source(text, "<alias>") == []


def test_an_alias_given_by_the_namespace_is_a_constant():
    text = TWO_STORES.format(ann="Whatever")
    assert check_source(text, "<ns>", globals_={"Whatever": ct.Constant[int]}) == []


def test_an_annotation_that_is_not_a_constant_proves_nothing():
    text = TWO_STORES.format(ann="int")
    assert [d.code for d in check_source(text, "<int>")] == ["TL060"]
    text = TWO_STORES.format(ann="NotConst")
    assert [d.code for d in check_source(text, "<ns>", globals_={"NotConst": int})] == ["TL060"]
