"""The compile pipeline end to end on a CPU-only machine: tile language -> Tile IR -> cubin."""
import re

import pytest

import cutile_lab as cl
from cutile_lab.compiling.cubin import cubin_arch, is_nvidia_elf
from tests.compiling import example_kernels as ek

CASES = [
    (ek.vector_add, {"B": 128}, ["load_view_tko", "addf", "store_view_tko"]),
    (ek.add_2d, {"BM": 32, "BN": 64}, ["load_view_tko", "addf", "store_view_tko"]),
    (ek.row_softmax, {"N": 256}, ["reduce", "exp", "divf", "store_view_tko"]),
    (ek.gemm, {"BM": 64, "BN": 64, "BK": 32}, ["for ", "mmaf", "load_view_tko",
                                               "store_view_tko"]),
]


@pytest.mark.parametrize("arch", ["sm_90", "sm_100"])
@pytest.mark.parametrize("kernel,consts,ops", CASES, ids=[c[0].name for c in CASES])
def test_compiles_to_tileir_and_cubin(kernel, consts, ops, arch):
    compiled = kernel.compile(arch, **consts)
    for op in ops:
        assert op in compiled.tileir, f"{op!r} not in the Tile IR of {kernel.name}"
    assert compiled.tileir.lstrip().startswith("entry @")
    assert is_nvidia_elf(compiled.cubin)
    assert cubin_arch(compiled.cubin) == arch
    assert compiled.symbol.startswith(kernel.name)
    assert compiled.max_threads_per_block and compiled.max_threads_per_block % 32 == 0
    assert compiled.resources["registers"] > 0
    assert compiled.cache == "miss"
    for stage in ("check", "lower", "bytecode", "disasm", "tileiras", "total"):
        assert compiled.timings[stage] >= 0


def test_tileir_lines_map_to_the_users_source_lines():
    compiled = ek.vector_add.compile("sm_90", B=128)
    src_lines = ek.vector_add.source.text.splitlines()
    offset = ek.vector_add.source.line_offset
    mapped = {src for _, src in compiled.tileir_line_map}
    store_line = next(i for i, t in enumerate(src_lines, 1 + offset) if "z.store" in t)
    assert store_line in mapped
    ir_lines = compiled.tileir.splitlines()
    store_ir = [ir for ir, src in compiled.tileir_line_map if src == store_line]
    assert any("store_view_tko" in ir_lines[i - 1] for i in store_ir)


def test_remarks_carry_user_lines():
    compiled = ek.vector_add.compile("sm_90", B=256)
    lines = {r.get("line") for r in compiled.remarks}
    load_line = ek.vector_add.definition.node.body[0].lineno + ek.vector_add.source.line_offset
    assert load_line in lines


def test_second_compile_hits_the_memory_cache_then_the_disk_cache():
    from cutile_lab.compiling import cache
    first = ek.saxpy.compile("sm_90", B=256)
    assert first.cache == "miss" and "tileiras" in first.timings
    second = ek.saxpy.compile("sm_90", B=256)
    assert second.cache == "memory"
    assert "tileiras" not in second.timings and "cache_lookup" in second.timings
    assert second.timings["total"] < first.timings["total"]
    assert second.cubin == first.cubin
    cache.default_cache().forget_memory()              # a new process: memory cache empty
    third = ek.saxpy.compile("sm_90", B=256)
    assert third.cache == "disk" and third.cubin == first.cubin
    assert third.tileir == first.tileir


def test_different_specialisations_are_different_entries():
    a = ek.vector_add.compile("sm_90", B=128)
    b = ek.vector_add.compile("sm_90", B=256)
    c = ek.vector_add.compile("sm_100", B=128)
    assert a.key != b.key != c.key
    assert "tile=(256)" in b.tileir and "tile=(128)" in a.tileir


def test_corrupted_cache_entry_is_rebuilt(tmp_path):
    from cutile_lab.compiling import cache
    first = ek.vector_add.compile("sm_90", B=64)
    cache.default_cache().forget_memory()
    root = cache.default_cache().path
    damaged = 0
    for f in root.rglob("*"):
        if f.is_file() and f.suffix != ".json":
            f.write_bytes(b"\x00garbage" * 3)
            damaged += 1
    assert damaged
    again = ek.vector_add.compile("sm_90", B=64)
    assert again.cache == "miss"
    assert again.cubin == first.cubin
    cache.default_cache().forget_memory()
    assert ek.vector_add.compile("sm_90", B=64).cache == "disk"


def test_unbound_const_generic_says_how_to_bind_it():
    with pytest.raises(cl.CompileError) as e:
        ek.vector_add.compile("sm_90")
    assert "`B`" in e.value.message and "B=128" in e.value.help


def test_unknown_arch_is_a_clear_error():
    with pytest.raises(cl.CompileError, match="unknown target architecture"):
        ek.vector_add.compile("sm_42", B=128)


TYPE_ERROR = '''
def bad(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], n: i32):
    t = load_tile_like(x, z)
    u = cumsum(t, axis=3)
    z.store(u)
'''


def test_compiler_type_error_points_at_the_users_line():
    [k] = cl.kernels_from_source(TYPE_ERROR, "<cell-7>").values()
    with pytest.raises(cl.CompileError) as e:
        k.compile("sm_90", B=128)
    assert e.value.span is not None
    assert e.value.span.filename == "<cell-7>"
    assert e.value.span.line == 4
    assert "Return code" not in str(e.value) and "Unknown location" not in str(e.value)


def test_lowered_source_keeps_line_numbers():
    text = ek.gemm.lowered_source()
    user = ek.gemm.source
    for stmt in ("acc = ct.mma(", "ct.store(c,"):
        lowered_line = next(i for i, t in enumerate(text.splitlines(), 1) if stmt in t)
        assert re.search(r"\bmma\(|\.store\(", user.line(lowered_line))
