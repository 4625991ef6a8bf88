"""Signature annotations: ``Tensor[dtype, shape]`` (shared, read-only), ``Mut[Tensor[...]]`` (the
kernel's own exclusive tile of a partitioned output) and ``Const[int]`` (a compile-time constant).

These objects only exist so that kernels are valid Python and read well; the frontend reads
signatures from the syntax tree, so a wrong annotation becomes a diagnostic, not an exception.
"""
from __future__ import annotations

import keyword
from dataclasses import dataclass
from typing import Union

from cutile_lab.language.dtypes import DType

Dim = Union[int, str, None]  # fixed size, const-generic name, or None for '?'
ANY = None


def parse_shape(spec) -> tuple[Dim, ...]:
    """``"BM, BN"`` / ``"?"`` / ``(128, "B")`` / ``128`` -> a tuple of dims."""
    if isinstance(spec, str):
        parts = [p.strip() for p in spec.split(",")] if spec.strip() else []
        items: list = parts
    elif isinstance(spec, (tuple, list)):
        items = list(spec)
    else:
        items = [spec]
    dims: list[Dim] = []
    for p in items:
        if isinstance(p, str):
            p = p.strip()
            if p in ("?", "-1", ""):
                dims.append(None)
            elif p.lstrip("-").isdigit():
                dims.append(int(p))
            elif p.isidentifier() and keyword.iskeyword(p):
                raise ValueError(f"`{p}` is a Python keyword and cannot name a size: use a name "
                                 "like 'B'")
            elif p.isidentifier():
                dims.append(p)
            else:
                raise ValueError(f"bad dimension {p!r}: use a name like 'B', a number, or '?'")
        elif isinstance(p, int) and not isinstance(p, bool):
            dims.append(None if p == -1 else p)
        elif p is None:
            dims.append(None)
        else:
            raise ValueError(f"bad dimension {p!r}: use a name like 'B', a number, or '?'")
    return tuple(dims)


def format_shape(dims: tuple[Dim, ...]) -> str:
    return ", ".join("?" if d is None else str(d) for d in dims)


@dataclass(frozen=True)
class TensorType:
    dtype: DType
    shape: tuple[Dim, ...]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f'Tensor[{self.dtype}, "{format_shape(self.shape)}"]'


@dataclass(frozen=True)
class MutType:
    tensor: TensorType

    def __repr__(self) -> str:
        return f"Mut[{self.tensor!r}]"


class _TensorFactory:
    def __getitem__(self, item) -> TensorType:
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError('write Tensor[dtype, "shape"], e.g. Tensor[f32, "B"]')
        dtype, shape = item
        return TensorType(dtype, parse_shape(shape))

    def __repr__(self) -> str:
        return "Tensor"


class _MutFactory:
    def __getitem__(self, item) -> MutType:
        if not isinstance(item, TensorType):
            raise TypeError('write Mut[Tensor[dtype, "tile shape"]], e.g. Mut[Tensor[f32, "B"]]')
        return MutType(item)

    def __repr__(self) -> str:
        return "Mut"


class _ConstFactory:
    def __getitem__(self, item):
        return ("Const", item)

    def __repr__(self) -> str:
        return "Const"


Tensor = _TensorFactory()
Mut = _MutFactory()
Const = _ConstFactory()
