"""The GPU backend's library-call path on a CPU, against the fakes of ``benchmarks/fake_gpu.py``
(cuda.core's device, streams and buffers, the ctypes driver library and the compiler faked;
``runtime.gpu`` and everything above it real): what the host-path work of issue 15 must keep.

- the output of a library call is allocated on the stream its launch goes to, its pointer is
  the one the launch passes, and it is freed (stream-ordered) on that stream after the launch;
- an output is never freed while a flight still holds it (its memory cannot be reused by
  later work while the kernel may still write it);
- the ownership checks (TL102 / TL104 / TL105) refuse a library call exactly as a user launch;
- ``CUTILE_LAB_BACKEND`` set or cleared in the process after the backend was chosen is still
  honoured by the next call.
"""
import gc
import importlib

import numpy as np
import pytest

import cutile_lab as cl
from cutile_lab import kernels as K
from cutile_lab.lang import Mut, Tensor, f32, load_tile_like
from cutile_lab.errors import LaunchError
from cutile_lab.runtime import OwnershipError

from benchmarks.fake_gpu import FakeGpu

B = importlib.import_module("cutile_lab.runtime.backend")


@cl.kernel
def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.delenv(B.ENV_VAR, raising=False)
    with FakeGpu() as f:
        yield f


def codes(excinfo) -> list[str]:
    return [d.code for d in excinfo.value.diagnostics]


def vectors(fake, rng, n=None, count=2):
    n = n or int(rng.integers(1, 8)) * 128
    return [fake.tensor(rng.standard_normal(n).astype(np.float32)) for _ in range(count)]


def test_the_fake_gpu_is_the_gpu_backend(fake, rng):
    x, y = vectors(fake, rng)
    assert cl.backend() == "gpu" and x.backend == "gpu"
    z = K.add(x, y).sync()
    assert z.backend == "gpu" and z.shape == x.shape and z.dtype is x.dtype


@pytest.mark.parametrize("call", ["add", "softmax"])
def test_a_library_output_is_allocated_launched_and_freed_on_the_launch_stream(fake, rng, call):
    x, y = vectors(fake, rng)
    if call == "softmax":
        x = fake.tensor(rng.standard_normal((4, 256)).astype(np.float32))
    run = (lambda: K.add(x, y)) if call == "add" else (lambda: K.softmax(x))
    for start in ("sync", "pool"):
        del fake.pool.log[:]
        if start == "sync":
            z = run().sync()
            lane = fake.gpu.stream_key(fake.gpu.default_stream)
        else:
            p = run().start()
            lane = p.flight.lane
            z = p.wait()
            del p                           # the Pending holds its result
        ptr, nbytes = z.storage.ptr, z.storage.nbytes
        default_lane = fake.gpu.stream_key(fake.gpu.default_stream)
        assert (lane == default_lane) == (start == "sync")
        assert fake.pool.log == [("alloc", ptr, nbytes, lane), ("launch", lane, ptr)]
        del z
        gc.collect()
        assert fake.pool.log[2:] == [("free", ptr, lane)]


def test_an_output_is_not_freed_while_its_flight_holds_it(fake, rng):
    x, y = vectors(fake, rng)
    fake.pool.busy = True                       # nothing completes
    p = K.add(x, y).start()
    ptr, lane = p.flight.result.storage.ptr, p.flight.lane
    del p
    gc.collect()
    assert ("free", ptr, lane) not in fake.pool.log
    # later work on another stream gets other memory
    w = K.add(x, y).sync()
    assert w.storage.ptr != ptr
    fake.pool.busy = False
    cl.synchronize()
    del w
    gc.collect()
    assert ("free", ptr, lane) in fake.pool.log


def test_ownership_checks_refuse_a_library_call_on_the_gpu_path(fake, rng):
    x, y, z = vectors(fake, rng, count=3)
    fake.pool.busy = True
    writer = add(z.partition_mut(128), x, y).start()     # z written, in flight
    with pytest.raises(OwnershipError) as e:
        K.add(z, y).sync()                                # reads what is being written
    assert codes(e) == ["TL104"]
    reader = K.add(x, y).start()                          # x read, in flight
    with pytest.raises(OwnershipError) as e:
        add(x.partition_mut(128), y, y).sync()            # writes what is being read
    assert codes(e) == ["TL105"]
    fake.pool.busy = False
    writer.wait(), reader.wait()
    px = x.partition(128)                                 # x moved into a partition
    with pytest.raises(OwnershipError) as e:
        K.add(x, y).sync()
    assert codes(e) == ["TL102"]
    assert px.unpartition() is not None


@pytest.mark.parametrize("read", ["environ dict", "os.environ.get"])
def test_the_backend_variable_switches_after_the_backend_was_chosen(fake, rng, monkeypatch, read):
    if read == "os.environ.get":                          # an interpreter without the dict
        monkeypatch.setattr(B, "_ENV_DATA", None)
    x, y = vectors(fake, rng)
    for _ in range(3):
        assert K.add(x, y).sync().backend == "gpu"       # the choice made and used
    monkeypatch.setenv(B.ENV_VAR, "sim")
    assert cl.backend() == "sim"
    xs = cl.asarray(rng.standard_normal(256).astype(np.float32))
    assert K.add(xs, xs).sync().backend == "sim"
    monkeypatch.setenv(B.ENV_VAR, "cpu")
    assert cl.backend() == "sim"
    monkeypatch.delenv(B.ENV_VAR)
    assert cl.backend() == "gpu"
    assert K.add(x, y).sync().backend == "gpu"
    monkeypatch.setenv(B.ENV_VAR, "GPU")
    assert cl.backend() == "gpu"
    for _ in range(2):                                    # refused at every call
        monkeypatch.setenv(B.ENV_VAR, "tpu")
        with pytest.raises(LaunchError, match="unknown backend"):
            cl.backend()
    monkeypatch.setenv(B.ENV_VAR, " sim ")
    assert cl.backend() == "sim"
    monkeypatch.setenv(B.ENV_VAR, "")                     # empty: the automatic choice
    assert cl.backend() == "gpu"


def test_the_tuning_target_follows_the_device_in_use(fake, rng):
    import dataclasses

    from cutile_lab.kernels import tuning
    x, y = vectors(fake, rng)
    K.add(x, y).sync()
    assert tuning.device_target() == (tuning.device_key(fake.gpu.info), "sm_90")
    other = dataclasses.replace(fake.gpu.info, name=f"Fake GPU {rng.integers(1 << 30)}",
                                compute_capability=(10, 0))
    fake.gpu.info = other                       # another device in use from now on
    assert tuning.device_target() == (tuning.device_key(other), "sm_100")
    assert K.add(x, y).sync().backend == "gpu"


@cl.kernel
def scale(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], alpha: f32):
    z.store(alpha * load_tile_like(x, z))


def test_every_launch_passes_its_own_scalar_values(fake, rng):
    """The scalar slots' words kept for the same values (``gpu._scalar_words``) never stand in
    for other values: equal values of another type, 0.0 against -0.0, NaN, new values — for a
    user's launch and a library call with a new output (the output's pointer in word 0)."""
    x, y, z = vectors(fake, rng, count=3)
    a = float(rng.standard_normal())
    alphas = [a, a, float(repr(a)), float(rng.standard_normal()), 0.0, -0.0, -0.0, 0.0,
              float("nan"), float("nan"), 2, 2.0, np.float32(a), np.float64(a), -a, a]
    for alpha in alphas:
        want = np.float32(alpha).tobytes()
        add_out = scale(z.partition_mut(128), x, alpha).sync()
        assert add_out[0].unpartition() is z
        assert fake.lib.params[-1][6][:4] == want, alpha                   # z: 3 slots, x: 3
        out = K.saxpy(alpha, x, y).sync()
        launches = [e for e in fake.pool.log if e[0] == "launch"]
        assert launches[-1][2] == out.storage.ptr
        assert fake.lib.params[-1][9][:4] == want, alpha                   # z, x, y: 3 each


def test_the_fakes_leave_nothing_behind(rng, monkeypatch):
    """After ``FakeGpu``, no fake plan, launch entry, context, driver or event is left for a
    real GPU in the same process to use (and the backend choice is as it was)."""
    from cutile_lab.runtime import device, driver, memory, ownership
    from cutile_lab.runtime.backend import GPU
    monkeypatch.delenv(B.ENV_VAR, raising=False)
    cl.set_backend("sim")
    before = (device._context, driver._LIBCUDA[0], memory._driver, GPU.prepare_launch,
              ownership.EVENT_POOL[:])
    with FakeGpu() as f:
        x, y, z = vectors(f, rng, count=3)
        K.add(x, y).sync()
        add(z.partition_mut(128), x, y).sync()
        infos = set(f.infos)
        assert all(i.entries and i.plans for i in infos)
        assert {p.arch for i in infos for p in i.plans.values()} == {"fake_sm_90"}
    assert len(infos) == 2 and all(not i.entries and not i.plans for i in infos)
    assert (device._context, driver._LIBCUDA[0], memory._driver, GPU.prepare_launch,
            ownership.EVENT_POOL) == before
    assert cl.backend() == "sim"
    cl.set_backend(None)
