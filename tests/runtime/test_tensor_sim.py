"""Tensors, creation, views and interop on the simulator backend (no GPU needed)."""
import numpy as np
import pytest

import cutile_lab as cl
from cutile_lab.errors import LaunchError
from cutile_lab.runtime import Tensor

pytestmark = pytest.mark.usefixtures("sim")


def test_creation_functions():
    z = cl.zeros((3, 4)).sync()
    assert isinstance(z, Tensor) and z.shape == (3, 4) and z.strides == (4, 1)
    assert str(z.dtype) == "f32" and z.backend == "sim"
    assert (z.to_numpy() == 0).all()
    assert (cl.ones(5, cl.i32).sync().to_numpy() == 1).all()
    assert cl.ones(5, cl.i32).sync().to_numpy().dtype == np.int32
    assert (cl.full((2, 2), 7.5).sync().to_numpy() == 7.5).all()
    np.testing.assert_array_equal(cl.arange(10).sync().to_numpy(), np.arange(10))
    np.testing.assert_array_equal(cl.arange(2, 11, 3).sync().to_numpy(), [2, 5, 8])
    assert str(cl.arange(10).sync().dtype) == "i32"
    r = cl.rand(1000).sync().to_numpy()
    assert 0 <= r.min() and r.max() < 1 and r.std() > 0.2
    n = cl.randn((100, 100), "f64").sync().to_numpy()
    assert n.dtype == np.float64 and abs(n.mean()) < 0.1 and 0.9 < n.std() < 1.1
    # fresh random data unless seeded
    assert not np.array_equal(cl.rand(10).sync().to_numpy(), cl.rand(10).sync().to_numpy())
    np.testing.assert_array_equal(cl.rand(10, seed=3).sync().to_numpy(),
                                  cl.rand(10, seed=3).sync().to_numpy())
    a = np.arange(6, dtype=np.float16).reshape(2, 3)
    t = cl.from_numpy(a).sync()
    assert str(t.dtype) == "f16"
    np.testing.assert_array_equal(t.to_numpy(), a)


@pytest.mark.parametrize("make, words", [
    # each was an error from inside NumPy or the lab's own arithmetic (ValueError, TypeError)
    (lambda: cl.full(4, "x"), ["cl.full", "fill_value='x'", "not a real number"]),
    (lambda: cl.full(4, None), ["cl.full", "fill_value=None"]),
    (lambda: cl.arange("a"), ["cl.arange", "stop='a'"]),
    (lambda: cl.arange(0, 8, [1]), ["cl.arange", "step=[1]"]),
    (lambda: cl.arange(0, 8, 0), ["cl.arange", "step=0"]),
    (lambda: cl.ones((1 << 40, 1 << 40)), ["cl.ones", "more than any memory holds"]),
    (lambda: cl.empty((1 << 40, 1 << 40), "f16"), ["cl.empty", "more than any memory holds"]),
])
def test_bad_creation_arguments_are_one_clear_error(make, words):
    with pytest.raises(LaunchError) as e:
        op = make()
        op.sync() if hasattr(op, "sync") else None
    for w in words:
        assert w in e.value.message
    assert e.value.help


@pytest.mark.parametrize("obj, words", [
    ([[1.0, 2.0], [3.0]], ["of this list", "inhomogeneous", "same length"]),   # NumPy's ValueError
    (None, ["of NoneType"]),            # these were "unknown dtype dtype('O')"
    ("abc", ["of str"]),
    ({"a": 1}, ["of dict"]),
])
def test_what_is_not_an_array_of_numbers_says_so(obj, words):
    for make in (cl.asarray, cl.from_numpy):
        with pytest.raises(LaunchError) as e:
            make(obj)
        assert e.value.message.startswith(f"cl.{make.__name__}: cannot make a tensor")
        for w in words:
            assert w in str(e.value)
    ml_dtypes = pytest.importorskip("ml_dtypes")       # a void-kind dtype that is numbers
    bf = np.random.default_rng().standard_normal(8).astype(ml_dtypes.bfloat16)
    assert str(cl.asarray(bf).dtype) == "bf16" and str(cl.from_numpy(bf).sync().dtype) == "bf16"


def test_creation_is_lazy():
    op = cl.zeros(4)
    assert isinstance(op, cl.DeviceOp)
    assert "lazy" in repr(op)


def test_views_and_slices(rng):
    a = rng.standard_normal((6, 8)).astype(np.float32)
    t = cl.from_numpy(a).sync()
    np.testing.assert_array_equal(t[2:5].to_numpy(), a[2:5])
    v = t[:, ::2]
    assert v.shape == (6, 4) and v.strides == (8, 2) and not v.is_contiguous
    np.testing.assert_array_equal(v.to_numpy(), a[:, ::2])
    np.testing.assert_array_equal(t[1, 2:7:2].to_numpy(), a[1, 2:7:2])
    np.testing.assert_array_equal(t[-1].to_numpy(), a[-1])
    np.testing.assert_array_equal(t[..., 3].to_numpy(), a[..., 3])
    np.testing.assert_array_equal(t.T.to_numpy(), a.T)
    np.testing.assert_array_equal(t.reshape(4, 12).to_numpy(), a.reshape(4, 12))
    np.testing.assert_array_equal(t.reshape(-1).to_numpy(), a.reshape(-1))
    assert t[1, 2].item() == a[1, 2]
    with pytest.raises(IndexError):
        t[:, ::-1]
    with pytest.raises(IndexError):
        t[6]
    with pytest.raises(LaunchError):
        v.reshape(24)
    lo, hi = t[2:4].byte_range()
    assert lo == t.ptr + 2 * 8 * 4 and hi - lo == 2 * 8 * 4


def test_numpy_interop_zero_copy(rng):
    a = rng.standard_normal(16).astype(np.float32)
    t = cl.asarray(a)                       # sim: wraps the NumPy array
    assert np.shares_memory(np.asarray(t), a)
    a[3] = 42.0
    assert t.to_numpy()[3] == 42.0
    back = np.asarray(t)                    # __array_interface__ shares memory
    back[0] = -1.0
    assert a[0] == -1.0
    d = np.from_dlpack(t)                   # DLPack (CPU device) shares memory too
    assert np.shares_memory(d, a)
    # a strided NumPy view stays a strided view of the same memory
    m = rng.standard_normal((4, 6)).astype(np.float32)
    tv = cl.asarray(m[:, 1::2])
    assert tv.strides == (6, 2)
    np.testing.assert_array_equal(tv.to_numpy(), m[:, 1::2])
    assert str(cl.asarray([1.0, 2.0]).dtype) == "f32"
    assert str(cl.asarray([1, 2]).dtype) == "i32"


def test_sim_tensor_has_no_cuda_interface():
    t = cl.zeros(3).sync()
    assert not hasattr(t, "__cuda_array_interface__")
    assert t.__dlpack_device__() == (1, 0)


def test_dtype_names():
    from cutile_lab.runtime.dtypes import as_dtype
    assert str(as_dtype("float32")) == "f32"
    assert str(as_dtype(np.float16)) == "f16"
    assert str(as_dtype("torch.bfloat16")) == "bf16"
    with pytest.raises(LaunchError):
        as_dtype("complex64")


def test_bf16_needs_ml_dtypes_or_works():
    try:
        import ml_dtypes  # noqa: F401
    except ImportError:  # noqa
        with pytest.raises(LaunchError, match="ml_dtypes"):
            cl.zeros(4, "bf16").sync()
    else:
        t = cl.ones(4, "bf16").sync()
        assert t.to_numpy().astype(np.float32).tolist() == [1, 1, 1, 1]
