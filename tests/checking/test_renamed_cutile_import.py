"""A plain cuTile kernel under a renamed import (``import cuda.tile as ctile``) is analysed as
plain cuTile, like one under ``ct``: its racy store is flagged at its line, not mistaken for a
tile-language kernel with untyped parameters."""
from cutile_lab.checking import check_source

SRC = '''import cuda.tile as {alias}
ConstInt = {alias}.Constant[int]

@{alias}.kernel
def k(x, y, T: ConstInt):
    i = {alias}.bid(0)
    {alias}.store(y, index=({index},), tile={alias}.load(x, index=(i,), shape=(T,)))
'''


def _codes(alias, index):
    return [(d.code, d.span.line) for d in check_source(SRC.format(alias=alias, index=index),
                                                         "k.py")]


def test_a_renamed_import_is_plain_cutile():
    assert _codes("ctile", "i + 1") == _codes("ct", "i + 1") == [("TL060", 7)]
    assert _codes("ctile", "i") == []


def test_from_cuda_import_tile():
    src = SRC.format(alias="tile", index="i + 1").replace("import cuda.tile as tile",
                                                          "from cuda import tile")
    assert [(d.code, d.span.line) for d in check_source(src, "k.py")] == [("TL060", 7)]
