"""The frontend reads kernels from files and cells without evaluating them."""
import pytest

import cutile_lab as cl
from cutile_lab.language import KernelSource, parse_kernels
from cutile_lab.language.types import parse_shape

CELL = '''
def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[bf16, "?"],
        alpha: f32, BK: Const[int] = 64):
    z.store(load_tile_like(x, z))

def helper(n):
    return n
'''


def test_cell_kernels_and_their_parameters():
    [k] = parse_kernels(KernelSource(CELL, "<cell-1>"), all_functions=True)
    assert k.name == "add" and k.kind == "tile"
    roles = {p.name: (p.role, str(p.dtype), p.shape) for p in k.params}
    assert roles == {"z": ("mut", "f32", ("B",)), "x": ("shared", "f32", (None,)),
                     "y": ("shared", "bf16", (None,)), "alpha": ("scalar", "f32", ()),
                     "BK": ("const", "None", ())}
    assert k.const_generics == ["B", "BK"]
    assert k.param("BK").default == 64
    assert k.param("y").span.line == 2 and k.param("alpha").span.line == 3
    assert not k.diagnostics


@pytest.mark.parametrize("annotation,message", [
    ('z: Mut[Tensor[f33, "B"]]', "unknown dtype `f33`"),
    ('z: Mut[Tensor[f32, "?"]]', "tile shape of a `Mut` output must be known"),
    ('z: Mut[f32]', "must wrap a `Tensor"),
    ('z: Tensor[f32]', 'write `Tensor[dtype, "shape"]`'),
    ('z', "has no type"),
    ('z: list', "is not a tile-language type"),
    ('z: Tensor[f32, "B+1"]', "bad shape"),
])
def test_bad_signatures_are_diagnostics_at_the_annotation(annotation, message):
    src = f"def k({annotation}, w: Mut[Tensor[f32, \"B\"]]):\n    pass\n"
    [k] = parse_kernels(KernelSource(src, "<c>"), all_functions=True) or [None]
    if k is None:   # no Tensor/Mut annotation at all: not a kernel
        return
    [d] = [d for d in k.diagnostics if d.code == "TL001"]
    assert message in d.message
    assert d.span.line == 1 and d.help


def test_shape_name_clashing_with_a_parameter():
    src = 'def k(z: Mut[Tensor[f32, "x"]], x: Tensor[f32, "?"]):\n    pass\n'
    [k] = parse_kernels(KernelSource(src, "<c>"), all_functions=True)
    assert [d.code for d in k.diagnostics] == ["TL003"]


def test_syntax_error_is_a_language_error_at_the_users_line():
    with pytest.raises(cl.LanguageError) as e:
        parse_kernels(KernelSource("def k(:\n  pass\n", "<cell-2>", line_offset=10))
    assert e.value.span.line == 11 and e.value.span.filename == "<cell-2>"


def test_plain_cutile_kernels_are_recognised():
    src = ("import cuda.tile as ct\n@ct.kernel\ndef k(a, b, B: ct.Constant[int]):\n"
           "    ct.store(a, index=(ct.bid(0),), tile=ct.load(b, index=(ct.bid(0),), shape=(B,)))\n")
    [k] = parse_kernels(KernelSource(src, "f.py"))
    assert k.kind == "cutile" and [p.name for p in k.params] == ["a", "b", "B"]


def test_parse_shape_forms():
    assert parse_shape("BM, BN") == ("BM", "BN")
    assert parse_shape("?") == (None,)
    assert parse_shape((128, "B", -1)) == (128, "B", None)
    assert parse_shape("1, N") == (1, "N")


def test_decorated_file_kernel_has_file_positions():
    from tests.compiling import example_kernels as ek
    k = ek.vector_add
    assert k.source.filename.endswith("example_kernels.py")
    assert k.definition.span.line > 1
    assert k.definition.node.name == "vector_add"
    assert "load_tile_like" in k.source.line(k.definition.node.body[0].lineno +
                                            k.source.line_offset)


def test_kernels_are_launched_not_called_directly_on_host_stubs():
    from cutile_lab.lang import load_tile_like, unsafe
    with pytest.raises(RuntimeError, match="inside a tile kernel"):
        load_tile_like(1, 2)
    with pytest.raises(RuntimeError, match="inside a tile kernel"):
        with unsafe():
            pass


@pytest.mark.parametrize("text,says", [(None, "takes the source text, not NoneType"),
                                       (42, "takes the source text, not int"),
                                       (b"\xffdef", "bytes that are not UTF-8 text")])
def test_kernels_from_source_of_something_that_is_not_text(text, says):
    """Was AttributeError ('NoneType' has no 'splitlines') inside the frontend, or bytes read
    as a source with no kernel."""
    from cutile_lab.errors import LanguageError
    with pytest.raises(LanguageError, match=says) as e:
        cl.kernels_from_source(text)
    assert e.value.span.filename == __file__ and e.value.help


def test_kernels_from_source_of_utf8_bytes_is_its_text():
    src = 'def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n    z.store(load_tile_like(x, z))\n'
    assert list(cl.kernels_from_source(src.encode())) == ["add"]
