"""Bad arguments to creation functions and launches: each is the lab's ``LaunchError`` (CL050)
at the user's own line, with a help line, never NumPy's or Python's error from inside the lab."""
import numpy as np
import pytest

import cutile_lab as cl
from cutile_lab.errors import LaunchError
from cutile_lab.lang import Mut, Tensor, f32, load_tile_like

pytestmark = pytest.mark.usefixtures("sim")


def _lab_error_here(fn, match):
    with pytest.raises(LaunchError, match=match) as e:
        op = fn()
        op.sync()
    assert e.value.code == "CL050" and e.value.help
    assert e.value.span is not None and e.value.span.filename == __file__
    return e.value


@pytest.mark.parametrize("value", ["x", None, [1.0, 2.0], object()])
def test_full_of_a_value_that_is_not_a_number(value):
    _lab_error_here(lambda: cl.full((4,), value), "fill_value=.* is not a real number")


@pytest.mark.parametrize("value,dtype", [(300, "i8"), (1e10, "i32"), (2.5, "u8"), (-1, "u16"),
                                         (float("nan"), "i32")])
def test_full_of_a_value_the_integer_dtype_cannot_hold(value, dtype):
    names = {"i8": "int8", "i32": "int32", "u8": "uint8", "u16": "uint16"}
    _lab_error_here(lambda: cl.full(3, value, dtype), f"does not fit {names[dtype]}")


def test_full_of_numbers_that_fit_still_works():
    rng = np.random.default_rng()
    v, i = float(rng.standard_normal()), int(rng.integers(-128, 128))
    np.testing.assert_array_equal(cl.full((2, 3), v).sync().to_numpy(),
                                  np.full((2, 3), v, np.float32))
    np.testing.assert_array_equal(cl.full(5, i, "i8").sync().to_numpy(), np.full(5, i, np.int8))
    np.testing.assert_array_equal(cl.full(2, np.float32(v)).sync().to_numpy(),
                                  np.full(2, np.float32(v)))


@pytest.mark.parametrize("args,match", [(("a",), "stop='a' is not a real number"),
                                        ((0, None, "x"), "step='x' is not a real number"),
                                        ((0, 8, 0), "step=0 gives no values"),
                                        (([1, 2],), "is not a real number")])
def test_arange_of_bad_bounds(args, match):
    _lab_error_here(lambda: cl.arange(*args), match)


def test_arange_still_works():
    n = int(np.random.default_rng().integers(3, 50))
    np.testing.assert_array_equal(cl.arange(n).sync().to_numpy(), np.arange(n))
    np.testing.assert_allclose(cl.arange(1.0, 2.0, 0.25).sync().to_numpy(), [1, 1.25, 1.5, 1.75])


@pytest.mark.parametrize("make", [lambda: cl.ones((1 << 40, 1 << 40)),
                                  lambda: cl.zeros((1 << 62, 4)),
                                  lambda: cl.empty((1 << 40, 1 << 40))])
def test_a_shape_no_memory_can_hold(make):
    _lab_error_here(make, "more than any memory holds")


def test_a_shape_the_simulator_cannot_allocate(monkeypatch):
    """np.ones of 4 TiB fails with NumPy's MemoryError at .sync(): the lab's error, at the line
    that asked for the tensor."""
    def no_memory(*a, **k):
        raise MemoryError("Unable to allocate 4 TiB")
    monkeypatch.setattr(np, "ones", no_memory)
    op = cl.ones((1 << 20, 1 << 20))
    with pytest.raises(LaunchError, match="no host memory") as e:
        op.sync()
    assert e.value.span.filename == __file__ and e.value.help


@cl.kernel
def _add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z))


@pytest.mark.parametrize("grid", ["a", (2.5,), ("x", 1), object()])
def test_a_grid_that_is_not_ints(grid):
    x = cl.asarray(np.random.default_rng().standard_normal(64).astype(np.float32))
    _lab_error_here(lambda: cl.launch(_add, cl.zeros(64).sync().partition(16), x, grid=grid),
                    "bad grid")


def test_then_with_a_function_that_cannot_take_the_result():
    """Was Python's TypeError from inside ops.py at .sync(); now the lab's error at the
    .then() line."""
    op = cl.zeros(4).then(lambda a, b: a)
    with pytest.raises(LaunchError, match=r"\.then\(<lambda>\)` cannot take the result of `cl\.zeros` "
                                          r"\(one Tensor\): missing a required argument: 'b'") as e:
        op.sync()
    assert e.value.span.filename == __file__ and e.value.help


def test_then_keeps_the_users_own_errors_and_unpacks_tuples():
    def mine(t):
        return t.shape + 1                       # the user's own TypeError
    with pytest.raises(TypeError, match="can only concatenate tuple"):
        cl.zeros(4).then(mine).sync()
    with pytest.raises(ZeroDivisionError):
        cl.zeros(4).then(lambda t: 1 / 0).sync()
    n = int(np.random.default_rng().integers(2, 9))
    assert cl.zip(cl.zeros(n), cl.zeros(3)).then(lambda a, b: a.shape + b.shape).sync() == (n, 3)


@pytest.mark.parametrize("key,says", [(10, "index 10 is out of bounds for a dimension of size 6"),
                                      (-7, "index -7 is out of bounds"),
                                      ("a", "unsupported index 'a'"),
                                      (slice("a"), "unsupported slice"),
                                      (None, "None (new axis) is not supported"),
                                      ((0, 0), "too many indices for a 1-d tensor (6,)"),
                                      (slice(None, None, -1), "negative slice steps")])
def test_a_bad_index_is_the_labs_error_and_still_an_index_error(key, says):
    """Were plain IndexErrors (TypeError for a bad slice) raised inside tensor.py: now the lab's
    error at the user's line with a help line, shown without a traceback in a notebook, and
    still an IndexError, so `except IndexError` and iteration keep working."""
    from cutile_lab.errors import TensorIndexError
    t = cl.asarray(np.random.default_rng().standard_normal(6).astype(np.float32))
    with pytest.raises(TensorIndexError) as e:
        t[key]
    assert isinstance(e.value, IndexError) and says in e.value.message
    assert e.value.code == "CL050" and e.value.help and e.value.span.filename == __file__
    assert e.value._render_traceback_()[0].startswith("TensorIndexError: ")


def test_iterating_a_tensor_still_ends_on_its_index_error():
    x = np.random.default_rng().standard_normal(5).astype(np.float32)
    assert [float(v.item()) for v in cl.asarray(x)] == x.tolist()


@pytest.mark.parametrize("make", [cl.rand, cl.randn])
@pytest.mark.parametrize("seed", ["x", -1, 2.5, True])
def test_a_seed_numpy_cannot_take(make, seed):
    """Was NumPy's TypeError/ValueError from inside the lab at .sync()."""
    _lab_error_here(lambda: make(4, seed=seed), "is not a non-negative int")


def test_seeds_still_repeat():
    s = int(np.random.default_rng().integers(0, 2**31))
    np.testing.assert_array_equal(cl.randn(6, seed=s).sync().to_numpy(),
                                  cl.randn(6, seed=np.int64(s)).sync().to_numpy())


def test_from_numpy_of_ragged_lists():
    """Was NumPy's ValueError (inhomogeneous shape) from inside creation.py."""
    _lab_error_here(lambda: cl.from_numpy([[1.0, 2.0], [3.0]]), "cl.from_numpy: cannot make a tensor of this list")


@pytest.mark.parametrize("shape,says", [((2.5,), "bad shape 2.5"), (("a",), "bad shape 'a'"),
                                        ((2, None), "bad shape (2, None)"),
                                        ((-2, -4), "sizes must be >= 0")])
def test_reshape_to_a_shape_that_is_not_ints(shape, says):
    """Were TypeError / int()'s ValueError from inside tensor.py."""
    t = cl.asarray(np.random.default_rng().standard_normal(8).astype(np.float32))
    with pytest.raises(LaunchError, match="reshape: ") as e:
        t.reshape(*shape)
    assert says in e.value.message and e.value.span.filename == __file__
    assert t.reshape(2, -1).shape == (2, 4) and t.reshape([4, 2]).shape == (4, 2)


@pytest.mark.parametrize("stream", ["abc", 2.5, True, object()])
def test_sync_on_something_that_is_not_a_stream(stream):
    """The simulator took any value as a stream (the GPU backend refuses it): a notebook that
    ran on the simulator failed on a GPU."""
    with pytest.raises(LaunchError, match="not a stream") as e:
        cl.zeros(4).sync_on(stream)
    assert e.value.span.filename == __file__ and e.value.help
    with pytest.raises(LaunchError, match="not a stream"):
        cl.zeros(4).start(stream)


def test_sync_on_a_stream_still_runs():
    v = float(np.random.default_rng().standard_normal())
    s = cl.stream()
    assert cl.full(3, v).sync_on(s).to_numpy().tolist() == [np.float32(v)] * 3
    assert cl.full(3, v).sync_on(0).to_numpy()[0] == np.float32(v)
