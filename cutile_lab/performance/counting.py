"""Flop and byte counts of kernels, for rooflines and bandwidth figures.

Owns: ``FlopByteCount`` and the counting rules for the kernel shapes the lab measures
(element-wise, GEMM, row-wise reductions). The counts are the *compulsory* work: every input
byte read once, every output byte written once, flops as the algorithm defines them (a GEMM is
2·M·N·K). Deriving counts from a particular kernel's syntax tree is the compile pipeline's job;
it calls these helpers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class FlopByteCount:
    flops: float
    bytes_read: float
    bytes_written: float

    @property
    def bytes(self) -> float:
        """Bytes moved to and from memory in all."""
        return self.bytes_read + self.bytes_written

    @property
    def intensity(self) -> float:
        """Arithmetic intensity in flop/byte (inf when no bytes move)."""
        return self.flops / self.bytes if self.bytes else math.inf

    def __add__(self, other: "FlopByteCount") -> "FlopByteCount":
        if not isinstance(other, FlopByteCount):
            return NotImplemented
        return FlopByteCount(self.flops + other.flops, self.bytes_read + other.bytes_read,
                             self.bytes_written + other.bytes_written)

    def __mul__(self, times: int | float) -> "FlopByteCount":
        """The count of running the same work ``times`` times."""
        if not isinstance(times, (int, float)):
            return NotImplemented
        return FlopByteCount(self.flops * times, self.bytes_read * times,
                             self.bytes_written * times)

    __rmul__ = __mul__


ZERO = FlopByteCount(0, 0, 0)


def count_elementwise(n: int, dtype_bytes: int, n_inputs: int, n_outputs: int = 1,
                      flops_per_elem: float = 1) -> FlopByteCount:
    """``n`` elements: each input read once, each output written once, ``flops_per_elem`` each.

    ``z = x + y`` on f32 is ``count_elementwise(n, 4, n_inputs=2)``; a copy has
    ``flops_per_elem=0``.
    """
    return FlopByteCount(flops=n * flops_per_elem,
                         bytes_read=n * dtype_bytes * n_inputs,
                         bytes_written=n * dtype_bytes * n_outputs)


def count_gemm(M: int, N: int, K: int, in_bytes: int, out_bytes: int, *,
               reads_c: bool = False) -> FlopByteCount:
    """``C[M,N] = A[M,K] @ B[K,N]``: 2·M·N·K flops, A and B read once, C written once.

    ``reads_c=True`` counts reading C as well (``C = alpha·A@B + beta·C`` with beta ≠ 0),
    plus the 2·M·N flops of the scaling and addition.
    """
    flops = 2 * M * N * K + (2 * M * N if reads_c else 0)
    read = (M * K + K * N) * in_bytes + (M * N * out_bytes if reads_c else 0)
    return FlopByteCount(flops=flops, bytes_read=read, bytes_written=M * N * out_bytes)


def count_rowwise(rows: int, cols: int, dtype_bytes: int, flops_per_elem: float, *,
                  n_inputs: int = 1, n_outputs: int = 1,
                  param_bytes: int = 0) -> FlopByteCount:
    """A row-wise fused kernel (softmax, layernorm, rmsnorm) over a ``rows × cols`` tensor.

    ``n_inputs`` / ``n_outputs`` full-size tensors are read / written once; ``param_bytes``
    adds per-column parameters read once (a layernorm's weight and bias:
    ``2 * cols * dtype_bytes``). ``flops_per_elem`` is the algorithm's count, e.g. about 5 for a
    softmax (max, subtract, exp, sum, divide).
    """
    n = rows * cols
    return FlopByteCount(flops=n * flops_per_elem,
                         bytes_read=n * dtype_bytes * n_inputs + param_bytes,
                         bytes_written=n * dtype_bytes * n_outputs)
