"""Row-wise kernels (softmax, layernorm, rmsnorm; f16 rows of 1024, 8192 and 32768 columns) against PyTorch: one family of ``bench_kernels.py``, which runs them all.

    python benchmarks/bench_rowwise.py [--out DIR] [--tune] [--quick]

Prints the table and writes ``benchmarks/results/kernels-rowwise-<device>.json``/``.csv`` and plots.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_kernels import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(families="rowwise", description=__doc__.split("\n")[0]))
