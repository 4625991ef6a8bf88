"""GEMM f16/bf16 (4096 and 8192) against torch.matmul (cuBLAS), and the safe kernel against its unsafe twin: one family of ``bench_kernels.py``, which runs them all.

    python benchmarks/bench_gemm.py [--out DIR] [--tune] [--quick]

Prints the table and writes ``benchmarks/results/kernels-gemm-<device>.json``/``.csv`` and plots.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_kernels import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(families="gemm", description=__doc__.split("\n")[0]))
