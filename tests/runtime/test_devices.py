"""Several GPUs in one process: ``cl.use_device(i)`` picks the calling thread's GPU (as
``with cupy.cuda.Device(i):`` does); each device has its own context, streams, memory pool and
loaded kernels; a launch refuses a tensor of another GPU; ownership checks hold on each."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import cutile_lab as cl
from cutile_lab.errors import LaunchError, NoDeviceError

ADD = '''def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))
'''


def test_use_device_without_a_gpu_says_why(monkeypatch):
    from cutile_lab.runtime import device
    monkeypatch.setattr(device, "_probe", (False, "no NVIDIA driver (test)"))
    with pytest.raises(NoDeviceError, match="no NVIDIA driver"):
        cl.use_device(0)
    assert cl.device_count() == 0 and cl.current_device() == 0


def _gpus(n: int) -> None:
    from cutile_lab.runtime.device import gpu_available
    if not gpu_available():
        pytest.skip("no GPU")
    if cl.device_count() < n:
        pytest.skip(f"needs {n} GPUs")


def _add_on(index: int, n: int = 5000):
    add = cl.kernels_from_source(ADD, "test_devices.py")["add"]
    rng = np.random.default_rng()
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    with cl.use_device(index):
        tx, ty = cl.from_numpy(x).sync(), cl.from_numpy(y).sync()
        z = cl.zeros(n).sync()
        zp, _, _ = add(z.partition(256), tx, ty).sync()
        out = zp.unpartition()
        assert out.device == f"cuda:{index}"
        np.testing.assert_allclose(out.to_numpy(), x + y, rtol=1e-6)
    return add


@pytest.mark.gpu
def test_a_device_that_does_not_exist_is_refused():
    _gpus(1)
    with pytest.raises(NoDeviceError, match="there is no GPU 99"):
        cl.use_device(99)


@pytest.mark.gpu
def test_use_device_zero_is_the_default():
    _gpus(1)
    assert cl.current_device() == 0
    _add_on(0)
    assert cl.current_device() == 0


@pytest.mark.gpu
def test_launches_on_a_second_gpu_and_refuses_mixed_devices():
    _gpus(2)
    add = _add_on(1)
    assert cl.current_device() == 0                  # the block ended: back on GPU 0
    with cl.use_device(1):
        x1 = cl.randn(1000).sync()
    x0, z0 = cl.randn(1000).sync(), cl.zeros(1000).sync()
    with pytest.raises(LaunchError, match="is on GPU 1 but this launch runs on GPU 0") as e:
        add(z0.partition(128), x0, x1).sync()
    assert "use_device(1)" in e.value.help
    # ownership holds on the second GPU too: the same memory as output and input
    with cl.use_device(1):
        z1 = cl.zeros(1000).sync()
        with pytest.raises(cl.OwnershipError) as e:
            add(z1.partition_mut(128), z1, x1).sync()
        assert "TL100" in str(e.value)


@pytest.mark.gpu
def test_threads_on_different_gpus_at_once():
    _gpus(2)
    errors = []

    def work(index):
        try:
            for _ in range(20):
                _add_on(index, 1 << 16)
        except Exception as e:          # reported below, with its thread's device
            errors.append((index, e))
    threads = [threading.Thread(target=work, args=(i,)) for i in (0, 1, 0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors
