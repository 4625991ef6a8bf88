"""Storage behind tensors: device memory (cuda.core buffers) or a NumPy array (simulator).

Owns ``DeviceStorage`` / ``HostStorage`` and the raw memory operations the runtime enqueues on a
stream (allocate, fill with a bit pattern, copy host<->device and device<->device). Nothing here
knows about dtypes beyond element sizes, or about ownership.
"""
from __future__ import annotations

import ctypes

import numpy as np

from cutile_lab.errors import LaunchError


class Storage:
    """A range of memory: ``ptr`` (byte address) and ``nbytes``; ``owner`` keeps it alive."""

    __slots__ = ("ptr", "nbytes", "owner", "moves", "__weakref__")
    backend = "?"

    def __init__(self, ptr: int, nbytes: int, owner=None):
        self.ptr = int(ptr)
        self.nbytes = int(nbytes)
        self.owner = owner
        self.moves = None        # moves into partitions of views of this memory (partition.py)


class DeviceStorage(Storage):
    """GPU memory: a cuda.core ``Buffer`` we allocated, or a foreign object's memory (then
    ``owner`` is that object, kept alive while any tensor uses the memory).

    ``ready`` is an event the memory's producer recorded (foreign memory whose producer still had
    work in flight when it was wrapped); work that uses the memory waits on it first.
    """

    __slots__ = ("device_id", "ready", "foreign")
    backend = "gpu"

    def __init__(self, ptr: int, nbytes: int, owner=None, device_id: int = 0, ready=None,
                 foreign: bool = False):
        super().__init__(ptr, nbytes, owner)
        self.device_id = device_id
        self.ready = ready
        self.foreign = foreign


_new_device_storage = DeviceStorage.__new__


class HostStorage(Storage):
    """The simulator's memory: a 1-D NumPy array (``owner``) of the tensor's element type."""

    __slots__ = ()
    backend = "sim"

    @property
    def array(self) -> np.ndarray:
        return self.owner


_char_of = ctypes.c_char.from_buffer
_address_of = ctypes.addressof


def host_address(array: np.ndarray) -> int:
    """The address of a writable NumPy array's first byte (a fraction of what ``ctypes.data``
    costs: every simulator allocation asks)."""
    try:
        return _address_of(_char_of(array))
    except (ValueError, TypeError):   # empty or read-only
        return array.ctypes.data


def host_storage(array: np.ndarray) -> HostStorage:
    flat = array.reshape(-1) if array.flags.c_contiguous else np.ascontiguousarray(array).reshape(-1)
    return HostStorage(flat.ctypes.data if flat.size else 0, flat.nbytes, flat)


# --- device operations (cuda.bindings driver calls on a stream) --------------------------------

def _driver():
    from cuda.bindings import driver
    return driver


def _check(result, what: str):
    err = result[0]
    if int(err) != 0:
        name = getattr(err, "name", str(err))
        raise LaunchError(f"{what} failed: {name}")
    return result[1] if len(result) == 2 else result[1:]


def stream_handle(stream) -> int:
    """The ``CUstream`` address of a cuda.core Stream / GraphBuilder / anything with
    ``__cuda_stream__`` (an int is taken to be one already)."""
    if type(stream) is int:
        return stream
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        return int(proto()[1])
    return int(stream.handle)


def allocate(nbytes: int, stream, device) -> DeviceStorage:
    """Stream-ordered device memory from the device's memory pool (at least 256-byte aligned).

    Zero-size tensors get a 1-byte allocation so that every tensor has a real address.
    """
    buf = device.allocate(nbytes if nbytes > 0 else 1, stream=stream)
    # ``DeviceStorage(int(buf.handle), nbytes, buf, device.device_id)`` without its two
    # ``__init__`` frames and conversions: every library call allocates its output here
    st = _new_device_storage(DeviceStorage)
    st.ptr = int(buf.handle)
    st.nbytes = nbytes
    st.owner = buf
    st.moves = st.ready = None
    st.device_id = device.device_id
    st.foreign = False
    return st


def fill(ptr: int, pattern: int, itemsize: int, count: int, stream) -> None:
    """Set ``count`` elements of ``itemsize`` bytes (1, 2 or 4) to the bit ``pattern``."""
    if count <= 0:
        return
    d = _driver()
    h = stream_handle(stream)
    if itemsize == 1:
        _check(d.cuMemsetD8Async(ptr, pattern & 0xFF, count, h), "cuMemsetD8Async")
    elif itemsize == 2:
        _check(d.cuMemsetD16Async(ptr, pattern & 0xFFFF, count, h), "cuMemsetD16Async")
    elif itemsize == 4:
        _check(d.cuMemsetD32Async(ptr, pattern & 0xFFFFFFFF, count, h), "cuMemsetD32Async")
    elif itemsize == 8 and (pattern & 0xFFFFFFFF) == (pattern >> 32):
        _check(d.cuMemsetD32Async(ptr, pattern & 0xFFFFFFFF, 2 * count, h), "cuMemsetD32Async")
    elif itemsize == 8:
        # two interleaved 32-bit patterns: a 2-D memset of width 1 word, pitch 8 bytes
        lo, hi = pattern & 0xFFFFFFFF, pattern >> 32
        _check(d.cuMemsetD2D32Async(ptr, 8, lo, 1, count, h), "cuMemsetD2D32Async")
        _check(d.cuMemsetD2D32Async(ptr + 4, 8, hi, 1, count, h), "cuMemsetD2D32Async")
    else:
        raise LaunchError(f"cannot fill {itemsize}-byte elements")


def copy(dst: int, src: int, nbytes: int, stream) -> None:
    """Copy bytes between any two addresses the device can see (unified addressing)."""
    if nbytes <= 0:
        return
    _check(_driver().cuMemcpyAsync(dst, src, nbytes, stream_handle(stream)), "cuMemcpyAsync")


def wait_event_handle(stream, event_handle) -> None:
    _check(_driver().cuStreamWaitEvent(stream_handle(stream), event_handle, 0),
           "cuStreamWaitEvent")


__all__ = ["Storage", "DeviceStorage", "HostStorage", "host_storage", "host_address", "allocate", "fill", "copy",
           "stream_handle"]
