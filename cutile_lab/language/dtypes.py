"""Element types of the tile language and their NumPy / cuTile counterparts."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DType:
    name: str          # the tile-language spelling: f32, bf16, ...
    cutile: str        # attribute of ``cuda.tile``: float32, bfloat16, ...
    numpy: str         # NumPy dtype name ('bfloat16' and fp8 are emulated by the simulator)
    bits: int
    kind: str          # 'f' float, 'i' signed, 'u' unsigned, 'b' bool

    @property
    def itemsize(self) -> int:
        return max(1, self.bits // 8)

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    def __repr__(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name


f16 = DType("f16", "float16", "float16", 16, "f")
bf16 = DType("bf16", "bfloat16", "bfloat16", 16, "f")
f32 = DType("f32", "float32", "float32", 32, "f")
f64 = DType("f64", "float64", "float64", 64, "f")
tf32 = DType("tf32", "tfloat32", "float32", 32, "f")
f8e4m3 = DType("f8e4m3", "float8_e4m3fn", "float8_e4m3fn", 8, "f")
f8e5m2 = DType("f8e5m2", "float8_e5m2", "float8_e5m2", 8, "f")
i8 = DType("i8", "int8", "int8", 8, "i")
i16 = DType("i16", "int16", "int16", 16, "i")
i32 = DType("i32", "int32", "int32", 32, "i")
i64 = DType("i64", "int64", "int64", 64, "i")
u8 = DType("u8", "uint8", "uint8", 8, "u")
u16 = DType("u16", "uint16", "uint16", 16, "u")
u32 = DType("u32", "uint32", "uint32", 32, "u")
u64 = DType("u64", "uint64", "uint64", 64, "u")
bool_ = DType("bool", "bool_", "bool", 8, "b")

DTYPES: dict[str, DType] = {d.name: d for d in
                            (f16, bf16, f32, f64, tf32, f8e4m3, f8e5m2, i8, i16, i32, i64,
                             u8, u16, u32, u64, bool_)}
# Long spellings are accepted too, so that `float16` reads as it does in NumPy and cuTile.
ALIASES: dict[str, DType] = {d.cutile.rstrip("_"): d for d in DTYPES.values()}
ALIASES.update({"bool_": bool_, "half": f16, "float": f32, "double": f64})


def dtype_by_name(name: str) -> DType | None:
    return DTYPES.get(name) or ALIASES.get(name)


def dtype_of_numpy(np_dtype) -> DType | None:
    """The tile dtype of a NumPy (or ml_dtypes) dtype, by name."""
    name = str(getattr(np_dtype, "name", np_dtype))
    for d in DTYPES.values():
        if d.numpy == name and d is not tf32:
            return d
    return None
