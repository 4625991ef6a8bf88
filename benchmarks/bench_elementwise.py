"""Element-wise kernels (add) against torch.add, CuPy's add and a device-to-device copy: one family of ``bench_kernels.py``, which runs them all.

    python benchmarks/bench_elementwise.py [--out DIR] [--tune] [--quick]

Prints the table and writes ``benchmarks/results/kernels-add-<device>.json``/``.csv`` and plots.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_kernels import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(families="add", description=__doc__.split("\n")[0]))
