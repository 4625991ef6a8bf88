"""DLPack in and out, with ctypes: zero-copy exchange with PyTorch, CuPy, JAX and NumPy.

Owns the C structures of ``dlpack.h`` (legacy ``DLManagedTensor`` and versioned 1.x
``DLManagedTensorVersioned``), ``export_capsule`` (a PyCapsule describing one of our tensors,
kept alive until the consumer calls the deleter) and ``import_capsule`` (read a producer's
capsule; the returned owner calls the producer's deleter when it is garbage-collected).
Written here rather than borrowed from a library so that bf16 and fp8 travel too.
"""
from __future__ import annotations

import ctypes
import threading

from cutile_lab.errors import LaunchError

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13
DLPACK_VERSION = (1, 1)
FLAG_READ_ONLY = 1


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _DELETER), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


NAME_LEGACY = b"dltensor"
NAME_VERSIONED = b"dltensor_versioned"
NAME_USED_LEGACY = b"used_dltensor"
NAME_USED_VERSIONED = b"used_dltensor_versioned"

_api = ctypes.pythonapi
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

# Raw-pointer variants for the capsule destructor, which receives a borrowed PyObject*.
_is_valid_raw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_get_pointer_raw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))

_lock = threading.Lock()
_live: dict[int, tuple] = {}      # address of the managed struct -> what keeps it valid


def _release(address: int) -> None:
    with _lock:
        _live.pop(address, None)


@_DELETER
def _deleter(address):
    if address:
        _release(address)


@_CAPSULE_DESTRUCTOR
def _capsule_destructor(capsule):
    # Called when the capsule dies. If no consumer took it (still named "dltensor[...]"),
    # nobody will call the deleter: do it here.
    for name in (NAME_LEGACY, NAME_VERSIONED):
        if _is_valid_raw(capsule, name):
            address = _get_pointer_raw(capsule, name)
            if address:
                _release(address)
            return


def export_capsule(*, data_ptr: int, shape, strides, dl_dtype: tuple[int, int], device_type: int,
                   device_id: int, owner, versioned: bool, readonly: bool = False):
    """A DLPack capsule for ``shape``/``strides`` (elements) at ``data_ptr``; ``owner`` is kept
    alive until the consumer is done with it."""
    ndim = len(shape)
    shape_arr = (ctypes.c_int64 * max(ndim, 1))(*shape)
    strides_arr = (ctypes.c_int64 * max(ndim, 1))(*strides)
    code, bits = dl_dtype
    if versioned:
        m = DLManagedTensorVersioned()
        m.version = DLPackVersion(*DLPACK_VERSION)
        m.flags = FLAG_READ_ONLY if readonly else 0
        name = NAME_VERSIONED
    else:
        m = DLManagedTensor()
        name = NAME_LEGACY
    t = m.dl_tensor
    t.data = data_ptr or None
    t.device = DLDevice(device_type, device_id)
    t.ndim = ndim
    t.dtype = DLDataType(code, bits, 1)
    t.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(strides_arr, ctypes.POINTER(ctypes.c_int64))
    t.byte_offset = 0
    m.manager_ctx = None
    m.deleter = _deleter
    address = ctypes.addressof(m)
    with _lock:
        _live[address] = (m, shape_arr, strides_arr, owner)
    return _api.PyCapsule_New(address, name, _capsule_destructor)


def live_exports() -> int:
    """How many exported capsules are still held by a consumer (for tests)."""
    return len(_live)


class ImportedDLPack:
    """What a producer's capsule described; calls the producer's deleter when collected."""

    __slots__ = ("data_ptr", "shape", "strides", "code", "bits", "lanes", "device_type",
                 "device_id", "readonly", "_address", "_versioned", "_capsule", "producer")

    def __del__(self):
        address = getattr(self, "_address", None)
        if not address:
            return
        self._address = None
        try:
            cls = DLManagedTensorVersioned if self._versioned else DLManagedTensor
            m = cls.from_address(address)
            if m.deleter:
                m.deleter(address)
        except Exception:
            pass


def import_capsule(capsule, producer=None) -> ImportedDLPack:
    """Consume a DLPack capsule (renames it ``used_...``, as the protocol asks)."""
    if _api.PyCapsule_IsValid(capsule, NAME_VERSIONED):
        address = _api.PyCapsule_GetPointer(capsule, NAME_VERSIONED)
        m = DLManagedTensorVersioned.from_address(address)
        if m.version.major > 1:
            raise LaunchError(f"DLPack {m.version.major}.{m.version.minor} is too new")
        versioned, used = True, NAME_USED_VERSIONED
        readonly = bool(m.flags & FLAG_READ_ONLY)
    elif _api.PyCapsule_IsValid(capsule, NAME_LEGACY):
        address = _api.PyCapsule_GetPointer(capsule, NAME_LEGACY)
        m = DLManagedTensor.from_address(address)
        versioned, used, readonly = False, NAME_USED_LEGACY, False
    else:
        raise LaunchError("__dlpack__ returned something that is not a DLPack capsule")
    t = m.dl_tensor
    ndim = int(t.ndim)
    shape = tuple(int(t.shape[i]) for i in range(ndim))
    if t.strides:
        strides = tuple(int(t.strides[i]) for i in range(ndim))
    else:
        strides = _c_strides(shape)
    out = ImportedDLPack()
    out.data_ptr = int(t.data or 0) + int(t.byte_offset)
    out.shape, out.strides = shape, strides
    out.code, out.bits, out.lanes = int(t.dtype.code), int(t.dtype.bits), int(t.dtype.lanes)
    out.device_type, out.device_id = int(t.device.device_type), int(t.device.device_id)
    out.readonly = readonly
    out._versioned = versioned
    out._capsule = capsule
    out.producer = producer
    _api.PyCapsule_SetName(capsule, used)
    out._address = address
    return out


def _c_strides(shape) -> tuple[int, ...]:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(int(n), 1)
    return tuple(reversed(strides))


__all__ = ["export_capsule", "import_capsule", "ImportedDLPack", "KDL_CPU", "KDL_CUDA",
           "live_exports"]
