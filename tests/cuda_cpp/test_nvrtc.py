"""NVRTC compiles CUDA C++ on the CPU: cubin and PTX of one program, resources, a compile cache
keyed like the tile kernels', and NVRTC's errors at the user's line and column."""
import pytest

from cutile_lab.compiling.cubin import cubin_arch, is_nvidia_elf
from cutile_lab.compiling.nvrtc import compile_cuda, error_diagnostics, nvrtc_version
from cutile_lab.errors import CompileError
from tests.cuda_cpp.kernels import ROW_SUM, SCALE


def test_nvrtc_is_installed_and_compiles_without_a_gpu(cache_dir):
    assert nvrtc_version() is not None and nvrtc_version().startswith("13.")
    c = compile_cuda(ROW_SUM, "row_sum", "sm_90")
    assert is_nvidia_elf(c.cubin) and cubin_arch(c.cubin) == "sm_90"
    assert c.symbol == "row_sum"
    assert ".entry row_sum" in c.ptx and "shfl.sync.down" in c.ptx
    assert c.resources["kernel"] == "row_sum" and c.resources["registers"] > 0
    assert c.cache == "miss" and c.timings["nvrtc"] > 0
    assert "row_sum [sm_90] CUDA C++" in c.summary()


def test_compiles_are_cached_in_memory_and_on_disk(cache_dir):
    from cutile_lab.compiling.cache import default_cache
    first = compile_cuda(SCALE, "scale", "sm_90")
    again = compile_cuda(SCALE, "scale", "sm_90")
    assert (first.cache, again.cache) == ("miss", "memory")
    assert again.cubin == first.cubin and again.ptx == first.ptx
    default_cache().forget_memory()
    disk = compile_cuda(SCALE, "scale", "sm_90")
    assert disk.cache == "disk" and disk.cubin == first.cubin
    # what changes the binary is in the key: options, architecture, source
    assert compile_cuda(SCALE, "scale", "sm_90", options={"use_fast_math": True}).cache == "miss"
    assert compile_cuda(SCALE, "scale", "sm_80").cache == "miss"
    assert compile_cuda(SCALE + "\n// edited\n", "scale", "sm_90").cache == "miss"
    assert compile_cuda(SCALE, "scale", "sm_90", use_cache=False).cache == "miss"


def test_a_broken_kernel_is_reported_at_the_users_line_and_column(cache_dir):
    broken = SCALE.replace("y[i] = a * x[i];", "y[i] = a * xs[i];")
    line = broken.splitlines().index("    if (i < n) y[i] = a * xs[i];") + 1
    with pytest.raises(CompileError) as e:
        compile_cuda(broken, "scale", "sm_90", filename="<cuda-cell-7>", line_offset=1)
    err = e.value
    assert 'identifier "xs" is undefined' in err.message
    assert (err.span.filename, err.span.line) == ("<cuda-cell-7>", line + 1)
    assert err.span.col == broken.splitlines()[line - 1].index("xs")
    assert err.stage == "nvrtc" and err.help


def test_every_error_becomes_a_diagnostic(cache_dir):
    broken = SCALE.replace("int i =", "int j =").replace("float a,", "float a, float b,") \
        .replace("a * x[i]", "a * x[j] + bb")
    with pytest.raises(CompileError) as e:
        compile_cuda(broken, "scale", "sm_90", filename="cell.cu")
    diags = error_diagnostics(e.value)
    assert len(diags) >= 2 and all(d.is_error for d in diags)
    assert all(d.span.line == 4 for d in diags)
    assert any('identifier "i" is undefined' in d.message for d in diags)
    assert any('identifier "bb" is undefined' in d.message for d in diags)
    assert "more error" in e.value.message


def test_warnings_mangled_names_and_options(cache_dir):
    src = "__global__ void k(float* y) { int unused; y[0] = 1.0f; }\n"
    c = compile_cuda(src, "k", "sm_90", filename="w.cu")
    assert c.symbol != "k" and "k" in c.symbol           # a C++ name: NVRTC mangles it
    assert any("unused" in w and w.startswith("w.cu:1:") for w in c.warnings)
    with pytest.raises(CompileError, match="unknown NVRTC option"):
        compile_cuda(src, "k", "sm_90", options={"fast": True})
    with pytest.raises(CompileError, match="unknown target architecture"):
        compile_cuda(src, "k", "sm_1")
