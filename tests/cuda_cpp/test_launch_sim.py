"""A CUDA C++ launch goes through the launch-level checks of a tile kernel's launch — aliasing,
moves, in-flight borrows, arguments against the signature — with diagnostics at the user's
launch line; on the simulator it is checked, explains that it needs a GPU, and lets the rest
of its chain be checked."""
import sys

import numpy as np
import pytest

import cutile_lab as cl
from cutile_lab.errors import NoDeviceError
from cutile_lab.runtime.ownership import OwnershipError
from tests.cuda_cpp.kernels import ROW_SUM, ROW_SUM_WARPS, SCALE, affine, square


@pytest.fixture
def k_scale(sim, cache_dir):
    return cl.cuda_kernel(SCALE, "scale")


@pytest.fixture
def k_rows(sim, cache_dir):
    return cl.cuda_kernel(ROW_SUM, "row_sum")


def _line() -> int:
    return sys._getframe(1).f_lineno


def _codes(e) -> list[str]:
    return [d.code for d in e.value.diagnostics]


def test_aliasing_a_written_pointer_with_a_shared_one_is_TL100_at_the_launch_line(k_scale, rng):
    n = int(rng.integers(500, 2000))
    x = cl.asarray(rng.standard_normal(n).astype(np.float32))
    op = k_scale(x, x, 2.0, n, grid=(n + 255) // 256, block=256); line = _line()  # noqa: E702
    with pytest.raises(OwnershipError) as e:
        op.sync()
    (d,) = e.value.diagnostics
    assert d.code == "TL100" and d.span.filename == __file__ and d.span.line == line
    assert "output `y`" in d.message and "input `x`" in d.message
    # each argument is labelled where it is written in the launch
    texts = {lab.message for lab in d.labels if lab.span.line == line}
    assert texts == {"written as `y`", "read as `x`"}


def test_overlapping_views_and_two_written_pointers(sim, cache_dir, rng):
    two = cl.cuda_kernel('extern "C" __global__ void two(float* a, float* b, int n) {}', "two")
    buf = cl.asarray(rng.standard_normal(1000).astype(np.float32))
    with pytest.raises(OwnershipError) as e:
        two(buf[:600], buf[500:], 500, grid=2, block=256).sync()
    assert _codes(e) == ["TL101"]
    # disjoint views of one tensor are fine (and the op hands its arguments back)
    with pytest.raises(NoDeviceError):
        two(buf[:500], buf[500:], 500, grid=2, block=256).sync()


def test_ownership_is_derived_from_the_signature_not_the_argument_order(k_scale, rng):
    x = cl.asarray(rng.standard_normal(300).astype(np.float32))
    y = cl.zeros(300).sync()
    assert [p.role for p in k_scale.signature.params] == ["shared", "mut", "scalar", "scalar"]
    # reading x twice is no conflict: only written pointers must be exclusive
    rd = cl.cuda_kernel('extern "C" __global__ void rd(const float* a, const float* b, '
                        'float* o) {}', "rd")
    with pytest.raises(NoDeviceError):
        rd(x, x, y, grid=1, block=32).sync()


def test_a_const_cast_away_is_checked_as_written_and_reported_unchecked(sim, cache_dir, rng):
    k = cl.cuda_kernel('extern "C" __global__ void sneaky(const float* x, const float* w) {\n'
                       '    ((float*)x)[0] = w[0];\n}\n', "sneaky")
    assert any("unchecked" in n and "casts the constness of `x` away at line 2" in n
               for n in k.notes())
    x = cl.asarray(rng.standard_normal(64).astype(np.float32))
    with pytest.raises(OwnershipError) as e:
        k(x, x[8:], grid=1, block=32).sync()
    assert _codes(e) == ["TL100"]


def test_arguments_against_the_signature(k_scale, rng):
    x = cl.asarray(rng.standard_normal(100).astype(np.float32))
    y = cl.zeros(100).sync()
    with pytest.raises(OwnershipError) as e:
        k_scale(x, y, 2.0, grid=1, block=128).sync()               # n missing
    assert _codes(e) == ["TL117"]
    with pytest.raises(OwnershipError) as e:
        k_scale(x, 3.0, 2.0, 100, grid=1, block=128).sync()        # a number for a pointer
    assert _codes(e) == ["TL118"]
    with pytest.raises(OwnershipError) as e:
        k_scale(cl.zeros(100, dtype="f16").sync(), y, 2.0, 100, grid=1, block=128).sync()
    assert _codes(e) == ["TL112"]
    big = cl.asarray(rng.standard_normal((10, 20)).astype(np.float32))
    with pytest.raises(OwnershipError) as e:
        k_scale(big[:, :5], y, 2.0, 50, grid=1, block=128).sync()  # a strided view
    assert _codes(e) == ["TL110"]
    with pytest.raises(OwnershipError) as e:
        k_scale(x.partition(10), y, 2.0, 100, block=128).sync()    # a partition for const
    assert _codes(e) == ["TL116"]


def test_grid_and_block(k_scale, rng):
    x = cl.asarray(rng.standard_normal(100).astype(np.float32))
    y = cl.zeros(100).sync()
    with pytest.raises(cl.LaunchError, match="needs a block size"):
        k_scale(x, y, 2.0, 100, grid=1)
    with pytest.raises(cl.LaunchError, match="needs a grid"):
        k_scale(x, y, 2.0, 100, block=128).sync()
    with pytest.raises(cl.LaunchError, match="bad block"):
        k_scale(x, y, 2.0, 100, grid=1, block=(1, 2, 3, 4))
    # a partition of the written pointer's tensor gives the grid: one block per tile
    op = k_scale(x, y.partition(32), 2.0, 100, block=32)
    assert op._grid_of({"y": op.bound["y"]}) == (4, 1, 1)
    # such a launch is checked and moves nothing back and forth: it needs a GPU, its partition
    # of the output is NaN here
    p = op.bound["y"]
    with pytest.raises(NoDeviceError):
        op.sync()
    assert np.isnan(p.tensor.numpy()).all()
    with pytest.raises(OwnershipError) as e:                        # y was moved into p
        k_scale(x, y, 2.0, 100, grid=1, block=128).sync()
    assert _codes(e) == ["TL102"]


def test_a_moved_tensor_is_TL102(k_scale, rng):
    x = cl.asarray(rng.standard_normal(100).astype(np.float32))
    y = cl.zeros(100).sync()
    y.partition(10)
    with pytest.raises(OwnershipError) as e:
        k_scale(x, y, 2.0, 100, grid=1, block=128).sync()
    assert _codes(e) == ["TL102"]


def test_in_flight_borrows_are_TL104_and_TL105(k_scale, rng):
    n = 256
    x = cl.asarray(rng.standard_normal(n).astype(np.float32))
    y = cl.zeros(n).sync()
    z = cl.zeros(n).sync()
    writing = square(z.partition_mut(64), x).start()     # in flight until waited for
    with pytest.raises(OwnershipError) as e:
        k_scale(z, y, 2.0, n, grid=1, block=256).sync()   # reads what is being written
    assert _codes(e) == ["TL104"]
    with pytest.raises(OwnershipError) as e:
        k_scale(y, x, 2.0, n, grid=1, block=256).sync()   # writes what is being read
    assert _codes(e) == ["TL105"]
    writing.wait()
    with pytest.raises(NoDeviceError):
        k_scale(z, y, 2.0, n, grid=1, block=256).sync()


def test_on_the_simulator_the_chain_is_checked_and_says_it_needs_a_gpu(k_rows, rng):
    rows, cols = 64, 100
    x = cl.asarray(rng.standard_normal(rows * cols).astype(np.float32))
    sq = cl.zeros(rows * cols).sync()
    s = cl.zeros(rows).sync()
    b = cl.asarray(rng.standard_normal(rows).astype(np.float32))
    out = cl.zeros(rows).sync()
    blocks = (rows + ROW_SUM_WARPS - 1) // ROW_SUM_WARPS

    def chain(last_out):
        return (square(sq.partition_mut(256), x)
                .then(lambda *_: k_rows(sq, s, rows, cols, grid=blocks, block=32 * ROW_SUM_WARPS))
                .then(lambda *_: affine(last_out, s, b)))

    with pytest.raises(NoDeviceError) as e:
        chain(out.partition_mut(32)).sync()
    assert "`row_sum` is a CUDA C++ kernel: it needs a GPU" in e.value.message
    assert "checked" in e.value.help
    # the tile kernel before it ran; what the CUDA kernel would write is NaN, not stale zeros
    np.testing.assert_allclose(sq.numpy(), x.numpy() ** 2, rtol=1e-6)
    assert np.isnan(s.numpy()).all() and np.isnan(out.numpy()).all()
    # the launch after the CUDA C++ one is still checked: its aliasing mistake is reported
    with pytest.raises(OwnershipError) as e:
        chain(s.partition_mut(32)).sync()
    assert _codes(e) == ["TL100"]
    # and nothing is left borrowed
    assert s.numpy().shape == (rows,)


def test_torch_work_as_an_op_on_the_simulator(sim, cache_dir, rng):
    x = cl.asarray(rng.standard_normal(128).astype(np.float32))
    z = cl.zeros(128).sync()

    def double(a, out):
        out[...] = 2 * a
        return out

    res = square(z.partition_mut(32), x).then(
        lambda *_: cl.torch_op(double, x, z, writes=[1])).sync()
    np.testing.assert_allclose(np.asarray(res), 2 * x.numpy(), rtol=1e-6)
    np.testing.assert_allclose(z.numpy(), 2 * x.numpy(), rtol=1e-6)
    # its borrows are checked like a launch's: a moved tensor is refused
    p = z.partition(32)
    with pytest.raises(OwnershipError) as e:
        cl.torch_op(double, x, z).sync()
    assert _codes(e) == ["TL102"]
    del p


def test_cuda_kernel_names_and_errors(sim, cache_dir):
    two = SCALE + 'extern "C" __global__ void other(float* y) { y[0] = 1.0f; }\n'
    with pytest.raises(cl.LanguageError, match="several kernels"):
        cl.cuda_kernel(two)
    assert cl.cuda_kernel(two, "other").signature.describe() == "y: written f32*"
    with pytest.raises(cl.LanguageError, match="no `__global__` function named 'nope'"):
        cl.cuda_kernel(two, "nope")
    with pytest.raises(cl.CompileError) as e:
        cl.cuda_kernel(SCALE.replace("a * x[i]", "a * q[i]"), "scale")
    # the error is at the source's own line, which its rendering quotes
    from cutile_lab.notebook.diagnostics import error_to_diagnostic
    rendered = str(cl.KernelDiagnosticsError([error_to_diagnostic(e.value)]))
    assert e.value.span.filename.startswith("<cuda-") and e.value.span.line == 4
    assert "4 |     if (i < n) y[i] = a * q[i];" in rendered
