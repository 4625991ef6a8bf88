"""Launch level, rustc's E0505: a view taken before its tensor is moved into a partition ends
with the move. Reading it, writing it, slicing it or passing it to a launch afterwards is an
error (TL102) at the user's line, naming the view and the move; views taken from the tensor the
launch hands back, views of memory the move does not touch, and borrows (``partition_mut``) are
not affected. Each test runs on the simulator and, marked ``gpu``, on the GPU."""
import numpy as np
import pytest

import cutile_lab as cl
from cutile_lab.runtime import OwnershipError
from tests.runtime import kernels as K



@pytest.fixture(autouse=True, params=["sim", pytest.param("gpu", marks=pytest.mark.gpu)])
def backend(request):
    """Each test on the simulator, and (gpu-marked) on the GPU: the rule is the host's."""
    return request.getfixturevalue(request.param)


def _refused(use):
    with pytest.raises(OwnershipError) as e:
        use()
    [d] = e.value.diagnostics
    return d


def test_a_view_taken_before_the_move_is_dead_after_it():
    z = cl.zeros(256).sync()
    head = z[:128]
    p = z.partition(128)
    for use in (lambda: head.to_numpy(), lambda: np.asarray(head), lambda: head[1:],
                lambda: head.partition(64)):
        d = _refused(use)
        assert d.code == "TL102"
        assert "`head`" in d.message and "`z`" in d.message and "ended with the move" in d.message
        assert d.span is not None and d.span.filename == __file__
        assert d.labels and d.labels[0].span.filename == __file__
        assert "moved into a partition here" in d.labels[0].message
    assert p is not None


def test_a_dead_view_cannot_be_passed_to_a_launch():
    a = np.random.default_rng().random(256, dtype=np.float32)
    x = cl.asarray(a.copy())
    view = x[:]
    out = cl.zeros(256).sync()
    p = x.partition(128)
    d = _refused(lambda: K.vadd(out.partition(128), view, view).sync())
    assert d.code == "TL102" and "`view`" in d.message
    assert p is not None


def test_a_dead_view_is_refused_on_a_repeated_launch_too():
    a = np.random.default_rng().random(256, dtype=np.float32)
    x = cl.asarray(a.copy())
    view = x[:]
    out = cl.zeros(256).sync()
    q = out.partition_mut(128)
    for _ in range(2):                       # the second start takes the cached path
        K.vadd(q, view, view).sync()
    np.testing.assert_allclose(out.to_numpy(), 2 * a, rtol=1e-6)
    p = x.partition(128)
    d = _refused(lambda: K.vadd(q, view, view).sync())
    assert d.code == "TL102" and "`view`" in d.message
    assert p is not None


def test_views_the_move_does_not_touch_or_take_later_live_on():
    a = np.random.default_rng().random(256, dtype=np.float32)
    x = cl.asarray(a.copy())
    tail = x[128:]
    p = x[:128].partition(64)                # moves only the first half
    np.testing.assert_array_equal(tail.to_numpy(), a[128:])
    d = _refused(lambda: x.to_numpy())       # the whole of `x` overlaps the moved half
    assert d.code == "TL102" and "`x`" in d.message
    y = cl.asarray(a.copy())
    z = cl.zeros(256).sync()
    zp = z.partition(128)
    K.vadd(zp, y, y).sync()
    back = zp.unpartition()
    np.testing.assert_allclose(back[:128].to_numpy(), 2 * a[:128], rtol=1e-6)
    assert p is not None


def test_a_borrow_does_not_end_views():
    a = np.random.default_rng().random(256, dtype=np.float32)
    z = cl.zeros(256).sync()
    head = z[:128]
    K.vadd(z.partition_mut(128), cl.asarray(a), cl.asarray(a)).sync()
    np.testing.assert_allclose(head.to_numpy(), 2 * a[:128], rtol=1e-6)
