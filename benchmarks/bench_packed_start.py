"""The repeated GPU start of one op on one stream, host side only, on the CPU: the simulator's
tensors and ownership, launched by ``gpu.launch`` through a fake ``cuLaunchKernelEx`` (a Python
function returning 0). What it times is the start path up to and including the driver call:

- ``start``: a flight registered, ``LaunchOp._enqueue`` on the stream, the flight released
  (what ``op.start(s)`` then ``wait()`` costs the host, without the stream lookup);
- ``join``:  ``_enqueue`` into the flight that already holds this start record (what a repeated
  ``op.start(s)`` joining its previous flight runs under the registry's lock).

    PYTHONPATH=<tree> python benchmarks/bench_packed_start.py [--n 20000] [--rounds 7]

Prints the median over rounds of the mean per call (``common.host_per_call``, after 200 calls
of warm-up), in microseconds. Not a GPU measurement:
the real driver call (ctypes, the driver's own work) is left out and is the same either way.
"""
import argparse
import ctypes
from types import SimpleNamespace

import cutile_lab as cl
from benchmarks.common import host_per_call
from cutile_lab.lang import Mut, Tensor, f32, load_tile_like
from cutile_lab.runtime import gpu, ownership
from cutile_lab.runtime.backend import SIM
from cutile_lab.runtime.driver import RawLaunch
from cutile_lab.runtime.ops import ExecContext
from cutile_lab.runtime.ownership import Flight


@cl.kernel
def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    n, rounds = args.n, args.rounds

    def prepare(op, entry, values, ctx):
        entry.plan = SimpleNamespace(compiled="cubin")
        entry.raw = RawLaunch(lambda *a: 99, ctypes.c_void_p(0xF00), (8, 1, 1), 128,
                              [0x7F00_0000_1000, 0x7F00_0000_2000, 0x7F00_0000_3000],
                              lambda cfg, func, ptrs, extra: 0)
    SIM.__dict__.update(prepare_launch=prepare, launch=gpu.launch)
    x, y, z = cl.randn(1024).sync(), cl.randn(1024).sync(), cl.zeros(1024).sync()
    op = add(z.partition_mut(128), x, y)
    lane = 0x5000_0000
    handle = ctypes.c_void_p(lane)

    def start():
        flight = Flight(op.label, op._where, SIM, None, lane)
        ownership.register(flight)
        op._enqueue(ExecContext(SIM, None, flight, None, None, handle))
        flight.ready = True
        ownership.release(flight)

    start()
    held = Flight(op.label, op._where, SIM, None, lane)
    ownership.register(held)
    ctx = ExecContext(SIM, None, held, None, None, handle)
    op._enqueue(ctx)
    held.reuse = op._reuse                  # what ``LaunchOp.start`` records for a join

    def join():
        op._enqueue(ctx)

    for name, f in (("start", start), ("join", join)):
        us = host_per_call(f, lambda: None, n=n, rounds=rounds) * 1e6
        print(f"{name} {us:.3f} us")
    ownership.release(held)


if __name__ == "__main__":
    main()
