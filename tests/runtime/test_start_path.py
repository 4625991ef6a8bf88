"""The one start path of a launch (``LaunchOp._enqueue``): every start — a first one, a repeated
one, a new op of the very same objects, a library call into a new output — goes through it, and
its caches (the layout's entry, the start record of the same objects) never skip a check that
can change between two starts: moves (TL102) and in-flight work (TL104/TL105), from any thread."""
import gc
import importlib
import threading

import numpy as np
import pytest

import cutile_lab as cl
from cutile_lab.runtime import OwnershipError
from cutile_lab.runtime.launch.output import launch_into
from tests.runtime import kernels as K
from tests.runtime.threads import hold_first_thread

op_module = importlib.import_module("cutile_lab.runtime.launch.op")
LaunchOp = op_module.LaunchOp

pytestmark = pytest.mark.usefixtures("sim")


def codes(excinfo) -> list[str]:
    return [d.code for d in excinfo.value.diagnostics]


def upload(rng, n=512):
    return cl.from_numpy(rng.standard_normal(n).astype(np.float32)).sync()


def test_every_kind_of_start_runs_the_one_path(monkeypatch, rng):
    starts = []
    real = LaunchOp._enqueue

    def spy(self, ctx):
        starts.append(type(self).__name__)
        return real(self, ctx)
    monkeypatch.setattr(LaunchOp, "_enqueue", spy)
    x, y = upload(rng), upload(rng)
    z = cl.zeros(512).sync()
    p = z.partition_mut(128)
    op = K.vadd(p, x, y)
    op.sync()                                   # first start: the layout's entry prepared
    op.sync()                                   # the same op again: its start record
    again = K.vadd(p, x, y)                     # a new op of the very same objects
    assert again._reuse is op._reuse
    again.start().wait()
    K.vadd(z.partition_mut(128), x, y).sync()   # a new partition: a new record, entry cached
    out = launch_into(K.vadd, (512,), "f32", 128, x, y).sync()   # a library-style call
    assert starts == ["LaunchOp"] * 4 + ["OutputLaunchOp"]
    np.testing.assert_allclose(out.to_numpy(), x.to_numpy() + y.to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(z.to_numpy(), x.to_numpy() + y.to_numpy(), rtol=1e-6)


def test_a_fresh_partition_of_a_moved_tensor_is_refused(rng):
    x, y = upload(rng), upload(rng)
    z = cl.zeros(512).sync()
    K.vadd(z.partition_mut(128), x, y).sync()   # the layout's entry is cached
    old = z.partition_mut(128)
    K.vadd(old, x, y).sync()                    # ...and this partition's start record
    moved = z.partition(128)                    # z moves
    with pytest.raises(OwnershipError) as e:    # a fresh partition of the moved tensor
        K.vadd(z.partition_mut(128), x, y)
    assert codes(e) == ["TL102"]
    with pytest.raises(OwnershipError) as e:    # the old borrow ended with the move
        K.vadd(old, x, y).sync()
    assert codes(e) == ["TL102"]
    assert "`old`" in e.value.diagnostics[0].message and "ended with the move" in \
        e.value.diagnostics[0].message
    with pytest.raises(OwnershipError) as e:    # a moved input of a cached layout
        K.vadd(cl.zeros(512).sync().partition_mut(128), z, y).sync()
    assert codes(e) == ["TL102"]
    back = moved.unpartition()
    K.vadd(back.partition_mut(128), x, y).sync()      # the tensor given back launches again


def test_a_cached_start_in_another_thread_is_still_checked(monkeypatch, rng):
    """Thread 1's launch runs (in flight) while thread 2 starts ops whose start records and
    entries were all cached before: each is refused (TL104 / TL105), and fine afterwards."""
    x = upload(rng, 4096)
    z = cl.zeros(4096).sync()
    w = cl.zeros(4096).sync()
    writer = K.accumulate(z.partition_mut(1024), x)         # writes z, reads x
    reader = K.scale(w.partition_mut(1024), z, 1.0)         # reads z
    clobber = K.scale(x.partition_mut(1024), w, 1.0)        # writes x
    for op in (writer, reader, clobber):
        op.sync()                                           # every start record cached
    running, finish = hold_first_thread(monkeypatch)
    first = threading.Thread(name="first", daemon=True, target=writer.sync)
    first.start()
    refused = {}
    try:
        assert running.wait(30)
        for name, op in (("reader", reader), ("clobber", clobber), ("writer", writer)):
            with pytest.raises(OwnershipError) as e:
                op.sync()
            refused[name] = codes(e)
        with pytest.raises(OwnershipError) as e:            # a new op of the cached layout
            K.scale(w.partition_mut(1024), z, 1.0).sync()
        refused["new reader"] = codes(e)
    finally:
        finish.set()
        first.join(30)
    assert refused == {"reader": ["TL104"], "clobber": ["TL105"], "writer": ["TL104"],
                       "new reader": ["TL104"]}
    reader.sync()
    np.testing.assert_allclose(w.to_numpy(), 2 * x.to_numpy(), rtol=1e-6)


def test_a_started_launch_holds_the_lent_tensor(rng):
    """A borrowing partition's launch borrows the tensor it lends: host access to it while the
    work is in flight is refused, through the tensor and through the partition's view alike."""
    x, y = upload(rng), upload(rng)
    z = cl.zeros(512).sync()
    p = z.partition_mut(128)
    pending = K.vadd(p, x, y).start()
    for access in (z.to_numpy, p.tensor.to_numpy):
        with pytest.raises(OwnershipError) as e:
            access()
        assert codes(e) == ["TL103"]
    pending.wait()
    np.testing.assert_allclose(z.to_numpy(), x.to_numpy() + y.to_numpy(), rtol=1e-6)


def test_launches_leave_no_cyclic_garbage(rng):
    """A finished launch is freed by reference counting alone (a flight that referred to itself
    kept its result, tensors included, alive until the cyclic collector ran)."""
    x, y = upload(rng), upload(rng)
    z = cl.zeros(512).sync()
    from cutile_lab import kernels as lib
    for _ in range(3):
        K.vadd(z.partition_mut(128), x, y).sync()
        lib.add(x, y).sync()
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for _ in range(10):
            K.vadd(z.partition_mut(128), x, y).sync()
            lib.add(x, y).sync()
        gc.collect()
        kinds = {type(o).__name__ for o in gc.garbage}
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert not kinds & {"Flight", "Tensor", "Partition", "LaunchOp", "OutputLaunchOp",
                        "ReusableStart"}, kinds


def test_simulator_memory_addresses_are_the_arrays(rng):
    """The simulator's allocations read their address without ``ndarray.ctypes`` (cheaper):
    the same address for every dtype, and for empty arrays."""
    import ml_dtypes

    from cutile_lab.runtime.memory import host_address
    for dtype in (np.float32, np.float16, np.int8, np.bool_, ml_dtypes.bfloat16,
                  ml_dtypes.float8_e4m3fn):
        a = np.empty(int(rng.integers(1, 4096)), dtype)
        assert host_address(a) == a.ctypes.data
    empty = np.empty(0, np.float32)
    assert host_address(empty) == empty.ctypes.data
    t = cl.empty((int(rng.integers(1, 64)), 16), "bf16")
    assert t.range == (t.ptr, t.ptr + t.size * 2)


def test_device_allocation_fills_every_field_of_its_storage(rng):
    """``memory.allocate`` builds its ``DeviceStorage`` without ``__init__`` (every library call
    allocates there): the same fields as the constructor gives, for sizes of zero too."""
    from cutile_lab.runtime.memory import DeviceStorage, allocate

    class Buffer:
        def __init__(self, n):
            self.handle = 0x7F00_0000_0000 + 256 * n

    class Device:
        device_id = int(rng.integers(0, 8))

        def allocate(self, n, stream=None):
            assert n >= 1 and stream == "s"
            return Buffer(n)
    for n in (0, int(rng.integers(1, 1 << 20))):
        st = allocate(n, "s", Device())
        ref = DeviceStorage(st.owner.handle, n, st.owner, Device.device_id)
        for field in ("ptr", "nbytes", "owner", "moves", "device_id", "ready", "foreign"):
            assert getattr(st, field) == getattr(ref, field), field


CT_ADD_INPLACE = (
    "import cuda.tile as ct\n"
    "@ct.kernel\n"
    "def ct_acc(z, x, w, B: ct.Constant[int]):\n"
    "    tx = ct.load(x, index=(ct.bid(0),), shape=(B,), padding_mode=ct.PaddingMode.ZERO)\n"
    "    tz = ct.load(z, index=(ct.bid(0),), shape=(B,), padding_mode=ct.PaddingMode.ZERO)\n"
    "    ct.store(z, index=(ct.bid(0),), tile=tx + tz)\n"
    "    ct.store(w, index=(ct.bid(0),), tile=tx)\n")


def test_the_start_record_borrows_what_the_entry_says(rng):
    """A new start record's borrows are made in the same pass as its layout key: each is the
    ``Borrow`` that ``checks.borrows_of`` makes from the layout's entry (its written arrays),
    for tile kernels (partitions moved or borrowed, shared tensors, a view, an empty tensor)
    and for a plain cuTile kernel whose tensors are written unless proven read-only."""
    from cutile_lab.runtime.launch.checks import borrows_of
    n = int(rng.integers(300, 900))
    x, y = upload(rng, n), upload(rng, n)
    z, w = cl.zeros(n).sync(), cl.zeros(n).sync()
    ct_acc = cl.kernels_from_source(CT_ADD_INPLACE, "<ct_acc>")["ct_acc"]
    ops = [K.vadd(z.partition_mut(128), x, y), K.vadd(cl.zeros(n).sync().partition(64), x, y),
           K.vadd(cl.zeros(n - 8).sync().partition_mut(128), x[1:n - 7], y[3:n - 5]),
           K.saxpy(w.partition_mut(256), x, y, 2.0),
           K.vadd(cl.zeros(0).sync().partition_mut(128), x[:0], y[:0]),
           ct_acc(z, x, w, 128, grid=(-(-n // 128),))]
    for op in ops:
        op.sync()
        s = op._reuse
        assert s is not None and s.entry is not None
        expect = borrows_of(s.entry, s.values)
        assert [tuple(b) for b in s.borrows] == [tuple(b) for b in expect], op.label
        assert all(type(b) is type(e) for b, e in zip(s.borrows, expect))
    # the plain cuTile kernel: `z` and `w` are written, `x` is only read
    assert [(b.param, b.mut) for b in ops[-1]._reuse.borrows] == \
        [("z", True), ("x", False), ("w", True)]
    np.testing.assert_allclose(w.to_numpy(), x.to_numpy(), rtol=1e-6)


def test_a_new_start_record_checks_moves_as_it_is_made(rng):
    """The move checks of a new start record run in the pass that makes it: a moved tensor, a
    used-up partition and a view that a move ended are each refused (TL102) on a first start,
    with the layout's entry cached and without it."""
    n = 256
    x, y = upload(rng, n), upload(rng, n)
    K.vadd(cl.zeros(n).sync().partition_mut(128), x, y).sync()     # the layout's entry cached
    for cached in (True, False):
        m = n if cached else n + 128
        a, b = upload(rng, m), upload(rng, m)
        view = a[:]
        a.partition(128)                                   # `a` moves; `view` ends with it
        p = cl.zeros(m).sync().partition_mut(128)
        p.release()                                        # the borrow ends: `p` is used up
        for args in ((cl.zeros(m).sync().partition_mut(128), a, b),
                     (cl.zeros(m).sync().partition_mut(128), view, b),
                     (p, b, b)):
            op = K.vadd(*args)
            with pytest.raises(OwnershipError) as e:
                op.sync()
            assert codes(e) == ["TL102"], cached
            assert op._reuse is None


def test_a_library_call_of_a_known_key_binds_as_the_first_did(rng):
    """``launch_into`` keeps per key (kernel, output, positional count, const keywords) what the
    first call of the key bound; a later call's op is the op the ordinary binding would build:
    the same parameters bound, consts, output, backend and resolving, for positional calls,
    scalars and const keywords."""
    from cutile_lab.runtime.launch.output import OutputLaunchOp, output_plan
    n = int(rng.integers(200, 700))
    x, y = upload(rng, n), upload(rng, n)
    a = cl.from_numpy(rng.standard_normal((64, 32)).astype(np.float16)).sync()
    b = cl.from_numpy(rng.standard_normal((32, 64)).astype(np.float16)).sync()
    calls = [(K.vadd, (n,), "f32", 128, (x, y), {}),
             (K.saxpy, (n,), "f32", 256, (x, y, float(rng.random())), {}),
             (K.saxpy, (n,), "f32", 256, (x, y, np.float32(rng.random())), {}),
             (K.gemm16, (64, 64), "f16", (32, 32), (a, b), {"BK": 16}),
             (K.vadd, (n,), "f32", 128, (x, y.to_numpy()), {})]
    fields = ("kernel", "info", "label", "_out", "_fresh", "bound", "explicit_consts",
              "_consts_key", "backend", "_inputs_plain")
    for kernel, shape, dtype, tile, args, kwargs in calls:
        for _ in range(2):                         # the key's first call, then a known key
            plan = output_plan(kernel, shape, dtype, tile, args, kwargs)
            assert plan is not None
            ref = OutputLaunchOp(kernel, shape, dtype, tile, args, kwargs, where=("f", 1))
            got = plan.op(args, ("f", 1))
            for f in fields:
                assert getattr(got, f) == getattr(ref, f), (kernel.name, f)
    # keywords that bind parameters are bound per call: no plan
    assert output_plan(K.vadd, (n,), "f32", 128, (x,), {"y": y}) is None
    out = launch_into(K.gemm16, (64, 64), "f16", (32, 32), a, b, BK=16).sync()
    np.testing.assert_allclose(out.to_numpy(), a.to_numpy().astype(np.float32)
                               @ b.to_numpy().astype(np.float32), rtol=2e-2, atol=2e-2)
    z = launch_into(K.vadd, (n,), "f32", 128, x, y=y).sync()
    np.testing.assert_allclose(z.to_numpy(), x.to_numpy() + y.to_numpy(), rtol=1e-6)
    for _ in range(2):                             # a call that does not bind: at this line
        with pytest.raises(OwnershipError) as e:
            launch_into(K.vadd, (n,), "f32", 128, x, y, bogus=1)
        assert codes(e) == ["TL117"] and e.value.diagnostics[0].span.filename == __file__


def test_a_library_call_of_a_known_key_is_still_checked(rng):
    """Every start of a planned library call runs the one start path with all its checks: an
    input written by work in flight is refused (TL104), a moved input too (TL102)."""
    n = 512
    x, y, w = upload(rng, n), upload(rng, n), upload(rng, n)
    for _ in range(3):
        launch_into(K.vadd, (n,), "f32", 128, x, y).sync()       # the key's plan made, used
    writer = K.accumulate(x.partition_mut(128), w).start()        # writes x, in flight
    with pytest.raises(OwnershipError) as e:
        launch_into(K.vadd, (n,), "f32", 128, x, y).sync()
    assert codes(e) == ["TL104"]
    writer.wait()
    z = launch_into(K.vadd, (n,), "f32", 128, x, y).sync()
    np.testing.assert_allclose(z.to_numpy(), x.to_numpy() + y.to_numpy(), rtol=1e-6)
    x.partition(128)                                              # x moves
    with pytest.raises(OwnershipError) as e:
        launch_into(K.vadd, (n,), "f32", 128, x, y).sync()
    assert codes(e) == ["TL102"]
