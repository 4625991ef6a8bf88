"""GPU test helpers: a gate that holds a stream until the test opens it (so that "work in
flight" is deterministic), with a fallback that keeps the stream busy instead."""
import threading

from cuda.bindings import driver

from cutile_lab.runtime.memory import stream_handle


def _ok(result):
    err = result[0]
    assert int(err) == 0, f"CUDA driver error {err}"
    return result[1] if len(result) > 1 else None


class Gate:
    """``block(stream)``: the stream waits on a device word; ``open()`` writes it."""

    def __init__(self, timeout: float = 30.0):
        self.ctx = _ok(driver.cuCtxGetCurrent())
        self.ptr = _ok(driver.cuMemAlloc(4))
        _ok(driver.cuMemsetD32(self.ptr, 0, 1))
        flags = driver.CUstream_flags.CU_STREAM_NON_BLOCKING
        self.side = _ok(driver.cuStreamCreate(flags))
        self.blocked = []
        # a test that waits on a held stream by mistake fails after ``timeout`` instead of
        # hanging the run: the watchdog opens the gate
        self._watchdog = threading.Timer(timeout, self.open)
        self._watchdog.daemon = True
        self._watchdog.start()

    def block(self, stream) -> bool:
        (err,) = driver.cuStreamWaitValue32(
            stream_handle(stream), self.ptr, 1,
            driver.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ)
        ok = int(err) == 0
        if ok:
            self.blocked.append(stream)
        return ok

    def open(self):
        _ok(driver.cuCtxSetCurrent(self.ctx))        # the watchdog's thread too
        _ok(driver.cuStreamWriteValue32(self.side, self.ptr, 1, 0))
        _ok(driver.cuStreamSynchronize(self.side))

    def close(self):
        self._watchdog.cancel()
        self.open()
        driver.cuStreamDestroy(self.side)
        driver.cuMemFree(self.ptr)


def hold(stream, gate: Gate, busy_op=None):
    """Hold ``stream`` until ``gate.open()``; without stream memory operations, queue a lot of
    work (``busy_op`` started on that stream, 50 times) so that it stays busy for a while."""
    if gate.block(stream):
        return
    assert busy_op is not None, "stream wait-value not supported and no busy work given"
    for _ in range(50):
        busy_op().start(stream)
