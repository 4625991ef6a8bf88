"""The cached start path: an op started again (or a new op of the very same argument objects)
reuses what its first start checked and packed, and still runs the checks that can change
between two starts — moves (TL102) and in-flight work (TL104/TL105) — every time."""
import ctypes
import importlib
import sys

import numpy as np
import pytest

import cutile_lab as cl
from cutile_lab.runtime import OwnershipError
from tests.runtime import kernels as K

L = importlib.import_module("cutile_lab.runtime.launch")

pytestmark = pytest.mark.usefixtures("sim")


def codes(excinfo) -> list[str]:
    return [d.code for d in excinfo.value.diagnostics]


def test_restarted_op_reruns_and_sees_new_data():
    x = cl.ones(256).sync()
    z = cl.zeros(256).sync()
    op = K.accumulate(z.partition_mut(128), x)
    for _ in range(5):
        op.sync()
    assert op._reuse is not None
    assert (z.to_numpy() == 5).all()


def test_restarted_op_refuses_a_moved_tensor():
    x = cl.ones(256).sync()
    y = cl.ones(256).sync()
    z = cl.zeros(256).sync()
    p = z.partition_mut(128)
    op = K.vadd(p, x, y)
    op.sync()
    op.sync()                                  # the cached path
    assert op._reuse is not None
    px = x.partition(128)                      # x moves after the launch was checked
    with pytest.raises(OwnershipError) as e:
        op.sync()
    assert codes(e) == ["TL102"] and "`x`" in e.value.diagnostics[0].message
    with pytest.raises(OwnershipError) as e:   # a new op of the same objects: refused too
        K.vadd(p, x, y).sync()
    assert codes(e) == ["TL102"]
    with pytest.raises(OwnershipError) as e:
        op.start()
    assert codes(e) == ["TL102"]
    assert px.unpartition() is not None


def test_restarted_op_refuses_a_partition_whose_borrow_ended():
    x = cl.ones(256).sync()
    z = cl.zeros(256).sync()
    p = z.partition_mut(128)
    op = K.accumulate(p, x)
    op.sync()
    op.sync()
    p.release()
    with pytest.raises(OwnershipError) as e:
        op.sync()
    assert codes(e) == ["TL102"]
    assert (z.to_numpy() == 2).all()


def test_restarted_op_detects_in_flight_conflicts():
    x = cl.ones(256).sync()
    z = cl.zeros(256).sync()
    w = cl.zeros(256).sync()
    reader = K.scale(w.partition_mut(128), z, 1.0)     # reads z, writes w
    writer = K.scale(z.partition_mut(128), x, 2.0)     # writes z
    clobber = K.scale(x.partition_mut(128), w, 1.0)    # writes x (the writer's input)
    for op in (reader, writer, clobber, reader, writer):
        op.sync()                                      # every op cached
    assert all(op._reuse is not None for op in (reader, writer, clobber))
    pending = writer.start()                           # in flight until waited for
    with pytest.raises(OwnershipError) as e:           # reads what in-flight work writes
        reader.sync()
    assert codes(e) == ["TL104"]
    with pytest.raises(OwnershipError) as e:           # writes what in-flight work reads
        clobber.sync()
    assert codes(e) == ["TL105"]
    with pytest.raises(OwnershipError) as e:           # a second writer of z
        writer.start()
    assert codes(e)[0] in ("TL104", "TL105")
    with pytest.raises(OwnershipError) as e:           # a new op of the same objects
        K.scale(w.partition_mut(128), z, 1.0).sync()
    assert codes(e) == ["TL104"]
    pending.wait()
    reader.sync()                                      # fine once it completed
    np.testing.assert_array_equal(w.to_numpy(), z.to_numpy())


def test_new_op_of_the_same_objects_shares_the_cached_start():
    x = cl.ones(256).sync()
    y = cl.ones(256).sync()
    z = cl.zeros(256).sync()
    p = z.partition_mut(128)
    first = K.vadd(p, x, y)
    first.sync()
    again = K.vadd(p, x, y); line = sys._getframe().f_lineno
    assert again._reuse is first._reuse and again.bound is first.bound
    assert again._entry is first._entry and again.compiled is first.compiled  # before a start
    assert again.where.line == line and again.where != first.where   # its own line
    assert cl.launch(K.vadd, p, x, y)._reuse is first._reuse
    assert again.sync() == (p, x, y)
    assert again.diagnostics == first.diagnostics and again._entry is first._entry
    other = K.vadd(p, y, x)                            # other objects: its own first start
    assert other._reuse is None
    other.sync()
    # scalars: only the very same object is shared (2.0 and 3.0 are different launches)
    a, b = K.scale(p, x, 2.0), K.scale(p, x, 3.0)
    a.sync()
    assert (z.to_numpy() == 2).all()
    b.sync()
    assert (z.to_numpy() == 3).all()
    a.sync()
    assert (z.to_numpy() == 2).all()


def test_rebuilt_op_after_the_tensor_is_gone_does_not_reuse_stale_state():
    import gc
    x = cl.ones(256).sync()
    z = cl.zeros(256).sync()
    K.accumulate(z.partition_mut(128), x).sync()
    del z
    gc.collect()
    z2 = cl.zeros(256).sync()
    op = K.accumulate(z2.partition_mut(128), x)
    assert op._reuse is None
    op.sync()
    assert (z2.to_numpy() == 1).all()


# --- the packed parameters of the ctypes launch ---------------------------------------------------

def test_raw_launch_packs_what_cuda_core_passes():
    from cutile_lab.runtime.driver import RawLaunch
    from cutile_lab.runtime.dtypes import scalar_value
    calls = []

    def fake_launch(*args):
        func, gx, gy, gz, bx, by, bz, shmem, stream, ptrs, extra = args
        calls.append(args)
        return 0

    template = [0x7F00_1234_5600, np.int32(1000), np.int32(1), None, np.int64(-3), None]
    raw = RawLaunch(fake_launch, ctypes.c_void_p(0xABC), (4, 2, 1), 128, template)

    def scalars(alpha, h):
        return [(3, scalar_value(alpha, cl.f32)), (5, scalar_value(h, cl.bf16))]

    slots = raw.scalar_slots(scalars(0.5, 1.0))
    assert raw.launch(ctypes.c_void_p(7), slots) == 0
    func, gx, gy, gz, bx, by, bz, shmem, stream, ptrs, extra = calls[0]
    assert (func.value, gx, gy, gz, bx, by, bz, shmem, stream.value, extra) == \
        (0xABC, 4, 2, 1, 128, 1, 1, 0, 7, None)

    def at(i, n):
        return ctypes.string_at(ptrs[i], n)
    assert at(0, 8) == (0x7F00_1234_5600).to_bytes(8, "little")
    assert at(1, 4) == np.int32(1000).tobytes() and at(2, 4) == np.int32(1).tobytes()
    assert at(3, 4) == np.float32(0.5).tobytes()
    assert at(4, 8) == np.int64(-3).tobytes()
    assert at(5, 2) == np.uint16(0x3F80).tobytes()          # bf16 1.0
    # another op's scalars are written before its own call
    other = raw.scalar_slots(scalars(2.0, 1.0))
    raw.launch(ctypes.c_void_p(7), other)
    assert at(3, 4) == np.float32(2.0).tobytes()
    raw.launch(ctypes.c_void_p(7), slots)
    assert at(3, 4) == np.float32(0.5).tobytes()
    assert len(calls) == 3


def test_raw_launch_words_are_the_bytes_cuda_core_passes(rng):
    """``scalar_slots`` writes each value as its slot's two 64-bit words: the slot then holds
    exactly ``arg_bytes`` of the value (every scalar dtype, signs, a pointer), and
    ``cuLaunchKernelEx`` gets the stream's configuration (its dimensions, the stream) and the
    same parameter array; a launch without ``lane`` still goes to ``cuLaunchKernel``."""
    from cutile_lab.runtime.driver import RawLaunch, arg_bytes
    from cutile_lab.runtime.dtypes import scalar_value
    seen = []

    def fake_ex(cfg, func, ptrs, extra):
        c = cfg._obj
        seen.append(("ex", (c.gridDimX, c.gridDimY, c.gridDimZ, c.blockDimX, c.hStream),
                     func.value, [ctypes.string_at(ptrs[i], 16) for i in range(6)], extra))
        return 0

    def fake_launch(*args):
        ptrs = args[9]
        seen.append(("plain", args[8].value, [ctypes.string_at(ptrs[i], 16) for i in range(6)]))
        return 0

    template = [0x7F00_1234_5600, None, np.int32(7), None, None, None]
    raw = RawLaunch(fake_launch, ctypes.c_void_p(0xABC), (5, 3, 1), 256, template, fake_ex)
    lane = int(rng.integers(1, 1 << 40))
    from cutile_lab.runtime.dtypes import as_dtype
    for dtype in ("f32", "f16", "bf16", "f64", "i32", "i64", "i8", "u8", "bool"):
        dt = as_dtype(dtype)

        def draw():
            if dtype == "bool":
                return bool(rng.integers(0, 2))
            if dtype[0] in "fb":
                return float(rng.standard_normal())
            return int(rng.integers(0 if dtype[0] == "u" else -100, 100))
        ptr = int(rng.integers(1, 1 << 47)) * 256
        packed = [(1, scalar_value(draw(), dt)), (3, ptr), (5, scalar_value(draw(), dt))]
        assert raw.launch(ctypes.c_void_p(lane), raw.scalar_slots(packed), lane) == 0
        kind, dims, func, slots, extra = seen[-1]
        assert (kind, dims, func, extra) == ("ex", (5, 3, 1, 256, lane), 0xABC, None)
        for i, v in packed:
            b = arg_bytes(v)
            assert slots[i][:len(b)] == b, (dtype, i)
        assert slots[0][:8] == (0x7F00_1234_5600).to_bytes(8, "little")
        assert slots[2][:4] == np.int32(7).tobytes()
    raw.launch(ctypes.c_void_p(lane), raw.scalar_slots([(1, np.float32(0.25))]))
    assert seen[-1][0] == "plain" and seen[-1][1] == lane
    assert seen[-1][2][1][:4] == np.float32(0.25).tobytes()


class _Op:
    compiled = None

    def __init__(self):
        self.refused = []

    def _raw_failed(self, entry, ctx, values, start):
        self.refused.append(start)


def test_the_gpu_backend_launches_a_new_output_per_start_through_the_stream_config(rng):
    """``gpu.launch`` against a fake driver: each start of a library call's entry writes its
    own output pointer and scalars into the packed parameters and goes to
    ``cuLaunchKernelEx`` with its stream's configuration; a start of the same record again
    writes nothing new; a refusal by the driver falls back (``_raw_failed``)."""
    from types import SimpleNamespace

    from cutile_lab.runtime import gpu
    from cutile_lab.runtime.backend import GPU
    from cutile_lab.runtime.driver import RawLaunch
    from cutile_lab.runtime.launch.op import ReusableStart
    from cutile_lab.runtime.launch.plan import LaunchEntry
    calls, answer = [], [0]

    def fake_ex(cfg, func, ptrs, extra):
        calls.append((cfg._obj.hStream, ctypes.string_at(ptrs[0], 8),
                      ctypes.string_at(ptrs[2], 4)))
        return answer[0]
    template = [None, 0x7F00_0000_1000, None]
    entry = LaunchEntry({}, (4,), [])
    entry.plan = SimpleNamespace(compiled="cubin")
    entry.raw = RawLaunch(lambda *a: 99, ctypes.c_void_p(0xF00), (4, 1, 1), 128, template,
                          fake_ex)
    entry.scalars = [(2, "alpha", cl.f32)]
    entry.fresh = (0, "z")
    lane = int(rng.integers(1, 1 << 40))
    ctx = SimpleNamespace(handle=ctypes.c_void_p(lane), flight=SimpleNamespace(lane=lane))
    op = _Op()
    starts = []
    for _ in range(3):
        ptr, alpha = int(rng.integers(1, 1 << 40)) * 256, float(rng.standard_normal())
        values = {"z": SimpleNamespace(tensor=SimpleNamespace(ptr=ptr)), "alpha": alpha}
        s = ReusableStart(GPU, values, None, entry, [], None)
        gpu.launch(op, values, s, ctx)
        assert calls[-1] == (lane, ptr.to_bytes(8, "little"), np.float32(alpha).tobytes())
        assert op.compiled == "cubin"
        starts.append((s, values))
    s, values = starts[0]
    gpu.launch(op, values, s, ctx)                  # the first record again: its own words
    assert calls[-1][1] == values["z"].tensor.ptr.to_bytes(8, "little")
    assert len(calls) == 4 and not op.refused
    answer[0] = 1                                   # the driver refuses: cuda.core's turn
    gpu.launch(op, values, s, ctx)
    assert op.refused == [s]


def test_scalar_values_keep_their_width_on_every_call(rng):
    """``scalar_value`` keeps the NumPy scalar type of each plain dtype: the first and every
    later conversion give the same type and bytes as the dtype's own NumPy type; bf16, the
    fp8 types and tf32 keep their own conversions."""
    from cutile_lab.language.dtypes import DTYPES
    from cutile_lab.runtime.dtypes import scalar_value
    special = {"bf16": np.uint16, "f8e4m3": np.uint8, "f8e5m2": np.uint8, "tf32": np.float32}
    for name, dt in DTYPES.items():
        for _ in range(3):
            if dt.kind == "b":
                v = bool(rng.integers(0, 2))
            elif dt.kind == "f":
                v = float(rng.standard_normal())
            else:
                v = int(rng.integers(0, 100 if dt.kind == "u" else 50))
            got = scalar_value(v, dt)
            want_type = special.get(name) or np.dtype(dt.numpy).type
            assert type(got) is want_type, name
            if name not in special:
                assert got.tobytes() == np.dtype(dt.numpy).type(v).tobytes(), name
    assert scalar_value(1.0, DTYPES["bf16"]) == np.uint16(0x3F80)


def test_a_conflict_with_work_in_flight_is_refused_after_other_flights_were_released():
    # every simulator flight has a lane of its own, released by ``release``'s lone-flight case:
    # waiting for one flight must leave another's borrows in force (TL104 / TL105)
    x = cl.from_numpy(np.random.default_rng().random(256, dtype=np.float32)).sync()
    z = cl.zeros(256).sync()
    w = cl.zeros(256).sync()
    v = cl.zeros(256).sync()
    pending = K.scale(z.partition_mut(128), x, 2.0).start()         # writes z, in flight
    K.scale(v.partition_mut(128), x, 1.0).start().wait()            # another flight, released
    with pytest.raises(OwnershipError) as e:                        # reads z: still in flight
        K.scale(w.partition_mut(128), z, 1.0).sync()
    assert codes(e) == ["TL104"]
    with pytest.raises(OwnershipError) as e:                        # writes x, read in flight
        K.scale(x.partition_mut(128), v, 1.0).sync()
    assert codes(e) == ["TL105"]
    pending.wait()
    K.scale(w.partition_mut(128), z, 1.0).sync()                    # fine once it completed
    np.testing.assert_allclose(w.to_numpy(), 2 * x.to_numpy(), rtol=1e-6)
