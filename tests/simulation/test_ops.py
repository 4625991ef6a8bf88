"""The NumPy ``ct`` ops, one at a time: dtypes, promotion, rounding, shapes."""
import numpy as np
import pytest

from cutile_lab.simulation import dtypes as D
from cutile_lab.simulation import tiles as T
from cutile_lab.simulation.tiles import KernelError, Tile


def tile(values, dtype):
    d = D.as_dtype(dtype)
    return Tile(np.asarray(values, dtype=d.np), d)


# --- promotion ---------------------------------------------------------------------------------

def test_promotion_table_matches_cutile():
    ct = pytest.importorskip("cuda.tile")
    from cuda.tile._datatype import promote_dtypes
    from cuda.tile._exception import TileTypeError
    names = ["bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
             "float16", "float32", "float64", "bfloat16", "tfloat32", "float8_e4m3fn",
             "float8_e5m2"]
    for a in names:
        for b in names:
            try:
                want = promote_dtypes(getattr(ct, a), getattr(ct, b)).name
            except TileTypeError:
                want = None
            try:
                got = D.promote(D.dtype_by_name(a), D.dtype_by_name(b)).name
            except D.PromotionError:
                got = None
            assert got == want, (a, b)


@pytest.mark.parametrize("dtype,const,result", [
    ("float16", 2.0, "float16"), ("float16", 3, "float16"), ("int8", 3, "int8"),
    ("int32", 2.5, "float32"), ("bool_", 1, "int32"), ("bool_", 1.0, "float32"),
    ("uint8", 7, "uint8"), ("bfloat16", 1.5, "bfloat16"),
])
def test_loose_constants_take_the_tile_dtype(dtype, const, result):
    t = tile([1, 0], dtype)
    assert (t * const).dtype.name == result
    assert (const + t).dtype.name == result


def test_integer_constant_out_of_range_is_an_error():
    with pytest.raises(KernelError, match="out of range"):
        tile([1, 2], "int8") + 300


def test_mixed_promotion_and_errors():
    assert (tile([1], "float16") + tile([1], "float32")).dtype is D.float32
    assert (tile([1], "int32") + tile([1], "float16")).dtype is D.float16
    with pytest.raises(KernelError, match="promotion"):
        tile([1], "float16") + tile([1], "bfloat16")
    with pytest.raises(KernelError, match="promotion"):
        tile([1], "uint32") + tile([1], "int32")
    with pytest.raises(KernelError, match="bool"):
        tile([True], "bool_") + tile([True], "bool_")


def test_constants_with_constants_stay_python():
    assert T.add(2, 3) == 5 and T.floordiv(-7, 2) == -4 and T.cdiv(9, 4) == 3
    assert T.exp(0.0) == 1.0 and T.maximum(2, 5) == 5


# --- rounding ----------------------------------------------------------------------------------

def test_f16_rounds_after_each_op(rng):
    a = rng.standard_normal(64).astype(np.float16)
    b = rng.standard_normal(64).astype(np.float16)
    c = rng.standard_normal(64).astype(np.float16)
    r = tile(a, "float16") * tile(b, "float16") + tile(c, "float16")
    step = (a.astype(np.float32) * b.astype(np.float32)).astype(np.float16)
    expect = (step.astype(np.float32) + c.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(r.a, expect)
    assert r.a.dtype == np.float16


def test_bf16_storage_and_rounding(rng):
    ml = pytest.importorskip("ml_dtypes")
    a = rng.standard_normal(32).astype(np.float32)
    t = T.astype(tile(a, "float32"), D.bfloat16)
    assert t.a.dtype == np.dtype(ml.bfloat16)
    np.testing.assert_array_equal(t.a, a.astype(ml.bfloat16))
    s = t + t
    assert s.dtype is D.bfloat16
    np.testing.assert_array_equal(s.a.astype(np.float32), (2 * a.astype(ml.bfloat16)
                                                           .astype(np.float32)))


def test_tf32_rounding():
    t = T.astype(tile([1.0 + 2 ** -12, 1.0 + 2 ** -10, 3.0], "float32"), D.tfloat32)
    np.testing.assert_array_equal(t.a, np.float32([1.0, 1.0 + 2 ** -10, 3.0]))
    with pytest.raises(KernelError):
        t + tile([1.0, 1.0, 1.0], "float32")       # restricted: convert explicitly


def test_float_to_int_truncates_and_saturates():
    t = T.astype(tile([1.7, -1.7, 1e10, -1e10, np.nan], "float32"), D.int32)
    np.testing.assert_array_equal(t.a, [1, -1, 2 ** 31 - 1, -2 ** 31, 0])
    # to 8 bits the GPU saturates at 16 bits and keeps the low byte (as an H100 does)
    u = T.astype(tile([-3.0, 300.0, 1e9], "float32"), D.uint8)
    np.testing.assert_array_equal(u.a, [0, 44, 255])
    i = T.astype(tile([300.0, -300.0, 448.0, np.inf, -np.inf], "float32"), D.int8)
    np.testing.assert_array_equal(i.a, [44, -44, -64, -1, 0])


def test_integer_arithmetic_wraps():
    t = tile([2 ** 31 - 1], "int32") + 1
    assert t.a[0] == -2 ** 31


# --- arithmetic --------------------------------------------------------------------------------

def test_division_semantics():
    a, b = tile([7, -7, 7, -7], "int32"), tile([2, 2, -2, -2], "int32")
    np.testing.assert_array_equal((a // b).a, [3, -4, -4, 3])       # floor, like Python
    np.testing.assert_array_equal((a % b).a, [1, 1, -1, -1])
    np.testing.assert_array_equal(T.cdiv(a, b).a, [4, -3, -3, 4])
    q = a / b
    assert q.dtype is D.float32 and list(q.a) == [3.5, -3.5, -3.5, 3.5]
    f = tile([5.5], "float32") // tile([2.2], "float32")
    assert f.dtype is D.float32 and f.a[0] == 2.0
    with pytest.raises(KernelError):
        T.cdiv(tile([1.0], "float32"), 2)


def test_pow_and_math_functions(rng):
    x = rng.uniform(0.5, 2.0, 16).astype(np.float32)
    t = tile(x, "float32")
    np.testing.assert_allclose((t ** 2).a, x * x, rtol=1e-6)
    assert (t ** 2).dtype is D.float32
    for name, ref in [("exp", np.exp), ("exp2", np.exp2), ("log", np.log), ("log2", np.log2),
                      ("sqrt", np.sqrt), ("sin", np.sin), ("cos", np.cos), ("tanh", np.tanh),
                      ("floor", np.floor), ("ceil", np.ceil)]:
        r = getattr(T, name)(t)
        assert r.dtype is D.float32, name
        np.testing.assert_allclose(r.a, ref(x.astype(np.float64)), rtol=1e-6, err_msg=name)
    np.testing.assert_allclose(T.rsqrt(t).a, 1 / np.sqrt(x), rtol=1e-6)
    # integer inputs of float functions become f32
    assert T.exp(tile([0, 1], "int32")).dtype is D.float32
    with pytest.raises(KernelError):
        T.floor(tile([1], "int32"))


def test_min_max_nan_handling():
    a = tile([1.0, np.nan, 3.0], "float32")
    b = tile([2.0, 2.0, np.nan], "float32")
    np.testing.assert_array_equal(T.maximum(a, b).a, [2.0, 2.0, 3.0])
    assert np.isnan(T.maximum(a, b, propagate_nan=True).a[1:]).all()


def test_comparisons_and_where():
    a = tile([1, 5, 3], "int32")
    m = a > 2
    assert m.dtype is D.bool_ and list(m.a) == [False, True, True]
    w = T.where(m, a, 0.5)
    assert w.dtype is D.float32 and list(w.a) == [0.5, 5.0, 3.0]
    assert T.where(m, 1.0, 0.0).dtype is D.float32


def test_bitwise_ops():
    a = tile([0b1100], "int32")
    assert (a & 0b1010).a[0] == 0b1000 and (a | 1).a[0] == 0b1101 and (a ^ a).a[0] == 0
    assert (a << 2).a[0] == 48 and (a >> 2).a[0] == 3 and (~a).a[0] == -13
    with pytest.raises(KernelError):
        tile([1.0], "float32") & 1
    with pytest.raises(KernelError, match="same dtype"):
        tile([1], "int32") & tile([1], "int64")


# --- shapes ------------------------------------------------------------------------------------

def test_shape_ops():
    t = T.arange(8, dtype=D.int32)
    assert list(t.a) == list(range(8))
    r = t.reshape((2, 4))
    assert r.shape == (2, 4) and T.reshape(t, (4, -1)).shape == (4, 2)
    assert r.T.shape == (4, 2) and r.transpose().shape == (4, 2)
    p = T.permute(T.reshape(t, (2, 2, 2)), (2, 0, 1))
    np.testing.assert_array_equal(p.a, [[[0, 2], [4, 6]], [[1, 3], [5, 7]]])
    assert T.expand_dims(t, 0).shape == (1, 8) and t[:, None].shape == (8, 1)
    assert T.broadcast_to(t, (2, 8)).shape == (2, 8)
    c = T.cat((r, r + 10), 0)
    assert c.shape == (4, 4) and c.a[2, 0] == 10
    e = T.extract(r, (1, 1), (1, 2))
    np.testing.assert_array_equal(e.a, [[6, 7]])
    i = T.insert(r, (0, 1), T.full((1, 2), 99, D.int32))
    np.testing.assert_array_equal(i.a, [[0, 1, 99, 99], [4, 5, 6, 7]])
    assert T.arange(4, dtype=D.float32, start=2, step=2).a.tolist() == [2.0, 4.0, 6.0, 8.0]
    assert T.astile(((1, 2), (3, 4)), dtype=D.int32).a.tolist() == [[1, 2], [3, 4]]


def test_shape_errors():
    with pytest.raises(KernelError, match="power of two"):
        T.full((3, 4), 0, D.float32)
    with pytest.raises(KernelError, match="power of two"):
        T.arange(6, dtype=D.int32)
    with pytest.raises(KernelError, match="reshape"):
        T.reshape(T.zeros((8,), D.float32), (3, 3))
    with pytest.raises(KernelError, match="broadcast"):
        T.zeros((4,), D.float32) + T.zeros((8,), D.float32)
    with pytest.raises(KernelError, match="power of two"):
        T.cat((T.zeros((4,), D.float32), T.zeros((2,), D.float32)), 0)


# --- reductions and scans ----------------------------------------------------------------------

def test_reductions(rng):
    x = rng.standard_normal((4, 8)).astype(np.float32)
    t = tile(x, "float32")
    np.testing.assert_allclose(T.sum(t).a, x.sum(), rtol=1e-5)
    assert T.sum(t).shape == ()
    assert T.sum(t, axis=1, keepdims=True).shape == (4, 1)
    assert T.sum(t, axis=(0, 1)).shape == ()
    np.testing.assert_allclose(T.prod(t, axis=0).a, x.prod(0), rtol=1e-5)
    np.testing.assert_array_equal(T.max(t, axis=0).a, x.max(0))
    np.testing.assert_array_equal(T.min(t, axis=-1).a, x.min(1))
    am = T.argmax(t, axis=1)
    assert am.dtype is D.int32 and am.a.tolist() == x.argmax(1).tolist()
    assert int(T.argmin(t)) == int(x.argmin())
    assert T.argmax(t, axis=0, keepdims=True).shape == (1, 8)
    ties = T.cat((T.zeros((4,), D.int32), T.ones((4,), D.int32)), 0)
    assert int(T.argmax(ties, 0)) == 4                     # first of the maxima
    assert T.sum(tile([True, True, False, True], "bool_")).dtype is D.int32
    h = tile(x, "float16")
    assert T.sum(h, axis=1).dtype is D.float16
    with pytest.raises(KernelError, match="axis") as e:
        T.max(t, t)                                         # max(a, b) of two tiles
    assert "maximum(a, b)" in e.value.help


def test_scans():
    t = T.arange(8, dtype=D.int32).reshape((2, 4))
    np.testing.assert_array_equal(T.cumsum(t, 1).a, [[0, 1, 3, 6], [4, 9, 15, 22]])
    np.testing.assert_array_equal(T.cumsum(t, 1, reverse=True).a,
                                  [[6, 6, 5, 3], [22, 18, 13, 7]])
    np.testing.assert_array_equal(T.cumprod(T.full((2, 4), 2, D.int32), 1).a,
                                  [[2, 4, 8, 16]] * 2)


def test_custom_reduce_and_scan():
    t = T.arange(8, dtype=D.int32).reshape((2, 4))
    r = T.reduce(t, 1, lambda a, b: a + b, 0)
    np.testing.assert_array_equal(r.a, [6, 22])
    s = T.scan(t, 1, lambda a, b: T.maximum(a, b), -100)
    np.testing.assert_array_equal(s.a, [[0, 1, 2, 3], [4, 5, 6, 7]])


# --- matrix multiply ---------------------------------------------------------------------------

def test_mma_dtypes_and_accumulation(rng):
    a = rng.standard_normal((16, 32)).astype(np.float16)
    b = rng.standard_normal((32, 8)).astype(np.float16)
    acc = T.full((16, 8), 1.0, D.float32)
    r = T.mma(tile(a, "float16"), tile(b, "float16"), acc)
    assert r.dtype is D.float32
    np.testing.assert_allclose(r.a, a.astype(np.float64) @ b + 1, rtol=1e-5, atol=1e-5)
    r16 = T.mma(tile(a, "float16"), tile(b, "float16"), T.zeros((16, 8), D.float16))
    assert r16.dtype is D.float16
    i = T.mma(tile([[1, 2]], "int8"), tile([[3], [4]], "int8"), T.zeros((1, 1), D.int32))
    assert i.dtype is D.int32 and i.a[0, 0] == 11
    batched = T.mma(T.ones((2, 2, 4), D.float32), T.ones((4, 2), D.float32),
                    T.zeros((2, 2, 2), D.float32))
    assert batched.shape == (2, 2, 2) and (batched.a == 4).all()
    with pytest.raises(KernelError, match="accumulator"):
        T.mma(tile(a, "float16"), tile(b, "float16"), T.zeros((16, 8), D.int32))
    with pytest.raises(KernelError, match="shapes"):
        T.mma(tile(a, "float16"), tile(a, "float16"), T.zeros((16, 32), D.float32))
    with pytest.raises(KernelError, match="one dtype"):
        T.mma(tile(a, "float16"), tile(b, "float32"), T.zeros((16, 8), D.float32))


def test_matmul():
    x = T.ones((4,), D.float32)
    assert float(T.matmul(x, x)) == 4.0
    m = T.ones((2, 4), D.float16) @ T.ones((4, 2), D.float16)
    assert m.dtype is D.float16 and (m.a == 4).all()


# --- tiles as Python values --------------------------------------------------------------------

def test_scalar_tiles_as_python_values():
    s = tile(3, "int32")
    assert list(range(s)) == [0, 1, 2] and int(s) == 3 and bool(s)
    assert f"{tile(1.5, 'float32'):.2f}" == "1.50"
    assert f"{tile([1, 2], 'int32')}" == "[1, 2]"
    with pytest.raises(KernelError, match="truth value"):
        bool(tile([1, 2], "int32"))
    with pytest.raises(KernelError):
        tile([1.0], "float32")[0]


def test_numpy_scalars_defer_to_tiles():
    r = np.float32(2.0) * tile([1.0, 2.0], "float16")
    assert isinstance(r, Tile) and r.dtype is D.float32   # a typed f32 scalar promotes
