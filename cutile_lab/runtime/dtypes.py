"""Element types at the host boundary: tile dtypes <-> NumPy, DLPack, CUDA Array Interface, torch.

Owns the conversions only. ``bf16`` and the fp8 types have no NumPy dtype of their own; on the
CPU they use ``ml_dtypes`` when it is installed (and say so when it is not).
"""
from __future__ import annotations

import numpy as np

from cutile_lab.errors import LaunchError
from cutile_lab.language.dtypes import DTYPES, DType, dtype_by_name, dtype_of_numpy

# DLPack DLDataTypeCode values (dlpack.h 1.1).
DL_INT, DL_UINT, DL_FLOAT, DL_BFLOAT, DL_COMPLEX, DL_BOOL = 0, 1, 2, 4, 5, 6
DL_F8_E4M3FN, DL_F8_E5M2 = 10, 12

_TO_DL = {
    "f16": (DL_FLOAT, 16), "f32": (DL_FLOAT, 32), "f64": (DL_FLOAT, 64), "tf32": (DL_FLOAT, 32),
    "bf16": (DL_BFLOAT, 16), "i8": (DL_INT, 8), "i16": (DL_INT, 16), "i32": (DL_INT, 32),
    "i64": (DL_INT, 64), "u8": (DL_UINT, 8), "u16": (DL_UINT, 16), "u32": (DL_UINT, 32),
    "u64": (DL_UINT, 64), "bool": (DL_BOOL, 8), "f8e4m3": (DL_F8_E4M3FN, 8),
    "f8e5m2": (DL_F8_E5M2, 8),
}
_FROM_DL = {v: DTYPES[k] for k, v in _TO_DL.items() if k != "tf32"}

_TYPESTR = {"f16": "<f2", "f32": "<f4", "f64": "<f8", "tf32": "<f4", "i8": "|i1", "i16": "<i2",
            "i32": "<i4", "i64": "<i8", "u8": "|u1", "u16": "<u2", "u32": "<u4", "u64": "<u8",
            "bool": "|b1"}

_TORCH_NAMES = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
                "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
                "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "bool",
                "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2", "half": "f16",
                "float": "f32", "double": "f64"}


def as_dtype(dtype) -> DType:
    """A tile dtype from a tile dtype, a name (``"f32"``, ``"float32"``), a NumPy dtype or a
    torch dtype."""
    if isinstance(dtype, DType):
        return dtype
    if dtype is None:
        return DTYPES["f32"]
    text = dtype if isinstance(dtype, str) else str(dtype)
    named = isinstance(dtype, str) or text.startswith("torch.")
    if text.startswith("torch."):
        text = text[len("torch."):]
    if named:
        d = dtype_by_name(text) or _by_torch_name(text)
        if d is not None:
            return d
    else:
        try:
            d = dtype_of_numpy(np.dtype(dtype))
        except TypeError:
            d = None
        if d is not None:
            return d
    raise LaunchError(f"unknown dtype {dtype!r}",
                      help="use a tile dtype (cl.f32, cl.f16, cl.bf16, cl.i32, ...) or its name")


def _by_torch_name(name: str) -> DType | None:
    short = _TORCH_NAMES.get(name)
    return DTYPES[short] if short else None


def numpy_dtype(dtype: DType) -> np.dtype:
    """The host (NumPy) dtype of a tile dtype; bf16/fp8 through ``ml_dtypes``."""
    name = dtype.numpy
    try:
        return np.dtype(name)
    except TypeError:
        pass
    try:
        import ml_dtypes
    except ImportError:
        raise LaunchError(f"{dtype} needs the `ml_dtypes` package on the host",
                          help="pip install ml_dtypes (NumPy has no bfloat16/float8 of its own)"
                          ) from None
    return np.dtype(getattr(ml_dtypes, name))


def has_numpy_dtype(dtype: DType) -> bool:
    try:
        numpy_dtype(dtype)
        return True
    except LaunchError:
        return False


def to_dlpack(dtype: DType) -> tuple[int, int]:
    return _TO_DL[dtype.name]


def from_dlpack(code: int, bits: int, lanes: int = 1) -> DType:
    if lanes != 1:
        raise LaunchError(f"vector DLPack dtypes (lanes={lanes}) are not supported")
    d = _FROM_DL.get((code, bits))
    if d is None:
        raise LaunchError(f"unsupported DLPack dtype (code {code}, {bits} bits)")
    return d


def typestr(dtype: DType) -> str:
    ts = _TYPESTR.get(dtype.name)
    if ts is None:
        raise LaunchError(f"{dtype} has no __cuda_array_interface__ type string",
                          help="share it through DLPack instead: torch.from_dlpack(t)")
    return ts


def from_typestr(ts: str, descr=None) -> DType:
    try:
        d = dtype_of_numpy(np.dtype(ts))
    except TypeError:
        d = None
    if d is None:
        raise LaunchError(f"unsupported __cuda_array_interface__ type {ts!r}")
    return d


_SCALAR_TYPES: dict = {}            # dtype name -> its NumPy scalar type (the plain dtypes)


def scalar_value(value, dtype: DType):
    """A NumPy scalar of exactly ``dtype``'s width, as a kernel argument.

    cuda.core passes a Python ``int`` as a 64-bit pointer and a Python ``float`` as a double,
    so every scalar argument is converted to a NumPy scalar of the declared width here. bf16
    (which NumPy lacks) travels as its 16-bit pattern in a ``uint16``. The scalar type of a
    plain dtype is kept per name (each GPU launch with scalars converts them).
    """
    name = dtype.name
    t = _SCALAR_TYPES.get(name)
    if t is not None:
        return t(value)
    if name == "bf16":
        f = np.float32(value).view(np.uint32)
        # round to nearest even, as a conversion to bfloat16 does
        rounded = (int(f) + 0x7FFF + ((int(f) >> 16) & 1)) >> 16
        return np.uint16(rounded & 0xFFFF)
    if name in ("f8e4m3", "f8e5m2"):
        return np.uint8(np.asarray(value, dtype=numpy_dtype(dtype)).view(np.uint8))
    if name == "tf32":
        return np.float32(value)
    t = _SCALAR_TYPES[name] = np.dtype(dtype.numpy).type
    return t(value)


__all__ = ["as_dtype", "numpy_dtype", "has_numpy_dtype", "to_dlpack", "from_dlpack", "typestr",
           "from_typestr", "scalar_value"]
