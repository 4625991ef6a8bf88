"""CUDA C++ kernels in DeviceOp chains on a real GPU: a tile kernel -> CUDA C++ warp-shuffle
reduction -> tile kernel chain, run with ``.sync()`` and as a replayed CUDA graph, matches
PyTorch; the same chain with an aliasing mistake is refused before the faulty launch runs;
PyTorch work joins a chain on its stream; ``%tile_time``'s timer takes a CUDA C++ launch.
Skipped without a GPU."""
import numpy as np
import pytest

import cutile_lab as cl
from cutile_lab.runtime.ownership import OwnershipError
from tests.cuda_cpp.kernels import ROW_SUM, ROW_SUM_WARPS, SCALE, SOFTMAX, affine, square

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("gpu")]

ROWS, COLS = 300, 1000          # 1000 columns: every warp has a ragged last stride


def _reference(x0: np.ndarray, b: np.ndarray) -> np.ndarray:
    """0.5 * rowsum(x^2) + b, by PyTorch on the GPU (NumPy in float64 where it is missing)."""
    try:
        import torch
    except ImportError:
        x = x0.astype(np.float64).reshape(ROWS, COLS)
        return (0.5 * (x * x).sum(axis=1) + b).astype(np.float32)
    tx = torch.from_numpy(x0).cuda().reshape(ROWS, COLS)
    return (0.5 * (tx * tx).sum(dim=1) + torch.from_numpy(b).cuda()).cpu().numpy()


def _setup(rng):
    x0 = rng.standard_normal(ROWS * COLS).astype(np.float32)
    b0 = rng.standard_normal(ROWS).astype(np.float32)
    t = dict(x0=cl.from_numpy(x0).sync(), x=cl.zeros(ROWS * COLS).sync(),
             sq=cl.zeros(ROWS * COLS).sync(), s=cl.full(ROWS, -7.0).sync(),
             b=cl.from_numpy(b0).sync(), out=cl.full(ROWS, -7.0).sync())
    return x0, b0, t


def _chain(k_rows, t, *, reduce_into=None):
    blocks = (ROWS + ROW_SUM_WARPS - 1) // ROW_SUM_WARPS
    s = t["s"] if reduce_into is None else reduce_into
    return (square(t["sq"].partition_mut(1024), t["x"])
            .then(lambda *_: k_rows(t["sq"], s, ROWS, COLS, grid=blocks,
                                    block=32 * ROW_SUM_WARPS))
            .then(lambda *_: affine(t["out"].partition_mut(128), t["s"], t["b"])))


def test_tile_cuda_tile_chain_sync_and_graph_match_pytorch(rng, cache_dir):
    k_rows = cl.cuda_kernel(ROW_SUM, "row_sum")
    k_scale = cl.cuda_kernel(SCALE, "scale")
    x0, b0, t = _setup(rng)
    n = ROWS * COLS
    # a CUDA C++ launch on its own: x = 1.0 * x0
    got = k_scale(t["x0"], t["x"], 1.0, n, grid=(n + 255) // 256, block=256).sync()
    assert got[0] is t["x0"] and got[1] is t["x"]            # ownership handed back
    np.testing.assert_array_equal(t["x"].to_numpy(), x0)

    outp, s_, b_ = _chain(k_rows, t).sync()
    want = _reference(x0, b0)
    np.testing.assert_allclose(t["out"].to_numpy(), want, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(t["s"].to_numpy(), 2 * (want - b0), rtol=1e-4, atol=1e-3)

    # the same chain captured once, replayed: its CUDA C++ launch is a node of the graph
    g = cl.graph(_chain(k_rows, t))
    assert g.num_kernels == 3
    for a in (-0.5, 2.0):
        k_scale(t["x0"], t["x"], a, n, grid=(n + 255) // 256, block=256).sync()
        g.replay(2)
        np.testing.assert_allclose(t["out"].to_numpy(), _reference(a * x0, b0),
                                   rtol=1e-4, atol=1e-3)


def test_the_chain_with_an_aliasing_mistake_is_refused_before_it_runs(rng, cache_dir):
    k_rows = cl.cuda_kernel(ROW_SUM, "row_sum")
    x0, b0, t = _setup(rng)
    k_scale = cl.cuda_kernel(SCALE, "scale")
    n = ROWS * COLS
    k_scale(t["x0"], t["x"], 1.0, n, grid=(n + 255) // 256, block=256).sync()
    # the reduction writes into the rows it reads: `out` aliases `x`
    bad = _chain(k_rows, t, reduce_into=t["sq"][:ROWS])
    with pytest.raises(OwnershipError) as e:
        bad.sync()
    (d,) = e.value.diagnostics
    assert d.code == "TL100" and "`out`" in d.message and "`x`" in d.message
    assert d.span.filename == __file__
    # the reduction and what follows it did not run
    assert (t["s"].to_numpy() == -7.0).all() and (t["out"].to_numpy() == -7.0).all()
    with pytest.raises(OwnershipError) as e:
        cl.graph(_chain(k_rows, t, reduce_into=t["sq"][:ROWS]))
    assert [d.code for d in e.value.diagnostics] == ["TL100"]
    assert (t["out"].to_numpy() == -7.0).all()
    # and nothing stays borrowed: the correct chain runs after the refused one
    _chain(k_rows, t).sync()
    np.testing.assert_allclose(t["out"].to_numpy(), _reference(x0, b0), rtol=1e-4, atol=1e-3)


@pytest.fixture
def gate():
    from tests.runtime.gpu_helpers import Gate
    g = Gate()
    yield g
    g.close()


def test_in_flight_work_and_await(rng, cache_dir, gate):
    import asyncio
    from tests.runtime.gpu_helpers import hold
    k_rows = cl.cuda_kernel(ROW_SUM, "row_sum")
    x0, b0, t = _setup(rng)
    cl.cuda_kernel(SCALE, "scale")(t["x0"], t["x"], 1.0, ROWS * COLS,
                                   grid=(ROWS * COLS + 255) // 256, block=256).sync()
    # a kernel's first launch loads its code, and CUDA's (default) lazy loading waits on the
    # device: a first launch queued behind work that waits for the host would block the host
    # for good, so every kernel of the chain runs once before the stream is held
    _chain(k_rows, t).sync()
    s = cl.stream()
    big = cl.zeros(1 << 24).sync()
    hold(s, gate, lambda: square(big.partition_mut(4096), cl.ones(1 << 24).sync()))
    pending = _chain(k_rows, t).start(s)           # held: in flight until the gate opens
    try:
        with pytest.raises(OwnershipError) as e:   # another launch writing what it writes
            k_rows(t["x"], t["sq"], ROWS, COLS, grid=1, block=256).sync()
        assert [d.code for d in e.value.diagnostics] == ["TL104"]
        with pytest.raises(OwnershipError) as e:   # host access to what it writes
            t["s"].to_numpy()
        assert [d.code for d in e.value.diagnostics] == ["TL103"]
    finally:
        gate.open()
    pending.wait()
    np.testing.assert_allclose(t["out"].to_numpy(), _reference(x0, b0), rtol=1e-4, atol=1e-3)
    t["out"] = cl.full(ROWS, -7.0).sync()

    async def main():
        return await _chain(k_rows, t)
    asyncio.run(main())
    np.testing.assert_allclose(t["out"].to_numpy(), _reference(x0, b0), rtol=1e-4, atol=1e-3)


def test_pytorch_work_in_a_chain_on_its_stream(rng, cache_dir):
    torch = pytest.importorskip("torch")
    k_rows = cl.cuda_kernel(ROW_SUM, "row_sum")
    x0, b0, t = _setup(rng)

    streams = []

    def torch_copy(src, dst):
        streams.append(torch.cuda.current_stream().cuda_stream)
        dst.copy_(src * 3.0)

    def halve(a):
        streams.append(torch.cuda.current_stream().cuda_stream)
        a.mul_(0.5)                # in place, on what the tile kernel just wrote

    blocks = (ROWS + ROW_SUM_WARPS - 1) // ROW_SUM_WARPS
    op = (cl.torch_op(torch_copy, t["x0"], t["x"], writes=[1])
          .then(lambda *_: square(t["sq"].partition_mut(1024), t["x"]))
          .then(lambda *_: cl.torch_op(halve, t["sq"]))
          .then(lambda *_: k_rows(t["sq"], t["s"], ROWS, COLS, grid=blocks, block=256)))
    chain_stream = cl.stream()
    op.sync_on(chain_stream)
    from cutile_lab.runtime.memory import stream_handle
    assert streams == [stream_handle(chain_stream)] * 2    # PyTorch ran on the chain's stream
    want = _reference(3.0 * x0, b0) - b0                   # 0.5 * rowsum((3 x0)^2)
    np.testing.assert_allclose(t["s"].to_numpy(), want, rtol=1e-4, atol=1e-2)
    # PyTorch work cannot be captured into a lab graph: said, not failed inside the driver
    with pytest.raises(cl.LaunchError, match="cannot be captured"):
        cl.graph(cl.torch_op(halve, t["sq"]))


def test_a_partition_gives_the_grid_one_block_per_tile(rng, cache_dir):
    k_scale = cl.cuda_kernel(SCALE, "scale")
    n = 10_000                                   # 40 tiles of 256, the last one ragged
    a = rng.standard_normal(n).astype(np.float32)
    x = cl.from_numpy(a).sync()
    x_, yp, alpha, n_ = k_scale(x, cl.zeros(n).sync().partition(256), -3.0, n, block=256).sync()
    assert x_ is x and yp.grid == (40,)
    np.testing.assert_allclose(yp.unpartition().to_numpy(), -3.0 * a, rtol=1e-6)


def test_softmax_and_the_timer_take_a_cuda_launch(rng, cache_dir):
    from cutile_lab.performance.timing import time_launch, work_of
    k = cl.cuda_kernel(SOFTMAX, "softmax_rows")
    rows, cols = 256, 4096
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    x = cl.from_numpy(a).sync()
    y = cl.zeros((rows, cols)).sync()
    op = k(x, y, cols, grid=rows, block=256)
    op.sync()
    e = np.exp(a - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y.to_numpy(), e / e.sum(axis=1, keepdims=True), rtol=1e-4,
                               atol=1e-6)
    timing = time_launch(lambda: op, warmup=1, repeats=5)
    assert timing.median > 0
    count, notes = work_of(op)
    assert count.bytes == 2 * rows * cols * 4 and count.flops == 0
