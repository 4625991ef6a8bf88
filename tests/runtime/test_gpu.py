"""The runtime on a real GPU: launches, partitions, async pipelines, graphs, interop and every
launch-level diagnostic on device tensors. Skipped without a GPU."""
import asyncio
import time

import numpy as np
import pytest

import cutile_lab as cl
from cutile_lab.errors import LaunchError
from cutile_lab.runtime import OwnershipError, Partition, Tensor
from cutile_lab.runtime.driver import RawLaunch
from tests.runtime import kernels as K

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("gpu")]


def codes(e) -> list[str]:
    return sorted({d.code for d in e.value.diagnostics})


def upload(a):
    return cl.from_numpy(a).sync()


def test_device_info():
    info = cl.device_info()
    assert info.sm_count > 0 and info.arch.startswith("sm_")
    assert info.total_memory > 2**30
    assert info.name in cl.describe_device()
    assert info.theoretical_bandwidth > 1e11
    assert cl.backend() == "gpu"


def test_creation_on_device(rng):
    assert (cl.zeros((3, 5)).sync().to_numpy() == 0).all()
    assert (cl.full(1000, 2.5).sync().to_numpy() == 2.5).all()
    assert (cl.full(7, 3, cl.i64).sync().to_numpy() == 3).all()
    assert (cl.full(7, -1.5, cl.f64).sync().to_numpy() == -1.5).all()
    assert (cl.ones(9, cl.f16).sync().to_numpy() == 1).all()
    np.testing.assert_array_equal(cl.arange(100).sync().to_numpy(), np.arange(100))
    a = rng.standard_normal((33, 17)).astype(np.float32)
    t = upload(a)
    np.testing.assert_array_equal(t.to_numpy(), a)
    np.testing.assert_array_equal(t[3:20:3, 1::2].to_numpy(), a[3:20:3, 1::2])
    np.testing.assert_array_equal(t.T.to_numpy(), a.T)
    r = cl.rand(1 << 16).sync().to_numpy()
    assert 0 <= r.min() and r.max() < 1 and 0.45 < r.mean() < 0.55


@pytest.mark.parametrize("n,tile", [(1000, 128), (127, 128), ((1 << 20) + 3, 1024)])
def test_vector_add_ragged(n, tile, rng):
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    x, y = upload(a), upload(b)
    z = cl.zeros(n).sync()
    op = K.vadd(z.partition(tile), x, y)
    zp, x2, y2 = op.sync()
    assert isinstance(zp, Partition) and x2 is x and y2 is y
    assert op.compiled.consts == {"B": tile}
    np.testing.assert_array_equal(zp.unpartition().to_numpy(), a + b)


def test_cached_launch_reuses_the_loaded_kernel(rng):
    from cutile_lab.runtime.launch import kernel_info
    a = rng.standard_normal(4096).astype(np.float32)
    x = upload(a)
    z = cl.zeros(4096).sync()
    plans = kernel_info(K.scale).plans
    before = set(plans)
    for i in range(3):
        K.scale(z.partition_mut(128), x, float(i + 1)).sync()
        np.testing.assert_allclose(z.to_numpy(), (i + 1) * a, rtol=1e-6)
    assert len(set(plans) - before) == 1          # compiled and loaded once
    # a view with a different alignment / inner stride is a different specialization
    K.scale(z[1:].partition_mut(128), x[:-1], 1.0).sync()
    K.scale(z[:2048].partition_mut(128), x[::2], 1.0).sync()
    np.testing.assert_allclose(z[:2048].to_numpy(), a[::2], rtol=1e-6)
    layouts = [dict(k[2]) for k in set(plans) - before]
    assert len(layouts) == 3
    assert any(lay["z"].base_align == 4 for lay in layouts)
    assert any(not lay["x"].contiguous for lay in layouts)


def test_2d_ragged_tiles_and_strided_input(rng):
    a = rng.standard_normal((300, 2 * 190)).astype(np.float32)
    b = rng.standard_normal((300, 190)).astype(np.float32)
    x = upload(a)[:, ::2]
    y = upload(b)
    z = cl.zeros((300, 190)).sync()
    zp, _, _ = K.add2d(z.partition((64, 64)), x, y).sync()
    assert zp.grid == (5, 3)
    np.testing.assert_array_equal(zp.unpartition().to_numpy(), a[:, ::2] + b)


def test_softmax_rows(rng):
    a = (3 * rng.standard_normal((1000, 1024))).astype(np.float32)
    x = upload(a)
    out = cl.empty((1000, 1024))
    op, _ = K.softmax_rows(out.partition((1, 1024)), x).sync()
    e = np.exp(a - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(op.unpartition().to_numpy(), e / e.sum(axis=1, keepdims=True),
                               rtol=1e-4, atol=1e-7)


def test_gemm_f16_against_float64(rng):
    m, n, k = 512, 384, 320
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = cl.zeros((m, n), cl.f16).sync()
    cp, _, _ = K.gemm16(c.partition((128, 128)), upload(a), upload(b), BK=64).sync()
    ref = a.astype(np.float64) @ b.astype(np.float64)
    got = cp.unpartition().to_numpy().astype(np.float64)
    err = np.abs(got - ref).max()
    assert err < 0.02 * np.abs(ref).max(), err
    np.testing.assert_allclose(got, ref, rtol=2e-2, atol=0.1)


def test_scalar_and_integer_widths(rng):
    a = rng.integers(-2**31, 2**31 - 1, size=5000, dtype=np.int32)
    x = upload(a)
    z = cl.zeros(5000, cl.i32).sync()
    K.copy_i32(z.partition_mut(512), x).sync()
    np.testing.assert_array_equal(z.to_numpy(), a)
    f = rng.standard_normal(5000).astype(np.float32)
    xf, yf = upload(f), upload(f[::-1].copy())
    zf = cl.zeros(5000).sync()
    K.saxpy(zf.partition_mut(512), xf, yf, np.float64(0.25)).sync()
    np.testing.assert_allclose(zf.to_numpy(), np.float32(0.25) * f + f[::-1], rtol=1e-6)


def test_plain_cutile_kernel_with_explicit_grid(rng):
    src = (
        "import cuda.tile as ct\n"
        "@ct.kernel\n"
        "def ct_add(z, x, y, B: ct.Constant[int]):\n"
        "    tx = ct.load(x, index=(ct.bid(0),), shape=(B,), padding_mode=ct.PaddingMode.ZERO)\n"
        "    ty = ct.load(y, index=(ct.bid(0),), shape=(B,), padding_mode=ct.PaddingMode.ZERO)\n"
        "    ct.store(z, index=(ct.bid(0),), tile=tx + ty)\n")
    ct_add = cl.kernels_from_source(src, "<ct_add>")["ct_add"]
    a = rng.standard_normal(3000).astype(np.float32)
    x = upload(a)
    z = cl.zeros(3000).sync()
    cl.launch(ct_add, z, x, x, B=256, grid=12).sync()
    np.testing.assert_array_equal(z.to_numpy(), 2 * a)


# --- async ---------------------------------------------------------------------------------------

def test_then_pipeline_on_one_stream(rng):
    a = rng.standard_normal(1 << 20).astype(np.float32)
    x = upload(a)
    op = cl.zeros(1 << 20) \
        .then(lambda z: K.scale(z.partition(1024), x, 2.0)) \
        .then(lambda zp, x_, alpha: K.accumulate(zp, x_)) \
        .then(lambda zp, x_: zp.unpartition())
    z = op.sync()
    np.testing.assert_allclose(z.to_numpy(), 3 * a, rtol=1e-6)
    s = cl.stream()
    z2 = cl.ones(1 << 10).sync_on(s)
    assert (z2.to_numpy() == 1).all()


def test_await_and_concurrent_ops(rng):
    a = rng.standard_normal(1 << 22).astype(np.float32)
    b = rng.standard_normal(1 << 22).astype(np.float32)

    async def main():
        x = await cl.from_numpy(a)
        y = await cl.from_numpy(b)
        z1, z2 = await asyncio.gather(cl.zeros(1 << 22), cl.zeros(1 << 22))
        ticks = 0

        async def ticker():
            nonlocal ticks
            while ticks < 1000:
                ticks += 1
                await asyncio.sleep(0)

        t = asyncio.ensure_future(ticker())
        (p1, _, _), (p2, *_) = await asyncio.gather(
            K.vadd(z1.partition(1024), x, y), K.saxpy(z2.partition(1024), x, y, -1.0))
        t.cancel()
        return p1.unpartition(), p2.unpartition(), ticks

    z1, z2, ticks = asyncio.run(main())
    np.testing.assert_array_equal(z1.to_numpy(), a + b)
    np.testing.assert_allclose(z2.to_numpy(), -a + b, rtol=1e-6)
    assert ticks > 0                 # the loop kept running while the GPU worked


def test_pending_releases_borrows_when_done(rng):
    x = cl.ones(1 << 20).sync()
    z = cl.zeros(1 << 20).sync()
    pending = K.scale(z.partition_mut(1024), x, 2.0).start()
    deadline = time.time() + 10
    while not pending.done():
        assert time.time() < deadline
    assert (z.to_numpy() == 2).all()   # the completed work released its borrow by itself


def test_same_stream_launches_are_ordered():
    x = cl.ones(1 << 16).sync()
    z = cl.zeros(1 << 16).sync()
    s = cl.stream()
    pendings = [K.accumulate(z.partition_mut(1024), x).start(s) for _ in range(20)]
    pendings[-1].wait()
    assert (z.to_numpy() == 20).all()


# --- graphs --------------------------------------------------------------------------------------

def test_graph_replayed_100_times(rng):
    a = rng.standard_normal(1 << 18).astype(np.float32)
    x = upload(a)
    z = cl.zeros(1 << 18).sync()
    g = cl.graph(K.accumulate(z.partition_mut(1024), x))
    assert g.num_kernels == 1
    assert (z.to_numpy() == 0).all()            # capture runs nothing
    g.replay(100)
    np.testing.assert_allclose(z.to_numpy(), 100 * a, rtol=1e-4, atol=1e-4)


def test_graph_of_a_chain_with_creation(rng):
    a = rng.standard_normal(1 << 16).astype(np.float32)
    x = upload(a)
    op = cl.zeros(1 << 16).then(lambda z: K.accumulate(z.partition(512), x))
    for _ in range(4):
        op = op.then(lambda zp, x_: K.accumulate(zp, x_))
    g = cl.graph(op)
    assert g.num_kernels == 5
    zp, _ = g.replay(3)
    np.testing.assert_allclose(zp.tensor.to_numpy(), 5 * a, rtol=1e-5)   # zeroed each replay


def test_graph_replay_checks_ownership():
    x = cl.ones(1 << 16).sync()
    z = cl.zeros(1 << 16).sync()
    p = z.partition(1024)
    g = cl.graph(K.accumulate(p, x))
    g.replay()
    z = p.unpartition()
    with pytest.raises(OwnershipError) as e:
        g.replay()
    assert codes(e) == ["TL102"]


# --- interop -------------------------------------------------------------------------------------

def test_torch_interop_both_ways(rng):
    torch = pytest.importorskip("torch")
    tx = torch.randn(10_000, device="cuda")
    ty = torch.randn(10_000, device="cuda")
    tz = torch.empty(10_000, device="cuda")
    # torch tensors straight into a launch, written in place
    K.vadd(cl.asarray(tz).partition_mut(1024), tx, ty).sync()
    torch.testing.assert_close(tz, tx + ty, rtol=0, atol=0)
    # zero-copy wrap
    t = cl.asarray(tx)
    assert isinstance(t, Tensor) and t.ptr == tx.data_ptr() and str(t.dtype) == "f32"
    # ours into torch: __cuda_array_interface__ and DLPack, both zero-copy
    z = cl.randn((64, 48)).sync()
    via_cai = torch.as_tensor(z, device="cuda")
    via_dlpack = torch.from_dlpack(z)
    assert via_cai.data_ptr() == z.ptr == via_dlpack.data_ptr()
    np.testing.assert_array_equal(via_dlpack.cpu().numpy(), z.to_numpy())
    v = z[:, 1::3]
    tv = torch.from_dlpack(v)
    assert tv.stride() == (48, 3) and tv.data_ptr() == v.ptr
    np.testing.assert_array_equal(tv.cpu().numpy(), v.to_numpy())
    h = cl.ones(100, "bf16").sync()
    th = torch.from_dlpack(h)
    assert th.dtype == torch.bfloat16 and (th == 1).all()
    back = cl.asarray(torch.full((50,), 2.0, dtype=torch.bfloat16, device="cuda"))
    assert str(back.dtype) == "bf16"
    # the exported tensor stays alive as long as torch holds it
    keep = torch.from_dlpack(cl.full(1000, 7.0).sync())
    import gc
    gc.collect()
    assert (keep == 7).all()


def test_torch_stream_ordering(rng):
    torch = pytest.importorskip("torch")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        big = torch.ones(1 << 24, device="cuda")
        for _ in range(10):
            big.mul_(2.0)                 # queued on torch's stream
        t = cl.asarray(big)              # wrapped while that work may still run
    out = cl.zeros(1 << 24).sync()
    K.scale(out.partition_mut(4096), t, 1.0).sync()
    assert (out.to_numpy() == 1024.0).all()


def test_cupy_interop_both_ways(rng):
    cp = pytest.importorskip("cupy")
    cx = cp.random.standard_normal(5000, dtype=cp.float32)
    cz = cp.zeros(5000, dtype=cp.float32)
    K.vadd(cl.asarray(cz).partition_mut(512), cx, cx).sync()
    cp.testing.assert_array_equal(cz, 2 * cx)
    z = cl.randn(300).sync()
    c = cp.asarray(z)
    assert c.data.ptr == z.ptr
    cp.testing.assert_array_equal(c, cp.asarray(z.to_numpy()))
    c2 = cp.from_dlpack(z)
    assert c2.data.ptr == z.ptr


# --- every launch-level diagnostic on device tensors ----------------------------------------------

@pytest.fixture
def gate():
    from tests.runtime.gpu_helpers import Gate
    g = Gate()
    yield g
    g.close()


def _hold(gate, s, x):
    from tests.runtime.gpu_helpers import hold
    big = cl.zeros(1 << 24).sync()
    hold(s, gate, lambda: K.scale(big.partition_mut(4096), cl.ones(1 << 24).sync(), 1.0))


def test_diag_aliasing(rng):
    x = cl.randn(4096).sync()
    z = cl.zeros(4096).sync()
    with pytest.raises(OwnershipError) as e:                       # TL100
        K.vadd(z.partition_mut(512), z, x).sync()
    assert codes(e) == ["TL100"]
    with pytest.raises(OwnershipError) as e:                       # TL100 through a view
        K.vadd(z[:2048].partition_mut(512), z[1024:3072], x[:2048]).sync()
    assert codes(e) == ["TL100"]
    K.vadd(z[:2048].partition_mut(512), z[2048:], x[:2048]).sync()  # disjoint halves: fine
    with pytest.raises(OwnershipError) as e:                       # TL101
        K.two_outputs(z.partition_mut(512), z.partition_mut(512), x).sync()
    assert codes(e) == ["TL101"]


def test_diag_use_after_move():
    z = cl.zeros(4096).sync()
    p = z.partition(512)
    with pytest.raises(OwnershipError) as e:                       # TL102
        z.to_numpy()
    assert codes(e) == ["TL102"]
    with pytest.raises(OwnershipError) as e:
        K.scale(p, z, 1.0).sync()
    assert codes(e) == ["TL102"]


def test_diag_in_flight(gate):
    x = cl.ones(1 << 20).sync()
    z = cl.zeros(1 << 20).sync()
    w = cl.zeros(1 << 20).sync()
    s = cl.stream()
    _hold(gate, s, x)
    pending = K.scale(z.partition_mut(1024), x, 2.0).start(s)
    try:
        with pytest.raises(OwnershipError) as e:                   # TL103
            z.to_numpy()
        assert codes(e) == ["TL103"]
        with pytest.raises(OwnershipError) as e:
            z.__cuda_array_interface__
        assert codes(e) == ["TL103"]
        with pytest.raises(OwnershipError) as e:                   # TL104
            K.scale(w.partition_mut(1024), z, 1.0).sync()
        assert codes(e) == ["TL104"]
        with pytest.raises(OwnershipError) as e:                   # TL105
            K.scale(x.partition_mut(1024), w, 1.0).sync()
        assert codes(e) == ["TL105"]
        assert not pending.done()
    finally:
        gate.open()
    pending.wait()
    assert (z.to_numpy() == 2).all()


def test_diag_signature_mismatches(rng):
    x = cl.randn(4096).sync()
    z = cl.zeros(4096).sync()
    cases = [
        (lambda: K.fixed128(z.partition_mut(256), x), "TL110"),          # tile != fixed 128
        (lambda: K.softmax_rows(cl.zeros((4, 256)).sync().partition((1, 128)),
                                cl.zeros((4, 256)).sync()), "TL111"),   # N: 128 vs 256
        (lambda: K.vadd(z.partition_mut(256), cl.zeros(4096, cl.f16).sync(), x), "TL112"),
        (lambda: K.vadd(z.partition_mut(256), cl.zeros((64, 64)).sync(), x), "TL113"),
        (lambda: K.vadd(z, x, x), "TL115"),                              # Mut not partitioned
        (lambda: K.vadd(z.partition_mut(256), x.partition_mut(256), x), "TL116"),
        (lambda: K.saxpy(z.partition_mut(256), x, x, x), "TL118"),       # tensor for a scalar
        (lambda: K.two_outputs(z.partition_mut(256), cl.zeros(8192).sync().partition_mut(256),
                               x), "TL119"),
    ]
    for make, code in cases:
        with pytest.raises((OwnershipError, LaunchError)) as e:
            make().sync()
        got = [d.code for d in getattr(e.value, "diagnostics", ())]
        assert code in got, (code, got, str(e.value))


def test_diag_missing_argument_and_ragged_note():
    with pytest.raises(OwnershipError) as e:                              # missing arguments
        K.vadd(cl.zeros(10).sync().partition(8))
    assert codes(e) == ["TL117"]
    op = K.vadd(cl.zeros(1000).partition(128), cl.ones(1000), cl.ones(1000))
    op.sync()
    assert [d.code for d in op.diagnostics] == ["TL114"]                  # ragged: a note


# --- the cached start path (ctypes cuLaunchKernel, recycled events) ------------------------------

def test_restarted_ops_launch_the_right_arguments(rng):
    import importlib
    L = importlib.import_module("cutile_lab.runtime.launch")
    a = rng.standard_normal(1 << 16).astype(np.float32)
    x = upload(a)
    z = cl.zeros(1 << 16).sync()
    s = cl.stream()
    op = K.accumulate(z.partition_mut(1024), x)
    pendings = [op.start(s) for _ in range(10)]
    pendings[-1].wait()
    np.testing.assert_allclose(z.to_numpy(), 10 * a, rtol=1e-5)
    assert op._reuse is not None and op._entry.raw is not False   # the ctypes launch was used
    # one entry, scalars written per op: 2.0 and 3.0 alternate on the same packed buffer
    p = z.partition_mut(1024)
    two, three = K.scale(p, x, 2.0), K.scale(p, x, 3.0)
    for op_, k in ((two, 2), (three, 3), (two, 2), (three, 3), (three, 3), (two, 2)):
        op_.sync_on(s)
        np.testing.assert_allclose(z.to_numpy(), k * a, rtol=1e-6)
    assert two._entry is three._entry and isinstance(two._entry.raw, RawLaunch)
    for _ in range(5):
        two.start(s)
        last = three.start(s)
    last.wait()
    np.testing.assert_allclose(z.to_numpy(), 3 * a, rtol=1e-6)
    # a new op of the same layout (a new partition object) reuses the packed launch
    again = K.accumulate(z.partition_mut(1024), x)
    again.sync()
    np.testing.assert_allclose(z.to_numpy(), 4 * a, rtol=1e-6)


def test_restarted_ops_are_still_checked(gate):
    x = cl.ones(1 << 20).sync()
    y = cl.ones(1 << 20).sync()
    z = cl.zeros(1 << 20).sync()
    w = cl.zeros(1 << 20).sync()
    reader = K.scale(w.partition_mut(1024), z, 1.0)        # reads z
    writer = K.scale(z.partition_mut(1024), x, 2.0)        # writes z, reads x
    clobber = K.vadd(x.partition_mut(1024), w, y)          # writes x
    for op in (clobber, reader, writer, reader, writer):  # clobber first: x = 0 + 1
        op.sync()
    s = cl.stream()
    _hold(gate, s, x)
    pending = writer.start(s)
    try:
        with pytest.raises(OwnershipError) as e:           # TL104, re-started op
            reader.sync()
        assert codes(e) == ["TL104"]
        with pytest.raises(OwnershipError) as e:           # TL104, rebuilt op
            K.scale(w.partition_mut(1024), z, 1.0).sync()
        assert codes(e) == ["TL104"]
        with pytest.raises(OwnershipError) as e:           # TL105
            clobber.sync()
        assert codes(e) == ["TL105"]
        assert not pending.done()
    finally:
        gate.open()
    pending.wait()
    reader.sync()
    assert (w.to_numpy() == 2).all()
    y.partition(1024)                                      # y moves: clobber can't use it
    with pytest.raises(OwnershipError) as e:               # TL102, re-started op
        clobber.sync()
    assert codes(e) == ["TL102"]


# --- lazy completion events: joined starts, covering events, idle streams ------------------------

def _lane_flights(s):
    import importlib
    ownership = importlib.import_module("cutile_lab.runtime.ownership")
    from cutile_lab.runtime.device import gpu
    lane, _ = gpu().stream_handles(s)
    return list(ownership._lanes.get(lane, ()))


def test_repeated_starts_join_one_flight_and_stay_checked(gate, rng):
    a = rng.standard_normal(1 << 16).astype(np.float32)
    x = upload(a)
    z = cl.zeros(1 << 16).sync()
    op = K.accumulate(z.partition_mut(1024), x)
    op.sync()                      # loaded before the gate: a first launch may wait for others
    cl.synchronize()                                   # nothing in flight on other streams
    s = cl.stream()
    _hold(gate, s, x)
    pendings = [op.start(s) for _ in range(5)]
    try:
        flights = _lane_flights(s)
        assert len(flights) == 1 and all(p.flight is flights[0] for p in pendings), \
            [(f.label, f.event, f.ready, f.reuse, f.done) for f in flights]
        assert flights[0].event is None                # no event recorded per start
        with pytest.raises(OwnershipError) as e:       # TL103 while the joined flight runs
            z.to_numpy()
        assert codes(e) == ["TL103"]
        assert not pendings[0].done()
        assert flights[0].event is not None            # asking recorded a covering event
        more = op.start(s)                             # covered: a new flight, not a join
        assert more.flight is not flights[0] and len(_lane_flights(s)) == 2
    finally:
        gate.open()
    pendings[0].wait()                                 # waits for the first flight...
    assert _lane_flights(s) == [more.flight]
    more.wait()                                        # ...and this one for the sixth start
    assert _lane_flights(s) == []
    np.testing.assert_allclose(z.to_numpy(), 7 * a, rtol=1e-5)


def test_new_ops_of_the_same_arguments_join_like_a_repeated_start(gate, rng):
    """``kernel(p, x).start(s)`` in a loop: each call builds a new op of the very same objects
    from the same line, which joins the previous start like ``op.start(s)`` does."""
    a = rng.standard_normal(1 << 16).astype(np.float32)
    x = upload(a)
    z = cl.zeros(1 << 16).sync()
    p = z.partition_mut(1024)
    K.accumulate(p, x).sync()
    cl.synchronize()
    s = cl.stream()
    _hold(gate, s, x)
    try:
        pendings = [K.accumulate(p, x).start(s) for _ in range(4)]
        flights = _lane_flights(s)
        assert len(flights) == 1 and all(q.flight is flights[0] for q in pendings)
        with pytest.raises(OwnershipError) as e:       # still checked: TL103
            z.to_numpy()
        assert codes(e) == ["TL103"]
        px = x.partition(1024)                          # moved: the next new op is refused
        with pytest.raises(OwnershipError) as e:
            K.accumulate(p, x).start(s)
        assert codes(e) == ["TL102"]
    finally:
        gate.open()
    pendings[0].wait()
    assert px.unpartition() is not None
    np.testing.assert_allclose(z.to_numpy(), 5 * a, rtol=1e-5)


def test_uncovered_flight_is_done_once_its_stream_is_idle(rng):
    x = cl.ones(1 << 16).sync()
    z = cl.zeros(1 << 16).sync()
    s = cl.stream()
    pending = K.scale(z.partition_mut(1024), x, 2.0).start(s)
    s.sync()                                           # not through the Pending
    assert pending.flight.event is None and not pending.flight.done
    assert pending.done() and pending.flight.done      # cuStreamQuery: idle, released
    assert (z.to_numpy() == 2).all()


def test_reap_covers_then_releases_uncovered_flights(gate):
    import importlib
    ownership = importlib.import_module("cutile_lab.runtime.ownership")
    x = cl.ones(1 << 16).sync()
    z = cl.zeros(1 << 16).sync()
    w = cl.zeros(1 << 16).sync()
    K.scale(z.partition_mut(1024), x, 2.0).sync()   # loaded before the gate
    s = cl.stream()
    _hold(gate, s, x)
    first = K.scale(z.partition_mut(1024), x, 2.0).start(s)
    second = K.scale(w.partition_mut(1024), x, 3.0).start(s)
    try:
        ownership.reap()
        assert first.flight.event is not None and first.flight.event is second.flight.event
        assert not first.flight.done and not second.flight.done
    finally:
        gate.open()
    s.sync()
    ownership.reap()
    assert first.flight.done and second.flight.done
    assert (z.to_numpy() == 2).all() and (w.to_numpy() == 3).all()


def test_new_outputs_each_get_their_own_pointer(rng):
    """A library call's entry serves every new output of its layout: the output's pointer is
    packed per launch (ctypes and cuda.core paths, with and without scalars), so outputs kept
    alive — each at a new address — each hold their own result."""
    from cutile_lab.runtime.launch import kernel_info, launch_into
    a = rng.standard_normal(1 << 14).astype(np.float32)
    b = rng.standard_normal(1 << 14).astype(np.float32)
    x, y = upload(a), upload(b)
    n = 1 << 14
    sums = [launch_into(K.vadd, (n,), "f32", 1024, x, y).sync() for _ in range(4)]
    scaled = [launch_into(K.scale, (n,), "f32", 1024, x, float(k)).sync() for k in range(4)]
    s = cl.stream()
    started = [launch_into(K.scale, (n,), "f32", 1024, y, float(k)).start(s) for k in range(4)]
    later = [p.wait() for p in started]
    assert len({t.ptr for t in sums + scaled + later}) == 12
    for t in sums:
        np.testing.assert_allclose(t.to_numpy(), a + b, rtol=1e-6)
    for k, t in enumerate(scaled):
        np.testing.assert_allclose(t.to_numpy(), k * a, rtol=1e-6)
    for k, t in enumerate(later):
        np.testing.assert_allclose(t.to_numpy(), k * b, rtol=1e-6)
    fresh = [e for e in kernel_info(K.vadd).entries.values() if e.fresh is not None]
    assert fresh and all(e.fresh[0] == 0 for e in fresh)       # the output's pointer slot
