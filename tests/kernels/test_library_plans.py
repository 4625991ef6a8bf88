"""The library's common calls keep their launch's plan per call key (``host._planned``): a
repeated call of a key builds its op from the plan, and is what the first call of the key was —
the same kernel, output, tile and checks — while the tuning store and the device are the same;
a call of another key, or after the store records a new configuration, is planned anew."""
import json

import numpy as np
import pytest

import cutile_lab as cl
import cutile_lab.kernels as K
from cutile_lab.kernels import gemm_host, host, tuning
from cutile_lab.runtime import OwnershipError

RNG = np.random.default_rng()


def upload(a):
    return cl.from_numpy(a).sync()


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def test_repeated_calls_use_the_kept_plan_and_agree(sim, monkeypatch):
    made = []
    real = host._launch_planned

    def spy(key, *args, **kwargs):
        made.append(key[0])
        return real(key, *args, **kwargs)
    monkeypatch.setattr(host, "_launch_planned", spy)
    monkeypatch.setattr(gemm_host, "_launch_planned", spy)
    n = int(RNG.integers(100, 900))
    rows, cols = int(RNG.integers(2, 9)), int(RNG.integers(17, 300))
    x, y = f32(n), f32(n)
    m, w = f32(rows, cols).astype(np.float16), f32(cols).astype(np.float16)
    a, b = f32(48, 32).astype(np.float16), f32(32, 40).astype(np.float16)
    tx, ty, tm, tw, ta, tb = map(upload, (x, y, m, w, a, b))
    for _ in range(3):
        np.testing.assert_allclose(K.add(tx, ty).sync().to_numpy(), x + y, rtol=1e-6)
        got = K.rmsnorm(tm, tw).sync().to_numpy().astype(np.float64)
        m64 = m.astype(np.float64)
        ref = m64 / np.sqrt((m64 ** 2).mean(1, keepdims=True) + 1e-6) * w
        np.testing.assert_allclose(got, ref, atol=2e-2, rtol=2e-2)
        got = K.gemm(ta, tb).sync().to_numpy().astype(np.float64)
        np.testing.assert_allclose(got, a.astype(np.float64) @ b, atol=0.1, rtol=1e-2)
    assert made == ["add", "rmsnorm", "gemm"]          # planned once each, then kept
    # another key (a strided view of the same memory) is not the kept plan's call
    np.testing.assert_allclose(K.add(tx[::2], ty[::2]).sync().to_numpy(), x[::2] + y[::2],
                               rtol=1e-6)
    np.testing.assert_allclose(K.add(tx[1:], ty[1:]).sync().to_numpy(), x[1:] + y[1:],
                               rtol=1e-6)


def test_a_planned_call_is_still_checked(sim):
    """Checks that depend on the arguments themselves run on every call: a planned library call
    is refused on an input written by work in flight (TL104) at the caller's line, and on a
    moved input (TL102)."""
    n = 512
    x, y, w = upload(f32(n)), upload(f32(n)), upload(f32(n))
    from tests.runtime import kernels as RK
    for _ in range(2):
        K.add(x, y).sync()
    writer = RK.accumulate(x.partition_mut(128), w).start()
    with pytest.raises(OwnershipError) as e:
        K.add(x, y).sync()
    assert [d.code for d in e.value.diagnostics] == ["TL104"]
    assert e.value.diagnostics[0].span.filename == __file__
    writer.wait()
    x.partition(128)
    with pytest.raises(OwnershipError) as e:
        K.add(x, y).sync()
    assert [d.code for d in e.value.diagnostics] == ["TL102"]


def test_a_new_stored_configuration_replaces_the_plan(sim, monkeypatch, tmp_path):
    """A plan is kept for the tuning store and the device target it was made with: after
    ``tuning.store`` records a new tile for the device in use, the next call launches with it."""
    path = tmp_path / "tuned.json"
    path.write_text(json.dumps({"Card X (1.0 TB/s)": {"add": {"*": {"B": 256}}}}))
    monkeypatch.setattr(tuning, "TUNED", path)
    monkeypatch.setattr(tuning, "_file", [None])
    monkeypatch.setattr(tuning, "_resolved", {})
    monkeypatch.setattr(host, "_arch", lambda: ("Card X (1.0 TB/s)", "sm_90"))
    n = int(RNG.integers(1000, 3000))
    x, y = f32(n), f32(n)
    tx, ty = upload(x), upload(y)
    for _ in range(2):
        op = K.add(tx, ty)
        assert op._out[2] == (256,)
        np.testing.assert_allclose(op.sync().to_numpy(), x + y, rtol=1e-6)
    tuning.store("Card X (1.0 TB/s)", "add", {"B": 512})
    for _ in range(2):
        op = K.add(tx, ty)
        assert op._out[2] == (512,)
        np.testing.assert_allclose(op.sync().to_numpy(), x + y, rtol=1e-6)
    # another device target: not the plan made for this one
    monkeypatch.setattr(host, "_arch", lambda: None)
    assert K.add(tx, ty)._out[2] == (tuning.DEFAULTS["add"]["B"],)
