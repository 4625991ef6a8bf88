"""Launch arguments described without any device API (``ArgDesc``: a view's address, shape,
strides and element size, the tensor that owns it, its partition tile), and the byte geometry of
such views: which bytes a view spans, whether two views share a byte, and whether two elements
of one view do (``overlaps_itself``).

The runtime builds these descriptions; ``launch_rules`` and ``cuda_launch`` check them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cutile_lab.diagnostics import Span
from cutile_lab.language.dtypes import DTYPES, dtype_by_name, dtype_of_numpy

Role = Literal["mut", "shared", "scalar"]


@dataclass(slots=True)
class ArgDesc:
    """One launch argument, described without any device API.

    ``name`` is the kernel parameter it is bound to; ``ptr`` the address of element 0 (of the
    view), ``strides`` in elements (negative allowed), ``itemsize`` in bytes; ``tensor_id``
    identifies the owning tensor for the borrow state; ``partition_tile`` is the tile shape when
    the argument is a partition; ``origin`` is where the user created it (a label, if given);
    ``value`` is a scalar argument's value (it binds a ``Const`` parameter)."""

    name: str
    role: Role
    ptr: int = 0
    shape: tuple = ()
    strides: tuple = ()
    itemsize: int = 0
    dtype: str = ""
    tensor_id: int | None = None
    partition_tile: tuple | None = None
    origin: Span | None = None
    value: object = None

    @property
    def is_array(self) -> bool:
        return self.role in ("mut", "shared")

    def extent(self) -> tuple[int, int]:
        """The bytes ``[lo, hi)`` the view can touch; ``lo == hi`` when it is empty."""
        lo = hi = self.ptr
        for s, st in zip(self.shape, self.strides):
            if s <= 0:
                return self.ptr, self.ptr
            d = (s - 1) * st * self.itemsize
            if d < 0:
                lo += d
            else:
                hi += d
        if len(self.strides) < len(self.shape):
            # strides unknown: assume a contiguous row-major block
            n = 1
            for s in self.shape:
                if s <= 0:
                    return self.ptr, self.ptr
                n *= s
            return self.ptr, self.ptr + n * self.itemsize
        return lo, hi + self.itemsize


def views_overlap(a: ArgDesc, b: ArgDesc, budget: int = 4000) -> bool:
    """Whether some byte of view ``a`` is also a byte of view ``b``.

    Disjoint byte ranges settle it; otherwise the question is an integer equation over the
    index vectors of both views (``Σ i·sa - Σ j·sb`` must land within an element's width of
    ``ptr_b - ptr_a``), solved exactly by a bounded search, largest strides first. Interleaved
    views (``x[::2]`` and ``x[1::2]``) and column blocks of one matrix come out disjoint; when the
    search runs past ``budget`` steps the answer is "overlaps", which is the safe side."""
    alo, ahi = a.extent()
    blo, bhi = b.extent()
    if alo == ahi or blo == bhi or ahi <= blo or bhi <= alo:
        return False
    if len(a.strides) < len(a.shape) or len(b.strides) < len(b.shape):
        return True
    # variables: a's indices (coefficient +stride) and b's (coefficient -stride), in bytes
    terms = []
    for s, st in zip(a.shape, a.strides):
        if s > 1 and st != 0:
            terms.append((st * a.itemsize, s - 1))
    for s, st in zip(b.shape, b.strides):
        if s > 1 and st != 0:
            terms.append((-st * b.itemsize, s - 1))
    # normalise to positive coefficients: c*x with x in [0, n] == |c|*(n - x) + c*n
    target_lo = b.ptr - a.ptr - a.itemsize + 1   # Σ must be in [target_lo, target_hi]
    target_hi = b.ptr - a.ptr + b.itemsize - 1
    coeffs = []
    for c, n in terms:
        if c < 0:
            target_lo -= c * n
            target_hi -= c * n
            c = -c
        coeffs.append((c, n))
    coeffs.sort(key=lambda t: -t[0])
    # suffix sums of the largest value the remaining terms can add
    rest = [0] * (len(coeffs) + 1)
    for k in range(len(coeffs) - 1, -1, -1):
        rest[k] = rest[k + 1] + coeffs[k][0] * coeffs[k][1]
    steps = [0]

    def search(k: int, lo: int, hi: int) -> bool:
        steps[0] += 1
        if steps[0] > budget:
            raise _Budget
        if hi < 0 or lo > rest[k]:
            return False
        if k == len(coeffs):
            return lo <= 0 <= hi
        c, n = coeffs[k]
        # x must satisfy lo - rest[k+1] <= c*x <= hi
        x_min = max(0, -((-(lo - rest[k + 1])) // c))
        x_max = min(n, hi // c) if hi >= 0 else -1
        for x in range(x_min, x_max + 1):
            if search(k + 1, lo - c * x, hi - c * x):
                return True
        return False

    try:
        return search(0, target_lo, target_hi)
    except _Budget:
        return True


def overlaps_itself(a: ArgDesc, budget: int = 4000) -> bool:
    """Whether two different elements of view ``a`` share a byte (a stride of 0 along an axis of
    more than one element, ``as_strided`` rows that run into each other). Ordinary views
    (slices, steps, transposes) pass the quick test: sorted by stride, each axis steps past all
    the smaller ones (a vector: only a stride of 0 repeats an element; a matrix: its two strides
    compared without sorting). Otherwise the question is whether some non-zero index difference
    ``d`` (``|d_k| < shape_k``) has ``Σ d_k·stride_k = 0``, searched exactly within ``budget``
    steps; past it the answer is "overlaps", the safe side."""
    shape, strides = a.shape, a.strides
    if len(shape) == 1 and len(strides) == 1:
        return strides[0] == 0 and shape[0] > 1
    if len(strides) < len(shape) or any(n <= 0 for n in shape):
        return False
    if len(shape) == 2:         # the common case without sorting: a matrix, sliced or transposed
        (m, n), (s0, s1) = shape, (abs(strides[0]), abs(strides[1]))
        if m == 1 or n == 1:
            return (s1 if m == 1 else s0) == 0 and (m > 1 or n > 1)
        if s0 == 0 or s1 == 0:
            return True
        if (s0 > (n - 1) * s1) if s1 <= s0 else (s1 > (m - 1) * s0):
            return False
    dims = sorted(((abs(st), n) for n, st in zip(a.shape, a.strides) if n > 1),
                  key=lambda t: t[0])
    if any(st == 0 for st, _ in dims):
        return True
    reach = 0                  # the largest offset, in elements, of the smaller-stride axes
    for st, n in dims:
        if st <= reach:
            break
        reach += (n - 1) * st
    else:
        return False
    steps = [0]

    def search(k: int, total: int, nonzero: bool) -> bool:
        steps[0] += 1
        if steps[0] > budget:
            raise _Budget
        if k == len(dims):
            return nonzero and total == 0
        st, n = dims[k]
        rest = sum((m - 1) * s for s, m in dims[k + 1:])
        for d in range(-(n - 1), n):
            t = total + d * st
            if abs(t) <= rest and search(k + 1, t, nonzero or d != 0):
                return True
        return False

    try:
        return search(0, 0, False)
    except _Budget:
        return True


class _Budget(Exception):
    pass


def dtype_name(name: str) -> str:
    """The lab's name of an argument's dtype, given as the lab's, cuTile's or NumPy's name."""
    if name in DTYPES:
        return name
    d = dtype_by_name(name)
    if d is not None:
        return d.name
    d = dtype_of_numpy(name)
    return d.name if d is not None else name
