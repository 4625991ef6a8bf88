"""Element types as the simulator sees them: cuTile's dtypes, their NumPy storage, and cuTile's
promotion rules.

Owns ``SimDType`` (what ``ct.float32`` & co. are inside a simulated kernel), the storage type of
each (``ml_dtypes`` for bf16 and fp8 when installed), the promotion of two dtypes and of a dtype
with a Python constant (cuTile's "loosely typed" scalars), the implicit casts stores allow, and
rounding to tf32. It knows nothing of tiles, memory or launches.

Numerics, stated once (the module docstring of ``cutile_lab.simulation`` repeats the summary):

* Every operation produces its result in its cuTile result dtype: f16/bf16/fp8 results are
  computed in float32 and rounded (round-to-nearest-even) to the storage type after each op,
  as the GPU does for scalar arithmetic (exactly, for + - * / and sqrt).
* ``tfloat32`` is stored as float32 whose mantissa is rounded to 10 bits when a value is
  converted to it (``astype(tfloat32)``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

try:  # bf16 and fp8 storage
    import ml_dtypes as _mld
except ImportError:  # pragma: no cover - exercised only without ml_dtypes
    _mld = None

# Categories, ordered by strength (cuTile's NumericDTypeCategory).
BOOL, INT, FLOAT = 0, 1, 2


@dataclass(frozen=True, eq=False)
class SimDType:
    """A cuTile dtype inside a simulated kernel (``ct.float16``, ``x.dtype``, ``t.dtype``)."""

    name: str                 # cuTile's name: float16, bfloat16, int32, bool_ ...
    short: str                # tile-language spelling: f16, bf16, i32, bool ...
    bits: int
    category: int             # BOOL, INT or FLOAT
    signed: bool
    restricted: bool          # tf32 and fp8: no implicit promotion at all
    storage: np.dtype | None  # None: needs ml_dtypes, which is not installed

    @property
    def bitwidth(self) -> int:
        return self.bits

    @property
    def is_float(self) -> bool:
        return self.category == FLOAT

    @property
    def is_int(self) -> bool:
        return self.category == INT

    @property
    def is_bool(self) -> bool:
        return self.category == BOOL

    @property
    def compute(self) -> np.dtype:
        """The NumPy type arithmetic is carried out in before rounding to ``storage``."""
        if self.category == FLOAT and self.bits < 32:
            return np.dtype(np.float32)
        return self.np

    @property
    def np(self) -> np.dtype:
        if self.storage is None:
            from cutile_lab.errors import SimulationError
            raise SimulationError(f"the simulator needs the `ml_dtypes` package for {self.name}",
                                  help="install ml_dtypes (it provides bfloat16 and fp8 for "
                                       "NumPy)")
        return self.storage

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __reduce__(self):  # pickles (multiprocessing, caching) as the shared instance
        return (dtype_by_name, (self.name,))


def _ml(name: str):
    return np.dtype(getattr(_mld, name)) if _mld is not None and hasattr(_mld, name) else None


def _d(name, short, bits, cat, signed, storage, restricted=False) -> SimDType:
    return SimDType(name, short, bits, cat, signed, restricted, storage)


bool_ = _d("bool_", "bool", 1, BOOL, False, np.dtype(np.bool_))
uint8 = _d("uint8", "u8", 8, INT, False, np.dtype(np.uint8))
uint16 = _d("uint16", "u16", 16, INT, False, np.dtype(np.uint16))
uint32 = _d("uint32", "u32", 32, INT, False, np.dtype(np.uint32))
uint64 = _d("uint64", "u64", 64, INT, False, np.dtype(np.uint64))
int8 = _d("int8", "i8", 8, INT, True, np.dtype(np.int8))
int16 = _d("int16", "i16", 16, INT, True, np.dtype(np.int16))
int32 = _d("int32", "i32", 32, INT, True, np.dtype(np.int32))
int64 = _d("int64", "i64", 64, INT, True, np.dtype(np.int64))
float16 = _d("float16", "f16", 16, FLOAT, True, np.dtype(np.float16))
float32 = _d("float32", "f32", 32, FLOAT, True, np.dtype(np.float32))
float64 = _d("float64", "f64", 64, FLOAT, True, np.dtype(np.float64))
bfloat16 = _d("bfloat16", "bf16", 16, FLOAT, True, _ml("bfloat16"))
tfloat32 = _d("tfloat32", "tf32", 32, FLOAT, True, np.dtype(np.float32), restricted=True)
float8_e4m3fn = _d("float8_e4m3fn", "f8e4m3", 8, FLOAT, True, _ml("float8_e4m3fn"), True)
float8_e5m2 = _d("float8_e5m2", "f8e5m2", 8, FLOAT, True, _ml("float8_e5m2"), True)
float8_e8m0fnu = _d("float8_e8m0fnu", "f8e8m0", 8, FLOAT, False, _ml("float8_e8m0fnu"), True)
float4_e2m1fn = _d("float4_e2m1fn", "f4e2m1", 4, FLOAT, True, _ml("float4_e2m1fn"), True)

ALL: tuple[SimDType, ...] = (bool_, uint8, uint16, uint32, uint64, int8, int16, int32, int64,
                             float16, float32, float64, bfloat16, tfloat32, float8_e4m3fn,
                             float8_e5m2, float8_e8m0fnu, float4_e2m1fn)
BY_NAME: dict[str, SimDType] = {d.name: d for d in ALL}
BY_NAME.update({d.short: d for d in ALL})
BY_NAME.update({"bool": bool_, "f8e4m3fn": float8_e4m3fn})

_BY_STORAGE: dict[np.dtype, SimDType] = {}
for _t in ALL:
    if _t is not tfloat32 and _t.storage is not None:
        _BY_STORAGE.setdefault(_t.storage, _t)


def dtype_by_name(name: str) -> SimDType:
    return BY_NAME[name]


def of_numpy(np_dtype) -> SimDType | None:
    """The cuTile dtype stored as ``np_dtype`` (float32 is float32, never tf32)."""
    return _BY_STORAGE.get(np.dtype(np_dtype))


def as_dtype(value) -> SimDType:
    """``ct.float32``, a tile-language ``DType`` (``f32``), a NumPy dtype or a name."""
    if isinstance(value, SimDType):
        return value
    name = getattr(value, "cutile", None)          # cutile_lab.language.dtypes.DType
    if isinstance(name, str) and name in BY_NAME:
        return BY_NAME[name]
    if isinstance(value, str) and value in BY_NAME:
        return BY_NAME[value]
    try:
        d = of_numpy(np.dtype(value))
    except TypeError:
        d = None
    if d is None:
        raise TypeError(f"{value!r} is not a dtype")
    return d


# --- promotion ---------------------------------------------------------------------------------

def _promote_uncached(a: SimDType, b: SimDType) -> SimDType | None:
    if a is b:
        return a
    if a.restricted or b.restricted:
        return None
    if a.category == BOOL:
        return b
    if b.category == BOOL:
        return a
    if a.category == INT and b.category == INT:
        if a.signed != b.signed:
            return None
        return a if a.bits >= b.bits else b
    if a.category == FLOAT and b.category == FLOAT:
        if {a, b} == {float16, bfloat16}:
            return None
        return a if a.bits >= b.bits else b
    return a if a.category == FLOAT else b   # int with float: the float


_PROMOTE: dict[tuple[SimDType, SimDType], SimDType | None] = {
    (a, b): _promote_uncached(a, b) for a in ALL for b in ALL}


class PromotionError(TypeError):
    pass


def promote(a: SimDType, b: SimDType) -> SimDType:
    r = _PROMOTE[(a, b)]
    if r is None:
        if a.restricted or b.restricted:
            raise PromotionError(f"implicit promotion of {a} and {b} is not supported (it "
                                 "involves a restricted float type); convert explicitly with "
                                 "astype")
        raise PromotionError(f"implicit promotion of {a} and {b} is not supported; convert "
                             "explicitly with astype")
    return r


def constant_dtype(value) -> SimDType:
    """The dtype cuTile gives a Python constant on its own (``dtype_of_constant_scalar``)."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, int):
        if -2 ** 31 <= value < 2 ** 31:
            return int32
        if -2 ** 63 <= value < 2 ** 63:
            return int64
        if 0 <= value < 2 ** 64:
            return uint64
        raise PromotionError(f"constant {value} is out of range of every integer type")
    if isinstance(value, float):
        return float32
    raise PromotionError(f"a {type(value).__name__} cannot be used as a number in a kernel")


def int_range(d: SimDType) -> tuple[int, int]:
    if d.signed:
        return -(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1
    return 0, (1 << d.bits) - 1


def promote_with_constant(d: SimDType, value) -> SimDType:
    """cuTile's rule for a typed operand and a loosely typed Python constant: in the same
    category the typed operand's dtype wins (an int constant must fit it); otherwise the
    stronger category wins, with the constant's default dtype."""
    cd = constant_dtype(value)
    cat = d.category
    if cd.category == cat:
        if cat == INT and not isinstance(value, bool):
            lo, hi = int_range(d)
            if not lo <= value <= hi:
                raise PromotionError(f"integer constant {value} is out of range of {d}")
        return d
    return cd if cd.category > cat else d


def check_implicit_cast(src: SimDType | None, value, target: SimDType) -> None:
    """Raise ``PromotionError`` unless a store/update may convert ``src`` (or the constant
    ``value`` when ``src`` is None) to ``target`` without an explicit ``astype``."""
    if src is None:
        cd = constant_dtype(value)
        if target.category == BOOL:
            if cd.category not in (BOOL, INT) or value not in (0, 1):
                raise PromotionError(f"cannot implicitly convert {value!r} to {target}")
        elif cd.category > target.category:
            raise PromotionError(f"cannot implicitly convert {value!r} to {target}")
        elif cd.category == target.category == INT:
            lo, hi = int_range(target)
            if not lo <= value <= hi:
                raise PromotionError(f"{value} is out of range of {target}")
        return
    if src is target:
        return
    if _PROMOTE[(src, target)] is not target:
        raise PromotionError(f"cannot implicitly convert {src} to {target}")


# --- rounding ----------------------------------------------------------------------------------

def round_to_tf32(a: np.ndarray) -> np.ndarray:
    """float32 values rounded (to nearest, ties to even) to tf32's 10-bit mantissa."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    bits = a.view(np.uint32)
    finite = (bits & 0x7F800000) != 0x7F800000
    rounded = (bits + np.uint32(0xFFF) + ((bits >> np.uint32(13)) & np.uint32(1))) \
        & np.uint32(0xFFFFE000)
    return np.where(finite, rounded, bits).view(np.float32)


def convert(a, src: SimDType | None, dst: SimDType) -> np.ndarray:
    """``a`` (an array stored as ``src``, or a Python constant when ``src`` is None) converted
    to ``dst``'s storage, as ``astype`` does on the GPU: round-to-nearest-even between floats,
    float to integer truncates toward zero and saturates (NaN becomes 0), anything to bool is
    ``!= 0``."""
    if src is dst:
        return a
    a = np.asarray(a)
    if dst is bool_:
        return a != 0
    if src is not None and src.category == FLOAT and src.storage is not None \
            and a.dtype.kind not in "fiub":
        a = a.astype(np.float32)            # ml_dtypes types convert through float32
    if dst is tfloat32:
        return round_to_tf32(a.astype(np.float32))
    if dst is float8_e4m3fn or dst is float8_e5m2:
        # the GPU converts to fp8 with saturation to the largest finite value (cvt ...satfinite:
        # 1e6 -> 448 in e4m3, measured on an H100); NaN stays NaN
        top = float(_mld.finfo(dst.np).max)
        with np.errstate(invalid="ignore"):
            a = np.where(np.isnan(a), a, np.clip(a.astype(np.float32), -top, top))
    if dst.category == INT and a.dtype.kind == "f":
        lo, hi = int_range(dst)
        if dst.bits == 8:
            # the GPU has no 8-bit float-to-integer conversion: the compiler converts to a
            # 16-bit integer (saturating there) and keeps the low byte, so 300.0 -> 44 in i8,
            # +inf -> -1 (0x7fff), -inf -> 0 (0x8000); measured on an H100 against this
            lo, hi = (-(1 << 15), (1 << 15) - 1) if lo < 0 else (0, (1 << 16) - 1)
            with np.errstate(invalid="ignore"):
                a = np.nan_to_num(np.trunc(a.astype(np.float64)), nan=0.0)
                wide = np.clip(a, float(lo), float(hi)).astype(np.int32)
            return wide.astype(np.uint16).astype(np.uint8).view(dst.np) \
                if np.dtype(dst.np).kind == "i" else wide.astype(np.uint8)
        with np.errstate(invalid="ignore"):
            a = np.nan_to_num(np.trunc(a.astype(np.float64)), nan=0.0)
            a = np.clip(a, float(lo), float(hi))
        if dst.bits == 64:   # float64 cannot hold the int64 bounds exactly
            big = a >= float(hi)
            with np.errstate(invalid="ignore"):
                out = np.where(big, 0.0, a).astype(dst.np)
            out[big] = hi
            return out
    return a.astype(dst.np)
