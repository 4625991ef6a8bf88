"""Launches, partitions, moves, borrows and DeviceOp composition on the simulator backend."""
import asyncio

import numpy as np
import pytest

import cutile_lab as cl
from cutile_lab.errors import LaunchError
from cutile_lab.runtime import OwnershipError, Partition
from tests.runtime import kernels as K

pytestmark = pytest.mark.usefixtures("sim")


def codes(excinfo) -> list[str]:
    return [d.code for d in excinfo.value.diagnostics]


@pytest.mark.parametrize("n,tile", [(1000, 128), (127, 128), (1024, 128), (1, 64)])
def test_vector_add_ragged(n, tile, rng):
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    x, y = cl.from_numpy(a).sync(), cl.from_numpy(b).sync()
    z = cl.zeros(n).sync()
    p = z.partition(tile)
    assert p.grid == (-(-n // tile),) and p.ragged == bool(n % tile)
    zp, x2, y2 = K.vadd(p, x, y).sync()
    assert zp is p and x2 is x and y2 is y
    z = zp.unpartition()
    np.testing.assert_array_equal(z.to_numpy(), a + b)


def test_2d_ragged_and_strided_inputs(rng):
    a = rng.standard_normal((100, 140)).astype(np.float32)
    b = rng.standard_normal((100, 70)).astype(np.float32)
    x = cl.from_numpy(a).sync()[:, ::2]          # non-contiguous inner dim
    y = cl.from_numpy(b).sync()
    z = cl.zeros((100, 70)).sync()
    zp, _, _ = K.add2d(z.partition((32, 32)), x, y).sync()
    assert zp.grid == (4, 3)
    np.testing.assert_allclose(zp.unpartition().to_numpy(), a[:, ::2] + b, rtol=0, atol=0)


def test_softmax_rows(rng):
    a = rng.standard_normal((37, 256)).astype(np.float32)
    x = cl.from_numpy(a).sync()
    out = cl.empty((37, 256))
    op, _ = K.softmax_rows(out.partition((1, 256)), x).sync()
    e = np.exp(a - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(op.unpartition().to_numpy(), e / e.sum(axis=1, keepdims=True),
                               rtol=1e-5, atol=1e-6)


def test_gemm_f16_small(rng):
    m, n, k = 64, 96, 80
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = cl.zeros((m, n), cl.f16).sync()
    cp, _, _ = K.gemm16(c.partition((32, 32)), cl.from_numpy(a).sync(),
                        cl.from_numpy(b).sync(), BK=16).sync()
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(cp.unpartition().to_numpy().astype(np.float64), ref,
                               rtol=2e-2, atol=5e-2)


def test_scalar_argument_and_keywords(rng):
    a = rng.standard_normal(300).astype(np.float32)
    x = cl.from_numpy(a).sync()
    z = cl.zeros(300).sync()
    zp, _, _, alpha = K.saxpy(z.partition(128), x, y=x, alpha=2.5).sync()
    assert alpha == 2.5
    np.testing.assert_allclose(zp.unpartition().to_numpy(), 3.5 * a, rtol=1e-6)


def test_device_ops_as_arguments():
    z = cl.zeros(256).partition(64)               # a DeviceOp whose result is a partition
    zp, x, y = K.vadd(z, cl.ones(256), cl.full(256, 2.0)).sync()
    assert isinstance(zp, Partition)
    assert (zp.unpartition().to_numpy() == 3.0).all()


def test_numpy_arrays_as_arguments(rng):
    a = rng.standard_normal(200).astype(np.float32)
    out = np.zeros(200, np.float32)
    K.vadd(cl.asarray(out).partition(64), a, a).sync()
    np.testing.assert_array_equal(out, 2 * a)        # written in place, zero-copy


# --- moves -------------------------------------------------------------------------------------

def test_use_after_move_is_an_error_naming_the_move():
    z = cl.zeros(256).sync()
    p = z.partition(128)
    for use in (lambda: z.to_numpy(), lambda: np.asarray(z), lambda: z[1:],
                lambda: z.partition(64), lambda: K.vadd(z.partition_mut(128), p, p).sync()):
        with pytest.raises(OwnershipError) as e:
            use()
        d = e.value.diagnostics[0]
        assert d.code == "TL102"
        assert "`z`" in d.message and "moved into a partition" in d.message
        assert d.labels and d.labels[0].span.filename == __file__
    assert "moved into a partition" in repr(z)


def test_moved_tensor_passed_to_launch():
    x = cl.ones(128).sync()
    z = cl.zeros(128).sync()
    p = z.partition(64)
    with pytest.raises(OwnershipError) as e:
        K.vadd(p, x, z).sync()
    assert codes(e) == ["TL102"]          # z is dead: it was moved into p
    moved = e.value.diagnostics[0]
    assert "`z`" in moved.message and any(l.message.endswith("moved into a partition here")
                                          for l in moved.labels)


def test_unpartition_gives_the_tensor_back_and_uses_up_the_partition():
    z = cl.zeros(256).sync()
    p = z.partition(128)
    K.vadd(p, cl.ones(256), cl.ones(256)).sync()
    z2 = p.unpartition()
    assert (z2.to_numpy() == 2).all()
    with pytest.raises(OwnershipError) as e:
        K.vadd(p, z2, z2).sync()
    assert codes(e) == ["TL102"] and "unpartition" in e.value.diagnostics[0].message


def test_partition_mut_leaves_tensor_usable(rng):
    a = rng.standard_normal(300).astype(np.float32)
    x = cl.from_numpy(a).sync()
    z = cl.zeros(300).sync()
    K.scale(z.partition_mut(128), x, 2.0).sync()
    np.testing.assert_allclose(z.to_numpy(), 2 * a)
    K.accumulate(z.partition_mut(128), x).sync()
    np.testing.assert_allclose(z.to_numpy(), 3 * a, rtol=1e-6)


def test_partition_mut_context_manager(rng):
    a = rng.standard_normal(300).astype(np.float32)
    x = cl.from_numpy(a).sync()
    z = cl.zeros(300).sync()
    with z.partition_mut(128) as p:
        pending = K.scale(p, x, 3.0).start()
        with pytest.raises(OwnershipError) as e:
            z.to_numpy()                           # borrowed until the block ends
        assert codes(e) == ["TL102"] and "borrowed" in e.value.diagnostics[0].message
    assert pending.done()                          # the block's exit waited for the work
    np.testing.assert_allclose(z.to_numpy(), 3 * a, rtol=1e-6)


def test_partition_shape_errors():
    z = cl.zeros((8, 8)).sync()
    with pytest.raises(LaunchError, match="rank"):
        z.partition(4)
    with pytest.raises(LaunchError, match="positive"):
        z.partition((0, 4))
    assert z.partition_mut((4, 4)).grid == (2, 2)


# --- in-flight borrows -----------------------------------------------------------------------

def test_host_access_while_in_flight_is_refused_then_allowed():
    x = cl.ones(256).sync()
    z = cl.zeros(256).sync()
    pending = K.scale(z.partition_mut(128), x, 2.0).start(); line = _line()
    for access in (z.to_numpy, lambda: np.asarray(z), lambda: np.from_dlpack(z)):
        with pytest.raises(OwnershipError) as e:
            access()
        d = e.value.diagnostics[0]
        assert d.code == "TL103"
        assert "`scale`" in d.message and "`z`" in d.message
        assert any(lab.span.line == line and "launched here" in lab.message
                   for lab in d.labels)
    # reading an input of in-flight work is fine
    assert (x.to_numpy() == 1).all()
    pending.wait()
    assert (z.to_numpy() == 2).all()


def _line():
    import sys
    return sys._getframe(1).f_lineno


def test_launch_using_in_flight_output_is_refused():
    x = cl.ones(256).sync()
    z = cl.zeros(256).sync()
    w = cl.zeros(256).sync()
    first = K.scale(z.partition_mut(128), x, 2.0).start()
    with pytest.raises(OwnershipError) as e:          # reads what in-flight work writes
        K.scale(w.partition_mut(128), z, 1.0).sync()
    assert codes(e) == ["TL104"]
    with pytest.raises(OwnershipError) as e:          # writes what in-flight work reads
        K.scale(x.partition_mut(128), w, 1.0).sync()
    assert codes(e) == ["TL105"]
    first.wait()
    K.scale(w.partition_mut(128), z, 1.0).sync()      # fine once it completed
    assert (w.to_numpy() == 2).all()


def test_views_overlap_in_flight_borrows():
    z = cl.zeros(256).sync()
    pending = K.scale(z[:128].partition_mut(64), cl.ones(128), 1.0).start()
    with pytest.raises(OwnershipError):
        z[100:110].to_numpy()
    assert (z[128:].to_numpy() == 0).all()            # disjoint memory: fine
    pending.wait()


def test_chain_orders_its_own_launches():
    x = cl.ones(256).sync()
    z = cl.zeros(256).sync()
    op = K.scale(z.partition_mut(128), x, 2.0).then(
        lambda p, x, a: K.accumulate(z.partition_mut(128), x))
    op.sync()
    assert (z.to_numpy() == 3).all()


# --- DeviceOp composition ----------------------------------------------------------------------

def test_then_chains_and_tuple_unpacking():
    op = cl.zeros(256).then(lambda z: K.scale(z.partition(128), cl.ones(256), 4.0)) \
        .then(lambda p, x, alpha: p.unpartition())
    z = op.sync()
    assert (z.to_numpy() == 4).all()
    assert cl.value(3).then(lambda v: v + 1).sync() == 4
    a, b = cl.zip(cl.ones(3), cl.zeros(3)).sync()
    assert (a.to_numpy() == 1).all() and (b.to_numpy() == 0).all()


def test_then_with_a_function_that_cannot_take_the_result_is_a_located_error():
    """It was the lambda's TypeError raised from inside the runtime."""
    with pytest.raises(LaunchError, match=r"cannot take the result of `cl.zeros` \(one Tensor\)") \
            as e:
        cl.zeros(4).then(lambda a, b, c: a).sync()
    assert "one parameter per item" in e.value.help and e.value.span.line > 0
    pair = cl.zip(cl.ones(3), cl.zeros(3))
    with pytest.raises(LaunchError, match="a tuple of 2"):
        pair.then(lambda a, b, c: a).sync()

    def broken(t):                  # a TypeError of the user's own code stays theirs
        return t + "x"
    with pytest.raises(TypeError):
        cl.value(3).then(broken).sync()
    assert (cl.ones(4).sync().to_numpy() == 1).all()     # the runtime goes on


def test_sync_on_and_start():
    s = cl.stream()
    z = cl.ones(8).sync_on(s)
    assert (z.to_numpy() == 1).all()
    pending = cl.zeros(8).start()
    assert "Pending" in repr(pending)
    assert (pending.wait().to_numpy() == 0).all()
    with pytest.raises(LaunchError, match="never started") as e:      # an AttributeError before
        cl.zeros(8).wait()
    assert "op.sync()" in e.value.help and "p.wait()" in e.value.help


def test_await_runs_ops_without_blocking_the_loop(rng):
    a = rng.standard_normal(512).astype(np.float32)

    async def main():
        x = await cl.from_numpy(a)
        z = await cl.zeros(512)
        ticks = 0

        async def ticker():
            nonlocal ticks
            for _ in range(3):
                ticks += 1
                await asyncio.sleep(0)

        (zp, _, _), _ = await asyncio.gather(K.scale(z.partition(128), x, 2.0), ticker())
        return zp.unpartition(), ticks

    z, ticks = asyncio.run(main())
    np.testing.assert_allclose(z.to_numpy(), 2 * a)
    assert ticks == 3


def test_graph_replay_on_sim():
    x = cl.ones(256).sync()
    z = cl.zeros(256).sync()
    g = cl.graph(K.accumulate(z.partition_mut(128), x))
    g.replay(5)
    assert (z.to_numpy() == 5).all()
    assert "Graph" in repr(g)


def test_cutile_kernel_needs_a_grid(rng):
    src = (
        "import cuda.tile as ct\n"
        "@ct.kernel\n"
        "def ct_add(z, x, y, B: ct.Constant[int]):\n"
        "    tx = ct.load(x, index=(ct.bid(0),), shape=(B,), padding_mode=ct.PaddingMode.ZERO)\n"
        "    ty = ct.load(y, index=(ct.bid(0),), shape=(B,), padding_mode=ct.PaddingMode.ZERO)\n"
        "    ct.store(z, index=(ct.bid(0),), tile=tx + ty)\n")
    ct_add = cl.kernels_from_source(src, "<ct_add>")["ct_add"]
    a = rng.standard_normal(300).astype(np.float32)
    x = cl.from_numpy(a).sync()
    z = cl.zeros(300).sync()
    with pytest.raises(LaunchError, match="grid"):
        ct_add(z, x, x, 128).sync()
    ct_add(z, x, x, 128, grid=(3,)).sync()
    np.testing.assert_array_equal(z.to_numpy(), 2 * a)
    cl.launch(ct_add, z, x, x, B=128, grid=3).sync()
    np.testing.assert_array_equal(z.to_numpy(), 2 * a)
    for bad in ("a", (2.5,), (3, None), 2.0, (True,)):
        # a str was int()'s ValueError from inside the lab; a float was truncated silently
        with pytest.raises(LaunchError, match="bad grid") as e:
            cl.launch(ct_add, z, x, x, B=128, grid=bad).sync()
        assert "grid=(8, 4)" in e.value.help


def test_argument_binding_errors_are_tl117_at_the_call():
    z = cl.zeros(128).sync()
    cases = [(lambda: K.vadd(z.partition_mut(64), z, z, z), "takes 3 arguments, 4 were given"),
             (lambda: K.vadd(cl.zeros(4)), "gives no argument for `x`"),
             (lambda: K.vadd(cl.zeros(4), cl.zeros(4), cl.zeros(4), bogus=1),
              "has no parameter `bogus`"),
             (lambda: K.vadd(cl.zeros(4), cl.zeros(4), cl.zeros(4), y=1), "`y` is given twice")]
    for call, message in cases:
        with pytest.raises(cl.OwnershipError) as e:
            call()
        assert [d.code for d in e.value.diagnostics] == ["TL117"] or \
            "TL117" in [d.code for d in e.value.diagnostics]
        assert message in str(e.value)
        assert e.value.diagnostics[0].span.filename == __file__


def test_kernel_call_returns_lazy_op():
    op = K.vadd(cl.zeros(4).partition(4), cl.zeros(4), cl.zeros(4))
    assert isinstance(op, cl.DeviceOp) and "launch vadd" in repr(op)


def test_ragged_partition_is_a_note_not_an_error():
    op = K.vadd(cl.zeros(1000).partition(128), cl.ones(1000), cl.ones(1000))
    zp, _, _ = op.sync()
    assert [d.code for d in op.diagnostics] == ["TL114"]
    assert (zp.unpartition().to_numpy() == 2).all()
    op2 = K.vadd(cl.zeros(1024).partition(128), cl.ones(1024), cl.ones(1024))
    op2.sync()
    assert op2.diagnostics == []


def test_launch_level_diagnostics_on_sim():
    x = cl.randn(4096).sync()
    z = cl.zeros(4096).sync()
    cases = [
        (lambda: K.vadd(z.partition_mut(512), z, x), "TL100"),
        (lambda: K.two_outputs(z.partition_mut(512), z.partition_mut(512), x), "TL101"),
        (lambda: K.fixed128(z.partition_mut(256), x), "TL110"),
        (lambda: K.softmax_rows(cl.zeros((4, 256)).sync().partition((1, 128)),
                                cl.zeros((4, 256)).sync()), "TL111"),
        (lambda: K.vadd(z.partition_mut(256), cl.zeros(4096, cl.f16).sync(), x), "TL112"),
        (lambda: K.vadd(z.partition_mut(256), cl.zeros((64, 64)).sync(), x), "TL113"),
        (lambda: K.vadd(z, x, x), "TL115"),
        (lambda: K.vadd(z.partition_mut(256), x.partition_mut(256), x), "TL116"),
        (lambda: K.saxpy(z.partition_mut(256), x, x, x), "TL118"),
        (lambda: K.two_outputs(z.partition_mut(256), cl.zeros(8192).sync().partition_mut(256),
                               x), "TL119"),
    ]
    for make, code in cases:
        with pytest.raises(OwnershipError) as e:
            make().sync()
        assert code in codes(e), (code, codes(e))
    # a failed launch leaves nothing in flight and nothing moved
    assert (z.to_numpy() == 0).all()


def test_pack_args_widths():
    import importlib
    L = importlib.import_module("cutile_lab.runtime.launch")
    from cutile_lab.compiling.artifact import LaunchParam
    t = cl.zeros((4, 6)).sync()[:, ::2]
    params = [LaunchParam("a", "array", "f32", 2, 32), LaunchParam("b", "array", "f32", 2, 64),
              LaunchParam("s", "scalar", "f32"), LaunchParam("h", "scalar", "f16"),
              LaunchParam("i", "scalar", "i64"), LaunchParam("w", "scalar", "bf16")]
    args = L.pack_args(params, {"a": t, "b": t, "s": 1.5, "h": 2.0, "i": 7, "w": 1.0})
    assert type(args[0]) is int and args[0] == t.ptr            # pointers: Python int (64-bit)
    assert [type(a) for a in args[1:5]] == [np.int32] * 4      # shape, strides: i32
    assert list(args[1:5]) == [4, 3, 6, 2]                     # strides in elements
    assert [type(a) for a in args[6:10]] == [np.int64] * 4     # 64-bit index layout
    assert type(args[10]) is np.float32 and args[10] == 1.5
    assert type(args[11]) is np.float16
    assert type(args[12]) is np.int64
    assert type(args[13]) is np.uint16 and args[13] == 0x3F80  # bf16 1.0 as its bit pattern


def test_layout_facts():
    import importlib
    L = importlib.import_module("cutile_lab.runtime.launch.plan")
    from cutile_lab.runtime.memory import HostStorage
    from cutile_lab.runtime import Tensor
    t = cl.zeros(1024).sync()
    assert L.align(t.ptr) == 16 and L.align(t[1:].ptr) == 4 and L.align(t[2:].ptr) == 8
    assert L.contiguous(t[::1]) and not L.contiguous(t[::2])
    assert L.index_bits(t) == 32
    huge = Tensor(HostStorage(0, 0, None), cl.f32, (2**31 + 5,))   # metadata only
    assert L.index_bits(huge) == 64
    wide = Tensor(HostStorage(0, 0, None), cl.f32, (2, 4), strides=(2**31, 1))
    assert L.index_bits(wide) == 64


def test_same_stream_is_not_a_conflict_on_gpu_semantics():
    # on the simulator every started chain is in flight until waited for; a second writer
    # started elsewhere is refused (TL104), which a GPU run also refuses across streams
    x = cl.ones(256).sync()
    z = cl.zeros(256).sync()
    first = K.accumulate(z.partition_mut(128), x).start()
    with pytest.raises(OwnershipError) as e:
        K.accumulate(z.partition_mut(128), x).start()
    assert codes(e) == ["TL105"] or codes(e) == ["TL104"]
    first.wait()


def test_ipython_top_level_await():
    IPython = pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_cell("import cutile_lab as cl\nfrom tests.runtime import kernels as K\n"
                   "cl.set_backend('sim')")
    r = shell.run_cell("z = await cl.zeros(256)\n"
                       "zp, x, a = await K.scale(z.partition(128), cl.ones(256), 3.0)\n"
                       "result = zp.unpartition().to_numpy()")
    r.raise_error()
    assert (shell.user_ns["result"] == 3).all()
    assert IPython.version_info >= (7,)


def test_launch_into_allocates_the_output_when_it_runs(sim, rng):
    """``launch_into`` (what the kernel library builds): the output is allocated per start, on
    the launch's stream, and is the op's result; it composes like any op."""
    from cutile_lab.runtime.launch import launch_into
    a = rng.standard_normal(1000).astype(np.float32)
    b = rng.standard_normal(1000).astype(np.float32)
    x, y = cl.from_numpy(a).sync(), cl.from_numpy(b).sync()
    op = launch_into(K.vadd, (1000,), "f32", 128, x, y)
    first, second = op.sync(), op.sync()
    assert first is not second and first.ptr != second.ptr
    np.testing.assert_allclose(first.to_numpy(), a + b, rtol=1e-6)
    np.testing.assert_allclose(second.to_numpy(), a + b, rtol=1e-6)
    z = launch_into(K.vadd, (1000,), "f32", 128, x, y).then(
        lambda t: launch_into(K.vadd, (1000,), "f32", 128, t, y)).sync()
    np.testing.assert_allclose(z.to_numpy(), a + 2 * b, rtol=1e-5)
    with pytest.raises(cl.LaunchError):
        launch_into(K.vadd, (1000,), "f32", (128, 2), x, y)      # a tile of the wrong rank


def test_new_outputs_share_one_checked_entry(sim, rng):
    """A library call's new output is keyed by its layout, not its address: every output kept
    alive (a new address each time) reuses the one checked entry, and each gets its own
    result; the in-flight checks still run on every launch."""
    from cutile_lab.runtime.launch import kernel_info, launch_into
    a = rng.standard_normal(1000).astype(np.float32)
    b = rng.standard_normal(1000).astype(np.float32)
    x, y = cl.from_numpy(a).sync(), cl.from_numpy(b).sync()
    entries = kernel_info(K.vadd).entries
    before = len(entries)
    outs = [launch_into(K.vadd, (1000,), "f32", 128, x, y).sync() for _ in range(4)]
    assert len({o.ptr for o in outs}) == 4
    assert len(entries) == before + 1
    for o in outs:
        np.testing.assert_allclose(o.to_numpy(), a + b, rtol=1e-6)
    # an argument still written by work in flight is refused whatever entry is reused
    w = cl.zeros(1000).sync()
    pending = K.vadd(w.partition_mut(128), x, x).start(cl.stream())
    with pytest.raises(OwnershipError):
        launch_into(K.vadd, (1000,), "f32", 128, w, x).sync()
    pending.wait()


CT_TWO = (
    "import cuda.tile as ct\n"
    "@ct.kernel\n"
    "def ct_add(z, x, y, B: ct.Constant[int]):\n"
    "    tx = ct.load(x, index=(ct.bid(0),), shape=(B,))\n"
    "    ty = ct.load(y, index=(ct.bid(0),), shape=(B,))\n"
    "    ct.store(z, index=(ct.bid(0),), tile=tx + ty)\n"
    "@ct.kernel\n"
    "def ct_split(lo, hi, x, B: ct.Constant[int]):\n"
    "    t = ct.load(x, index=(ct.bid(0),), shape=(B,))\n"
    "    ct.store(lo, index=(ct.bid(0),), tile=ct.minimum(t, 0.0))\n"
    "    ct.store(hi, index=(ct.bid(0),), tile=ct.maximum(t, 0.0))\n")


def test_plain_cutile_launch_refuses_memory_it_may_write_passed_twice(rng):
    """A plain cuTile kernel is compiled, like a tile kernel, on the promise that its arrays do
    not alias: an argument overlapping an array the kernel may write is refused before the
    launch (TL100; two written arrays: TL101); an input it only reads may be passed twice."""
    ks = cl.kernels_from_source(CT_TWO, "<ct_two>")
    a = rng.standard_normal(256).astype(np.float32)
    b = rng.standard_normal(256).astype(np.float32)
    z, x = cl.from_numpy(a).sync(), cl.from_numpy(b).sync()
    for make, code in [
            (lambda: ks["ct_add"](z, z, x, 128, grid=(2,)), "TL100"),
            (lambda: ks["ct_add"](z[:128], z[64:192], x, 64, grid=(2,)), "TL100"),
            (lambda: ks["ct_split"](z, z, x, 128, grid=(2,)), "TL101"),
            (lambda: ks["ct_split"](z[:128], z[64:192], x, 64, grid=(2,)), "TL101")]:
        with pytest.raises(OwnershipError) as e:
            make().sync()
        assert codes(e) == [code]
    np.testing.assert_array_equal(z.to_numpy(), a)      # nothing ran
    ks["ct_add"](z, x, x, 128, grid=(2,)).sync()
    np.testing.assert_array_equal(z.to_numpy(), 2 * b)
    ks["ct_split"](z[:128], z[128:], x[:128], 64, grid=(2,)).sync()
    np.testing.assert_array_equal(z.to_numpy(), np.concatenate([np.minimum(b[:128], 0),
                                                                np.maximum(b[:128], 0)]))


def test_plain_cutile_launch_on_a_grid_axis_the_kernel_never_reads_is_a_warning(rng):
    """A kernel that reads only ct.bid(0), launched with 2 blocks along axis 1: both blocks of a
    column store the very same tiles. The launch says so before it runs (TL121, a warning: on a
    GPU nothing else would); the simulator then sees the race itself (SIM010)."""
    from cutile_lab.errors import LaunchWarning, SimulationProblemError
    ks = cl.kernels_from_source(CT_TWO, "<ct_grid>")
    a = rng.standard_normal(256).astype(np.float32)
    z, x = cl.zeros(256).sync(), cl.from_numpy(a).sync()
    with pytest.warns(LaunchWarning, match="axis 1"):
        with pytest.raises(SimulationProblemError, match="SIM010"):
            ks["ct_add"](z, x, x, 128, grid=(2, 2)).sync()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", LaunchWarning)
        ks["ct_add"](z, x, x, 128, grid=(2, 1)).sync()      # one block along axis 1: fine


def test_tile_kernel_with_a_grid_other_than_its_partitions_is_refused(rng):
    """A tile kernel's grid is one instance per tile of its partition: grid=(2, 2) would make
    two instances store each tile, grid=(1,) would leave half the tiles unwritten (TL122). The
    partition's own grid, written out, is fine; so is any grid for a kernel whose every write is
    unchecked (inside `with unsafe():`)."""
    a = rng.standard_normal(256).astype(np.float32)
    x = cl.from_numpy(a).sync()
    z = cl.zeros(256).sync()
    for grid in [(2, 2), (1,), (4,)]:
        with pytest.raises(OwnershipError) as e:
            K.vadd(z.partition_mut(128), x, x, grid=grid).sync()
        assert codes(e) == ["TL122"]
    assert (z.to_numpy() == 0).all()
    K.vadd(z.partition_mut(128), x, x, grid=(2, 1)).sync()
    np.testing.assert_array_equal(z.to_numpy(), 2 * a)
    src = ('def halves(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'
           '    with unsafe():\n'
           '        store(z, index=(tile_id(0),), tile=load_tile_like(x, z) + 1.0)\n')
    halves = cl.kernels_from_source(src, "<halves>")["halves"]
    out = cl.zeros(256).sync()
    halves(out.partition_mut(128), x, grid=(2,)).sync()
    np.testing.assert_array_equal(out.to_numpy(), a + 1)


def test_an_output_whose_elements_overlap_is_refused(rng):
    """An `as_strided` view whose rows run into each other, reached through the array
    interface, as a `Mut` output: its tiles would write each other's bytes (TL123); the same
    memory with rows apart is fine."""
    buf = np.zeros(4 * 256, np.float32)
    a = rng.standard_normal((4, 256)).astype(np.float32)
    x = cl.from_numpy(a).sync()
    rows_overlap = np.lib.stride_tricks.as_strided(buf, (4, 256), (16 * 4, 4))
    with pytest.raises(OwnershipError) as e:
        K.add2d(cl.asarray(rows_overlap).partition_mut((1, 256)), x, x).sync()
    assert codes(e) == ["TL123"]
    assert (buf == 0).all()
    out = cl.asarray(buf.reshape(4, 256))
    K.add2d(out.partition_mut((1, 256)), x, x).sync()
    np.testing.assert_array_equal(out.to_numpy(), 2 * a)
