"""Where the user is (``runtime.callsite``): a launch records its caller's frame as (file, code,
instruction offset) and finds the line only when a message needs it; that line is the frame's
own ``f_lineno`` at the call, on every line of a long function and inside expressions that
span lines."""
import sys

import numpy as np
import pytest

import cutile_lab as cl
from cutile_lab.runtime import OwnershipError
from cutile_lab.runtime.callsite import as_span, describe, user_site
from tests.runtime import kernels as K

pytestmark = pytest.mark.usefixtures("sim")


def here():
    """(the caller's site as the runtime records it, the caller's ``f_lineno``) at one call."""
    return user_site(2), sys._getframe(1).f_lineno


def long_function(rng):
    seen = [here()]
    total = 0
    for i in range(int(rng.integers(3, 6))):
        total += i
        seen.append(here())
    seen.append(
        here())
    values = [here() for _ in range(2)]
    seen.extend(values)
    if total >= 0:
        seen.append((lambda: here())())
    seen.append(dict(a=1, b=here())["b"])
    return seen


def test_a_site_is_the_frames_own_line(rng):
    seen = long_function(rng)
    assert len({line for _, line in seen}) >= 6
    for site, line in seen:
        span = as_span(site)
        assert span.filename == __file__ and span.line == line
        assert describe(site) == f"{__file__}:{line}"
    assert as_span((__file__, 7)).line == 7                  # a (file, line) pair still reads


def test_a_launch_error_names_the_line_of_the_call(rng):
    x = cl.from_numpy(rng.standard_normal(256).astype(np.float32)).sync()
    z, w = cl.zeros(256).sync(), cl.zeros(256).sync()
    pending = K.accumulate(x.partition_mut(128), w).start()          # writes x, in flight
    line = sys._getframe().f_lineno + 2
    with pytest.raises(OwnershipError) as e:
        K.vadd(z.partition_mut(128), x, x).sync()
    d = e.value.diagnostics[0]
    assert d.code == "TL104" and d.span.filename == __file__ and d.span.line == line
    assert any(label.span.line == line - 3 for label in d.labels)   # where the writer started
    pending.wait()


def test_tensors_and_partitions_still_pickle_with_their_places(rng):
    """A recorded site holds the caller's code object, which pickle cannot carry: a tensor or
    partition pickles with its places as the spans they stand for."""
    import pickle
    a = rng.standard_normal(int(rng.integers(4, 64))).astype(np.float32)
    line = sys._getframe().f_lineno + 1
    x = cl.from_numpy(a).sync()
    p = x.partition_mut(2)
    p.release()
    y, q = pickle.loads(pickle.dumps((x, p)))
    np.testing.assert_array_equal(y.to_numpy(), a)
    assert (y.origin.filename, y.origin.line) == (__file__, line)
    assert (q.origin.filename, q.origin.line) == (__file__, line + 1)
    assert (q.moved.where.filename, q.moved.where.line) == (__file__, line + 2)
