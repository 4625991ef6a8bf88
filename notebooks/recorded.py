"""Results recorded on a GPU, for the notebooks to show beside what the simulator computes.

Reads the benchmark results committed in ``benchmarks/results/`` (written by
``benchmarks/bench_kernels.py`` and ``benchmarks/bench_runtime.py`` on a GPU). Nothing here
measures: every table comes with a caption that says it is recorded, on which device, and when,
so that a notebook run without a GPU can show what the same kernels did on one.
"""
from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

# a checkout's benchmarks/results, or the copy an installed package ships beside its tutorials
_HERE = Path(__file__).resolve().parent
RESULTS = next((p for p in (_HERE.parent / "benchmarks" / "results", _HERE / "results")
                if p.is_dir()), _HERE.parent / "benchmarks" / "results")
KERNELS = "kernels-nvidia-h100-80gb-hbm3.json"
RUNTIME = "runtime-nvidia-h100-80gb-hbm3.json"

__all__ = ["caption", "kernel_rows", "launch_overheads", "figure"]


def _load(name: str) -> dict:
    path = RESULTS / name
    if not path.exists():
        raise FileNotFoundError(f"no recorded results at {path} (run the benchmarks on a GPU "
                                "with --out benchmarks/results)")
    return json.loads(path.read_text())


def caption(name: str = KERNELS) -> str:
    """``recorded on NVIDIA H100 80GB HBM3 (sm_90) on 2026-11-26, ...``."""
    d = _load(name)
    when = datetime.fromisoformat(d["date"]).strftime("%Y-%m-%d %H:%M UTC")
    script = "bench_kernels.py" if name.startswith("kernels") else "bench_runtime.py"
    return (f"RECORDED on {d['device']} ({d.get('arch', '?')}) on {when} by "
            f"benchmarks/{script} (benchmarks/results/{name}); not measured by this notebook")


def kernel_rows(family: str, name: str = KERNELS, columns=None, contains: str = ""):
    """The rows of one kernel family (``gemm``, ``add``, ``layernorm``...) as a DataFrame,
    those whose name contains ``contains``."""
    import pandas as pd
    rows = [r for r in _load(name)["rows"]
            if r.get("family") == family and contains in r.get("name", "")]
    df = pd.DataFrame(rows)
    keep = [c for c in (columns or ["name", "ms", "tb_s", "tflop_s", "pct_bw", "pct_flops",
                                    "vs_baseline"]) if c in df.columns]
    df = df[keep].rename(columns={"ms": "ms (GPU)", "tb_s": "TB/s", "tflop_s": "TFLOP/s",
                                  "pct_bw": "% of bandwidth", "pct_flops": "% of peak flops",
                                  "vs_baseline": "speed-up vs PyTorch (same run)"})
    return df.round(3)


def launch_overheads(name: str = RUNTIME):
    """Host cost per launch (µs) of the ways to launch, from the runtime benchmark."""
    import pandas as pd
    wanted = {
        "cutile_lab sync launch (op.sync())": "launch and wait (.sync()): a host round trip",
        "cutile_lab async launch (op.start(s))": "start a kept op again (.start(stream))",
        "cutile_lab async launch, building the op": "build a new op and start it",
        "cutile_lab graph replay, per kernel (10/graph)": "CUDA graph replay, per kernel "
                                                          "(10 kernels per graph)",
        "raw cuLaunchKernel via ctypes (this runtime's packed call)": "raw cuLaunchKernel "
                                                                      "(the floor)",
        "torch.add (tiny)": "torch.add on a tiny tensor (for scale)",
    }
    rows = [{"launch": wanted[r["name"]], "µs per launch (host)": round(r["us_per_launch"], 2)}
            for r in _load(name)["rows"] if r.get("name") in wanted]
    return pd.DataFrame(rows)


def figure(png: str):
    """A recorded plot of ``benchmarks/results`` (an IPython image)."""
    from IPython.display import Image
    return Image(filename=str(RESULTS / png))
