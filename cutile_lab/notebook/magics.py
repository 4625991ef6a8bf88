"""IPython magics: ``%load_ext cutile_lab``, ``%%tilekernel`` and the timing/device/roofline
line magics.

Owns the magics' registration and their ``magic_arguments`` (so ``%%tilekernel?`` documents
every option), the names ``%load_ext`` injects, and the prewarm thread that imports the compile
path while the user writes the first cell. Each magic's body lives by concern: argument parsing
in ``notebook.options``, a ``%%tilekernel`` cell's check/compile/define/report in
``notebook.tilecell``, timing in ``notebook.measure_view``, ``%tile_diff`` in ``notebook.compare``.

Errors are shown, never thrown at the user as a traceback from inside the lab: a kernel with
error diagnostics (or one the compiler rejects) is reported at the cell's own line, is not
defined, and the cell ends with a one-line ``TileCellError`` so "Run All" stops there.
"""
from __future__ import annotations

import os

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from cutile_lab.notebook.options import (SHOW_CHOICES, default_arch, parse_cell_options,
                                         split_line_options)
from cutile_lab.notebook.tilecell import run_tilekernel


@magics_class
class TileMagics(Magics):
    """The magics of ``%load_ext cutile_lab``."""

    def __init__(self, shell=None, **kwargs):
        super().__init__(shell=shell, **kwargs)
        self._filenames: set[str] = set()

    @magic_arguments()
    @argument("--arch", default=None, metavar="ARCH",
              help="target architecture, e.g. sm_90 or sm_100 (default: the GPU present, "
                   "else sm_90)")
    @argument("--spec", default=None, metavar="B=128,BK=64",
              help="compile now with these const generics; without it a kernel compiles now "
                   "only when it has no unbound const generics, else at launch")
    @argument("--show", default=None, metavar="SECTIONS",
              help="comma list of report sections: " + ",".join(SHOW_CHOICES) +
                   " (default: all available)")
    @argument("--sim", action="store_true",
              help="launches of this cell's kernels run on the CPU simulator")
    @argument("--no-cache", action="store_true", dest="no_cache",
              help="compile from scratch (ignore the compile cache)")
    @argument("--kernel", default=None, metavar="NAME",
              help="report only this kernel when the cell has several (all are defined)")
    @cell_magic
    def tilekernel(self, line: str, cell: str):
        """Check and compile the tile kernels of this cell and define them as launchable
        kernels in the notebook's namespace.

        Every top-level function whose parameters are typed ``Tensor[...]`` / ``Mut[...]``
        (and every ``@kernel`` function) is a kernel. Each is checked for the ownership
        discipline; a kernel with errors is reported at its line in this cell and is not
        defined. A kernel compiles now when its const generics are all known (``--spec``, or
        defaults); otherwise it compiles at launch. The report shows diagnostics first, then
        Tile IR linked to the source, resources, compile timings, remarks and SASS.

        Example::

            %%tilekernel --spec B=128
            def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
                z.store(load_tile_like(x, z) + load_tile_like(y, z))
        """
        args = parse_cell_options(self.tilekernel, line)
        run_tilekernel(self.shell, args, cell, filenames=self._filenames)

    # --- line magics (implemented in notebook.measure_view / notebook.device_view) ----------------

    @magic_arguments()
    @argument("-n", "--repeats", type=int, default=20, help="timed runs (median reported)")
    @argument("-w", "--warmup", type=int, default=3, help="untimed warm-up runs")
    @argument("--flops", type=float, default=None, help="flops per run (default: derived "
                                                         "from the kernel)")
    @argument("--bytes", type=float, default=None, dest="bytes_",
              help="bytes moved per run (default: derived from the kernel)")
    @argument("--name", default=None, help="label of the measurement on plots")
    @argument("--precision", default=None, help="precision of the compute roof (default: "
                                                 "the kernel's widest input dtype)")
    @argument("expr", nargs="*", help="a launch (DeviceOp), a captured graph (cl.graph), or "
                                      "a callable returning a launch")
    @line_magic
    def tile_time(self, line: str):
        """Time a launch on the GPU and record it for ``%tile_roofline``.

        ``%tile_time [-n 20] [-w 3] [--flops N] [--bytes N] [--name LABEL] EXPR``

        EXPR is evaluated in the notebook's namespace: a launch such as
        ``add(z.partition([128]), x, y)``, a graph captured with ``cl.graph(...)`` (replayed
        once per run), or a callable that returns a launch. The launch runs
        ``-w`` times untimed and ``-n`` times between CUDA events; the median is reported
        with the bandwidth, flop rate and percent of the device's roof. Flops and bytes are
        derived from the kernel (tile loads and stores over the argument shapes, mma shapes
        times loop trips) unless given. Without a GPU the launch runs once in the simulator.
        """
        __tracebackhide__ = True  # noqa: F841  (the user's own errors start at their expression)
        from cutile_lab.notebook.measure_view import run_tile_time
        opts, expr = split_line_options(line, self.tile_time)
        return run_tile_time(self.shell, opts, expr)

    @line_magic
    def tile_device(self, line: str = ""):
        """Show the GPU: name, SMs, clocks, datasheet peaks per precision and measured
        ceilings. Without a GPU, shows the H100's datasheet peaks as an example."""
        from cutile_lab.notebook.measure_view import run_tile_device
        run_tile_device(self.shell, line)

    @line_magic
    def tile_roofline(self, line: str = ""):
        """Draw the roofline of everything measured so far (``%tile_time``, ``sweep``)
        against the device's datasheet peaks and measured ceilings. ``%tile_roofline clear``
        forgets the measurements."""
        from cutile_lab.notebook.measure_view import run_tile_roofline
        return run_tile_roofline(self.shell, line)

    @line_magic
    def tile_diff(self, line: str = ""):
        """Compare two compiles of a kernel side by side: Tile IR diff, SASS diff, resources
        and compile times (what Compiler Explorer's diff view shows).

        ``%tile_diff KERNEL LEFT RIGHT``; each side is a comma list of const generics,
        ``arch=`` and compiler hints (``opt_level``, ``occupancy``, ``num_ctas``)::

            %tile_diff add B=128 B=256                     # two specializations
            %tile_diff add B=128,arch=sm_90 B=128,arch=sm_100   # two architectures
            %tile_diff add B=128 B=128,opt_level=1         # two option sets
        """
        from cutile_lab.notebook.compare import run_tile_diff
        run_tile_diff(self.shell, line)

    @line_magic
    def tile_bandwidth(self, line: str = ""):
        """Plot achieved bandwidth against bytes moved, one line per kernel, for everything
        measured so far, against the datasheet bandwidth and the measured copy ceiling."""
        from cutile_lab.notebook.measure_view import run_tile_bandwidth
        return run_tile_bandwidth(self.shell, line)


_prewarm_thread = None


def _prewarm() -> None:
    """Import what a ``%%tilekernel`` cell needs and find the toolchain, off the main thread,
    while the user writes the first cell (a warm cell then costs milliseconds), and the
    compiler's front end last (``cuda.tile``, the slow part of a first compile).
    ``CUTILE_LAB_NO_PREWARM=1`` turns it off."""
    try:
        from cutile_lab.checking import check_kernel  # noqa: F401
        from cutile_lab.diagnostics import render  # noqa: F401
        from cutile_lab.compiling import cache, driver, lowering  # noqa: F401
        from cutile_lab.compiling.toolchain import toolchain_or_none
        from cutile_lab.notebook import diagnostics, highlight, report  # noqa: F401
        driver.cuda_tile_version()
        toolchain_or_none()
        cache.default_cache()
        default_arch()
        # check and lower a tiny kernel: loads the rule modules and compiles their regexes
        from cutile_lab.kernel import kernels_from_source
        k = kernels_from_source('def _prewarm(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'
                                '    z.store(load_tile_like(x, z) + 1.0)\n',
                                "<cutile-lab-prewarm>")["_prewarm"]
        k.check()
        lowering.lower(k.definition)
        # last, the compiler's front end: its import is the slow part of a first compile
        # (hundreds of milliseconds; more where it finds PyTorch to map dtypes from)
        import cuda.tile._compile  # noqa: F401
    except Exception:      # only a head start: the cell does (and reports) it all again
        pass


def wait_prewarm(timeout: float = 10.0) -> None:
    t = _prewarm_thread
    if t is not None and t.is_alive():
        t.join(timeout)


def load_ipython_extension(ipython) -> None:
    """Register the magics (``%load_ext cutile_lab`` calls this, then puts the language's names
    and ``cl`` in the user's namespace: ``cutile_lab.load_ipython_extension``)."""
    global _prewarm_thread
    ipython.register_magics(TileMagics)
    from cutile_lab.notebook.cuda_magic import CudaMagics
    ipython.register_magics(CudaMagics)
    from cutile_lab.notebook import launch_view, live
    launch_view.install(ipython)
    live.register(ipython)
    if _prewarm_thread is None and os.environ.get("CUTILE_LAB_NO_PREWARM", "") in ("", "0"):
        import threading
        _prewarm_thread = threading.Thread(target=_prewarm, name="cutile-lab-prewarm",
                                           daemon=True)
        _prewarm_thread.start()


def unload_ipython_extension(ipython) -> None:
    pass
