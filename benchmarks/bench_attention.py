"""Flash-attention forward f16 (causal and not) against PyTorch's SDPA (its default and its FlashAttention-2 backend): one family of ``bench_kernels.py``, which runs them all.

    python benchmarks/bench_attention.py [--out DIR] [--tune] [--quick]

Prints the table and writes ``benchmarks/results/kernels-attention-<device>.json``/``.csv`` and plots.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_kernels import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(families="attention", description=__doc__.split("\n")[0]))
