"""``%%cuda``: a cell of CUDA C++ compiled with NVRTC, its kernels defined in the notebook.

Owns the cell magic's options and turning the cell into ``CudaKernel``s (``runtime.foreign``)
in the user's namespace, one compile report per kernel — the same report as a tile kernel's
(``notebook.report``): diagnostics at the cell's lines, the ownership each parameter gets from
the signature, what is unchecked, PTX, resources, SASS and compile timings. NVRTC's errors are
shown at the cell's own lines (every one of them), and the cell ends with one short line.

    %%cuda
    extern "C" __global__ void scale(const float* __restrict__ x, float* y, float a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i];
    }

then ``scale(x, y, 2.0, n, grid=(n + 255) // 256, block=256).sync()``. Registered by
``%load_ext cutile_lab`` (``notebook.magics``).
"""
from __future__ import annotations

from IPython.core.magic import Magics, cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from cutile_lab.errors import CompileError, CutileLabError
from cutile_lab.notebook.options import parse_cell_options

SHOW = ("diagnostics", "resources", "sass", "timings", "ptx")


def run_cuda_cell(shell, args, cell: str, *, filenames: set | None = None) -> list:
    """The body of ``%%cuda``: parse, compile, define, report. Returns the kernels defined."""
    from cutile_lab.language.cuda_signature import parse_cuda_kernels
    from cutile_lab.language.frontend import KernelSource
    from cutile_lab.notebook.diagnostics import error_to_diagnostic
    from cutile_lab.notebook.options import parse_arch
    from cutile_lab.notebook.cells import cell_filename
    from cutile_lab.notebook.cells import cell_id as cell_id_of
    from cutile_lab.errors import TileCellError
    from cutile_lab.notebook.tilecell import sass_of
    from cutile_lab.notebook.report import compile_report_bundle, publish
    from cutile_lab.runtime.foreign import CudaKernel, _register

    show = _show(args.show)
    arch = parse_arch(args.arch)
    filename = cell_filename(shell, filenames if filenames is not None else set())
    filename = filename.replace("tilekernel", "cuda")
    _register(cell, filename, 0)
    source = KernelSource(cell, filename)
    cell_id = cell_id_of(shell)
    options = _options(args)

    def report(compiled, name, diags, notes, status, sass=None, sass_hint=None):
        publish(compile_report_bundle(compiled, None, diags, source, arch=arch, show=show,
                                      notes=notes, cell_id=cell_id, kernel_name=name,
                                      status=status, sass=sass, sass_hint=sass_hint,
                                      cell_first_line=2))

    try:
        sigs = parse_cuda_kernels(cell, filename)
    except CutileLabError as e:
        report(None, None, [error_to_diagnostic(e)], [], "error")
        raise TileCellError(f"{e.message} (see the report above)") from None
    if not sigs:
        raise TileCellError('no `__global__` function in this cell: define one, e.g. '
                            'extern "C" __global__ void scale(const float* x, float* y, int n)')
    if args.kernel and args.kernel not in {s.name for s in sigs}:
        from IPython.core.error import UsageError
        raise UsageError(f"--kernel: no kernel named {args.kernel!r} in this cell; kernels "
                         f"found: {', '.join(s.name for s in sigs)}")
    defined, failed = [], []
    for sig in sigs:
        kernel = CudaKernel(cell, sig, filename=filename, options=options)
        notes = [f"ownership from the signature: {sig.describe() or 'no parameters'}"]
        notes += kernel.notes()
        try:
            compiled = kernel.compile(arch, use_cache=not args.no_cache)
        except CompileError as e:
            from cutile_lab.compiling.nvrtc import error_diagnostics
            failed.append(sig.name)
            if not args.kernel or args.kernel == sig.name:
                report(None, sig.name, list(error_diagnostics(e)),
                       notes + [f"`{sig.name}` was not defined"], "error")
            # NVRTC compiles the whole cell: one error fails every kernel of it
            break
        notes += [f"NVRTC {w}" for w in compiled.warnings]
        shell.user_ns[sig.name] = kernel
        defined.append(kernel)
        if args.kernel and args.kernel != sig.name:
            continue
        sass, hint = sass_of(compiled) if "sass" in show else (None, None)
        report(compiled, sig.name, [], notes, "compiled", sass, hint)
    if failed:
        raise TileCellError(f"NVRTC could not compile this cell; {', '.join(failed)} "
                            "not defined (see the report above)")
    return defined


def _show(text: str | None) -> tuple[str, ...]:
    if not text or text.strip() == "all":
        return SHOW
    items = tuple(s.strip() for s in text.split(",") if s.strip())
    bad = [s for s in items if s not in SHOW]
    if bad:
        from IPython.core.error import UsageError
        raise UsageError(f"--show: unknown section(s) {', '.join(map(repr, bad))}; choose from "
                         f"{','.join(SHOW)}")
    return ("diagnostics",) + items


def _options(args) -> dict:
    options = {}
    if args.fast_math:
        options["use_fast_math"] = True
    if args.std:
        options["std"] = args.std
    if args.maxrregcount:
        options["max_register_count"] = args.maxrregcount
    if args.define:
        options["define_macro"] = [tuple(d.split("=", 1)) if "=" in d else d
                                   for d in args.define]
    return options


@magics_class
class CudaMagics(Magics):
    """The ``%%cuda`` cell magic of ``%load_ext cutile_lab``."""

    def __init__(self, shell=None, **kwargs):
        super().__init__(shell=shell, **kwargs)
        self._filenames: set[str] = set()

    @magic_arguments()
    @argument("--arch", default=None, metavar="ARCH",
              help="target architecture, e.g. sm_90 (default: the GPU present, else sm_90)")
    @argument("--kernel", default=None, metavar="NAME",
              help="report only this kernel when the cell has several (all are defined)")
    @argument("--show", default=None, metavar="SECTIONS",
              help="comma list of report sections: " + ",".join(SHOW))
    @argument("--no-cache", action="store_true", dest="no_cache",
              help="compile from scratch (ignore the compile cache)")
    @argument("--fast-math", action="store_true", dest="fast_math",
              help="NVRTC --use_fast_math")
    @argument("--std", default=None, help="C++ dialect, e.g. c++17")
    @argument("--maxrregcount", type=int, default=None, help="register cap per thread")
    @argument("-D", "--define", action="append", default=None, metavar="NAME[=VALUE]",
              help="define a macro (repeatable)")
    @cell_magic
    def cuda(self, line: str, cell: str):
        """Compile the CUDA C++ kernels of this cell with NVRTC (no GPU needed) and define each
        ``__global__`` function as a launchable kernel in the notebook's namespace.

        The signature says what each kernel owns: ``const T*`` parameters are shared,
        ``T*`` are written, values are scalars. A launch,
        ``k(x, y, n, grid=blocks, block=threads)`` (or a partition of a written pointer's
        tensor instead of ``grid=``), is a DeviceOp checked like a tile kernel's launch
        (aliasing, moves, in-flight borrows) and chains with tile kernels and PyTorch work
        (``cl.torch_op``) on one stream; ``%tile_time`` and ``%tile_roofline`` take it.
        """
        args = parse_cell_options(self.cuda, line)
        run_cuda_cell(self.shell, args, cell, filenames=self._filenames)


__all__ = ["CudaMagics", "run_cuda_cell"]
