"""Profile one ``%%tilekernel`` cell (vector add) in a fresh process: where do its milliseconds go?

    python benchmarks/profile_tilekernel.py cold     # empty compile cache
    python benchmarks/profile_tilekernel.py warm     # reuse the cache of the last run

Uses ``$CUTILE_LAB_CACHE_DIR`` (default: a folder under the system temp dir). Prints the cell's
time and the top of a cProfile listing (cumulative).
"""
from __future__ import annotations

import cProfile
import os
import pstats
import shutil
import sys
import tempfile
import time

CELL = '''%%tilekernel --spec B=1024
def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    tx = load_tile_like(x, z)
    ty = load_tile_like(y, z)
    z.store(tx + ty)
'''


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "warm"
    cache = os.environ.setdefault("CUTILE_LAB_CACHE_DIR",
                                  os.path.join(tempfile.gettempdir(), "cutile-lab-profile"))
    if mode == "cold":
        shutil.rmtree(cache, ignore_errors=True)
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "cutile_lab")
    from cutile_lab.notebook.magics import wait_prewarm
    t = time.perf_counter()
    wait_prewarm()
    print(f"prewarm still running after %load_ext: {(time.perf_counter() - t) * 1e3:.1f} ms")
    prof = cProfile.Profile()
    with capture_output():
        t = time.perf_counter()
        prof.enable()
        ip.run_cell(CELL)
        prof.disable()
        dt = time.perf_counter() - t
    print(f"{mode} cell: {dt * 1e3:.1f} ms")
    pstats.Stats(prof).sort_stats("cumulative").print_stats(int(os.environ.get("TOP", "30")))


if __name__ == "__main__":
    main()
