"""A CUDA C++ signature gives each parameter its ownership: const pointers shared, the other
pointers written, values scalars; what the parser cannot read is a located error."""
import pytest

from cutile_lab.errors import LanguageError
from cutile_lab.language.cuda_signature import parse_cuda_kernels


def test_ownership_of_each_parameter_from_the_signature():
    src = (
        '#include <cuda_fp16.h>\n'
        '// __global__ void commented_out(float* x) {}\n'
        'extern "C" __global__ void __launch_bounds__(256)\n'
        'k(const float* __restrict__ x, float const* w, __half* y, double *__restrict__ z,\n'
        '  float* const p, int n, float alpha, unsigned long long seed) {\n'
        '    const char* s = "__global__ void fake(int q) {}";\n'
        '}\n')
    (sig,) = parse_cuda_kernels(src, "cell.cu", line_offset=1)
    assert sig.name == "k" and sig.extern_c
    got = {p.name: (p.role, p.dtype) for p in sig.params}
    assert got == {"x": ("shared", "f32"), "w": ("shared", "f32"), "y": ("mut", "f16"),
                   "z": ("mut", "f64"), "p": ("mut", "f32"), "n": ("scalar", "i32"),
                   "alpha": ("scalar", "f32"), "seed": ("scalar", "u64")}
    assert [p.name for p in sig.outputs] == ["y", "z", "p"]
    assert sig.param("x").restrict and not sig.param("w").restrict
    # spans are the user's lines (line_offset applied) and columns
    x = sig.param("x")
    assert (x.span.filename, x.span.line, x.span.col) == ("cell.cu", 5, 2)
    assert sig.span.line == 5
    assert sig.describe().startswith("x: shared f32*, w: shared f32*, y: written f16*")


def test_several_kernels_declarations_and_extern_c_blocks():
    src = ('__global__ void decl_only(float* x);\n'
           'extern "C" {\n'
           '__global__ void a(float* y) { y[0] = 1.0f; }\n'
           '}\n'
           '__global__ void b(const int* q, int* r) { r[0] = q[0]; }\n')
    sigs = parse_cuda_kernels(src)
    assert [(s.name, s.extern_c) for s in sigs] == [("a", True), ("b", False)]


@pytest.mark.parametrize("src,words,line", [
    ("template <int B>\n__global__ void t(float* x) {}\n", "template kernel", 2),
    ('extern "C" __global__ void pp(float** x) {}\n', "pointer to a pointer", 1),
    ('extern "C" __global__ void r(\n  float& x) {}\n', "references", 2),
    ('extern "C" __global__ void s(\n  int n,\n  Foo f) {}\n', "has the type `Foo`", 3),
    ('extern "C" __global__ int v(float* x) {}\n', "does not return `void`", 1),
])
def test_unreadable_signatures_are_located_errors(src, words, line):
    with pytest.raises(LanguageError) as e:
        parse_cuda_kernels(src, "cell.cu")
    assert words in e.value.message
    assert e.value.span.filename == "cell.cu" and e.value.span.line == line
    assert e.value.help


def test_a_cast_away_const_is_recorded():
    src = ('extern "C" __global__ void sneaky(const float* x, float* y) {\n'
           '    float* w = (float*)x;\n'
           '    const_cast<float*>(x)[1] = 0.0f;\n'
           '    y[0] = w[0];\n'
           '}\n')
    (sig,) = parse_cuda_kernels(src)
    assert [(n, s.line) for n, s in sig.casts_away_const] == [("x", 3), ("x", 2)]
    (honest,) = parse_cuda_kernels('extern "C" __global__ void ok(const float* x, float* y) '
                                   '{ y[0] = (float)x[0]; }')
    assert honest.casts_away_const == []
