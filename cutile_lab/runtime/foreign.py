"""Work the lab did not write, as DeviceOps under the same ownership rules: CUDA C++ kernels
(``cuda_kernel``, ``CudaKernel``, ``CudaLaunchOp``) and PyTorch work (``torch_op``, ``TorchOp``).

A CUDA C++ kernel's signature says what it owns (``language.cuda_signature``: ``const T*`` is
shared, ``T*`` is written, values are scalars); ``cuda_kernel`` compiles it with NVRTC
(``compiling.nvrtc``, cached) when it is defined. Calling it builds a lazy ``CudaLaunchOp``:
``k(y, x, n, grid=g, block=256)``, or ``k(y.partition(256), x, n, block=256)`` when each block
owns one tile of the output (the grid is then the partition's). When its chain runs, the launch
goes through the same host checks as a tile kernel's, before anything is enqueued: moves
(TL102), aliasing between a written pointer and any other argument (TL100/TL101, from
``checking.cuda_launch``), in-flight borrows (TL104/TL105); then it is enqueued on the chain's
stream (``cuda.core.launch``), recorded in the chain's in-flight record, and hands its arguments
back as its result. So it composes like any launch: ``.then()``, ``.sync()``, ``await``,
``cl.graph(...)``.

On the simulator a CUDA C++ kernel cannot run: its launch is still checked (and its borrows
recorded), the memory it would write is filled with NaN (floats) so that nothing downstream
reads stale values as results, the rest of the chain is enqueued and checked, and the chain's
start then raises ``NoDeviceError`` saying which launch needs a GPU.

``torch_op(fn, *args, writes=...)`` runs ``fn`` on the chain's stream (PyTorch's current stream
is set to it), with lab tensors handed over as torch tensors without a copy. ``fn`` is Python
the lab cannot read: every tensor argument counts as written unless ``writes`` names the ones
that are (the others are then read); moves and in-flight borrows are checked as for a launch.
"""
from __future__ import annotations

import linecache
from typing import Sequence

import numpy as np

from cutile_lab.errors import LanguageError, LaunchError, NoDeviceError
from cutile_lab.runtime import ownership
from cutile_lab.runtime.callsite import describe
from cutile_lab.runtime.ops import DeviceOp, ExecContext
from cutile_lab.runtime.ownership import OwnershipError
from cutile_lab.runtime.partition import Partition
from cutile_lab.runtime.tensor import Tensor

_COUNTER = [0]


class CudaKernel:
    """A CUDA C++ ``__global__`` function, compiled with NVRTC; calling it builds a launch.

    ``signature`` is its ``CudaSignature`` (parameter ownership), ``compiled`` its
    ``CompiledCuda`` for the architecture it was compiled for at definition."""

    def __init__(self, source: str, signature, *, filename: str, line_offset: int = 0,
                 options: dict | None = None):
        self.source = source
        self.signature = signature
        self.name = signature.name
        self.filename = filename
        self.line_offset = line_offset
        self.options = dict(options or {})
        self._compiled: dict = {}
        self._loaded: dict = {}
        self.compiled = None

    def compile(self, arch: str | None = None, *, use_cache: bool = True):
        """The ``CompiledCuda`` for ``arch`` (default: the GPU present, else sm_90)."""
        from cutile_lab.compiling.driver import normalize_arch
        from cutile_lab.compiling.nvrtc import compile_cuda
        arch = normalize_arch(arch or _default_arch())
        c = self._compiled.get(arch)
        if c is None or not use_cache:
            c = compile_cuda(self.source, self.name, arch, filename=self.filename,
                             line_offset=self.line_offset, options=self.options,
                             use_cache=use_cache)
            self._compiled[arch] = c
        if self.compiled is None:
            self.compiled = c
        return c

    def _kernel_for(self, arch: str):
        k = self._loaded.get(arch)
        if k is None:
            from cuda.core import ObjectCode
            c = self.compile(arch)
            module = ObjectCode.from_cubin(c.cubin)
            k = module.get_kernel(c.symbol)
            self._loaded[arch] = (k, module)
            return k
        return k[0]

    def __call__(self, *args, grid=None, block=None, shared_mem: int = 0,
                 **kwargs) -> "CudaLaunchOp":
        """The lazy launch: ``grid`` (blocks; inferred from a partition when one is given) and
        ``block`` (threads per block) as for ``<<<grid, block, shared_mem>>>``."""
        return CudaLaunchOp(self, args, kwargs, grid, block, shared_mem)

    launch = __call__

    def notes(self) -> list[str]:
        from cutile_lab.checking.cuda_launch import cuda_launch_notes
        return cuda_launch_notes(self.signature)

    def __repr__(self) -> str:
        return f"<CUDA C++ kernel {self.name}({self.signature.describe()})>"


def _default_arch() -> str:
    from cutile_lab.runtime.backend import backend
    from cutile_lab.runtime.device import current_arch, gpu_available
    try:
        if backend() != "sim" and gpu_available():
            return current_arch()
    except Exception:
        pass
    return "sm_90"


def _register(source: str, filename: str | None, line_offset: int) -> str:
    """Make the source's lines visible to ``linecache`` under ``filename`` (a fresh
    ``<cuda-N>`` when None), so that diagnostics quote them; returns the filename."""
    if filename is None:
        _COUNTER[0] += 1
        filename = f"<cuda-{_COUNTER[0]}>"
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, ["\n"] * line_offset + lines, filename)
    return filename


def cuda_kernel(source: str, name: str | None = None, *, arch: str | None = None,
                options: dict | None = None, filename: str | None = None,
                line_offset: int = 0) -> CudaKernel:
    """``cl.cuda_kernel(source, "name")``: the ``__global__`` function ``name`` of the CUDA C++
    ``source``, compiled with NVRTC for ``arch`` (default: the GPU present, else sm_90; no GPU
    is needed). ``options``: NVRTC options (``use_fast_math=True``, ``std="c++17"``, ...)."""
    from cutile_lab.language.cuda_signature import parse_cuda_kernels
    filename = _register(source, filename, line_offset)
    sigs = parse_cuda_kernels(source, filename, line_offset)
    names = [s.name for s in sigs]
    if not names:
        raise LanguageError("no `__global__` function in this CUDA C++ source",
                            help='define one: extern "C" __global__ void name(const float* x, '
                                 'float* y, int n) { ... }')
    if name is None:
        if len(names) > 1:
            raise LanguageError(f"the source defines several kernels ({', '.join(names)})",
                                help="name the one you want: cl.cuda_kernel(source, "
                                     f"{names[0]!r})")
        name = names[0]
    if name not in names:
        raise LanguageError(f"no `__global__` function named {name!r} in this source",
                            help=f"kernels found: {', '.join(names)}")
    sig = next(s for s in sigs if s.name == name)
    k = CudaKernel(source, sig, filename=filename, line_offset=line_offset, options=options)
    k.compile(arch)
    return k


# --- the launch ---------------------------------------------------------------------------------

def _grid3(g, what: str, where) -> tuple[int, int, int]:
    if isinstance(g, (int, np.integer)):
        g = (int(g),)
    try:
        g = tuple(int(x) for x in g)
    except TypeError:
        raise LaunchError(f"{what} must be a number or a tuple of up to 3 numbers, not {g!r}",
                          span=where) from None
    if not 1 <= len(g) <= 3 or any(x < 0 for x in g):
        raise LaunchError(f"bad {what} {g}: one to three non-negative sizes", span=where)
    return g + (1,) * (3 - len(g))


class CudaLaunchOp(DeviceOp):
    """A lazy launch of a CUDA C++ kernel; its result is the tuple of its arguments (ownership
    handed back, partitions included)."""

    def __init__(self, kernel: CudaKernel, args, kwargs, grid, block, shared_mem: int):
        super().__init__()
        from cutile_lab.runtime.launch.binding import backend_of as _backend_of
        self.kernel = kernel
        self.label = kernel.name
        sig = kernel.signature
        names = [p.name for p in sig.params]
        self.bound = dict(zip(names, args))
        self._extra = max(0, len(args) - len(names))
        self._given = list(self.bound) + list(kwargs)
        for k, v in kwargs.items():
            self.bound.setdefault(k, v)
        if block is None:
            raise LaunchError(f"`{self.label}` needs a block size: "
                              f"{self.label}(..., grid=..., block=256)", span=self.where,
                              help="block= is the threads per block (up to 3 dimensions)")
        self.block = _grid3(block, "block", self.where)
        self.grid = _grid3(grid, "grid", self.where) if grid is not None else None
        self.shared_mem = int(shared_mem)
        self.backend = _backend_of(self.bound.values())
        self.diagnostics: list = []
        self.compiled = kernel.compiled
        self.notes = kernel.notes()

    # --- checks ----------------------------------------------------------------------------
    def _values(self, ctx: ExecContext):
        from cutile_lab.runtime.launch.binding import as_arg as _as_arg
        values, returned = {}, {}
        for name, v in self.bound.items():
            if isinstance(v, DeviceOp):
                v = v._enqueue(ctx)
            returned[name] = v
            values[name] = _as_arg(v)
        return values, returned

    def _check(self, values, ctx) -> list:
        """Moves, the launch-level rules and in-flight borrows; returns [(param, tensor,
        mut)] of the memory the launch borrows."""
        from cutile_lab.checking.cuda_launch import check_cuda_launch
        from cutile_lab.checking.launch_rules import ArgDesc
        sig = self.kernel.signature
        for name, v in values.items():
            obj = None
            if type(v) is Partition:
                obj = v if v.moved is not None else v.tensor if v.tensor.moved is not None \
                    else None
            elif type(v) is Tensor and v.moved is not None:
                obj = v
            if obj is not None:
                ownership.raise_use_after_move(obj, f"pass it to `{self.label}` as `{name}`",
                                               where=self.where, how="launch")
            b = getattr(v, "backend", None)
            if b is not None and b != ctx.backend:
                raise LaunchError(
                    f"`{name}` is a {b} tensor but this launch runs on the {ctx.backend} "
                    "backend", span=self.where,
                    help="create every tensor of a launch on one backend (cl.set_backend)")
        descs, contiguous = [], {}
        for name, v in values.items():
            if isinstance(v, (Tensor, Partition)):
                t = v.tensor if type(v) is Partition else v
                descs.append(ArgDesc(name, "shared", t.ptr, t.shape, t.strides, t.itemsize,
                                     t.dtype.name, t.id,
                                     v.tile_shape if type(v) is Partition else None, v.origin))
                contiguous[name] = t.is_contiguous
            else:
                descs.append(ArgDesc(name, "scalar", value=v))
        diags = check_cuda_launch(sig, descs, self.where, None,
                                  given=[g for g in self._given if g not in self.bound] or (),
                                  extra_positional=self._extra, contiguous=contiguous)
        self.diagnostics = diags
        if any(d.is_error for d in diags):
            raise OwnershipError(diags)
        cast = {n for n, _ in sig.casts_away_const}
        borrows = []
        for p in sig.params:
            v = values.get(p.name)
            if isinstance(v, (Tensor, Partition)):
                if type(v) is Partition:
                    v = v._source if v._source is not None else v.tensor
                borrows.append((p.name, v, p.role == "mut" or p.name in cast))
        if ownership.others_in_flight(ctx.flight):
            lane = ctx.flight.lane if ctx.capture is None else ownership.NO_LANE
            hits = ownership.check_launch_borrows(borrows, ctx.flight, self.where, lane)
            if hits:
                raise OwnershipError([d for _, d in hits])
        return borrows

    def _grid_of(self, values) -> tuple[int, int, int]:
        if self.grid is not None:
            return self.grid
        for p in self.kernel.signature.params:
            v = values.get(p.name)
            if type(v) is Partition:
                return _grid3(v.grid, "grid", self.where)
        raise LaunchError(f"`{self.label}` needs a grid: pass grid=(blocks...), or a partition "
                          "of a written pointer's tensor (one tile per block)", span=self.where,
                          help=f"e.g. {self.label}(..., grid=(n + 255) // 256, block=256)")

    # --- running ---------------------------------------------------------------------------
    def _enqueue(self, ctx: ExecContext):
        values, returned = self._values(ctx)
        borrows = self._check(values, ctx)
        grid = self._grid_of(values)
        if ctx.backend == "gpu":
            self._run_gpu(values, grid, ctx)
        else:
            self._skip_sim(borrows, ctx)
        flight = ctx.flight
        if flight is not None:
            for name, t, mut in borrows:
                lo, hi = t.range
                if hi > lo:
                    flight.entries.append(ownership.Borrow(lo, hi, mut, t, name))
                flight.keep.append(t)
            for v in values.values():
                if type(v) is Partition:
                    flight.keep.append(v)
        names = [p.name for p in self.kernel.signature.params]
        return tuple(returned[n] for n in names if n in returned)

    def _run_gpu(self, values, grid, ctx) -> None:
        from cuda.core import LaunchConfig
        from cutile_lab.language.dtypes import DTYPES
        from cutile_lab.runtime.dtypes import scalar_value
        from cutile_lab.runtime.launch.packing import core_launch as _core_launch
        arch = ctx.gpu.arch
        kern = self.kernel._kernel_for(arch)
        self.compiled = self.kernel._compiled[arch]
        args = []
        for p in self.kernel.signature.params:
            v = values[p.name]
            if p.is_array:
                t = v.tensor if type(v) is Partition else v
                st = t.storage
                if getattr(st, "ready", None) is not None:
                    ownership.wait_ready(st, ctx.stream, capturing=ctx.capture is not None)
                args.append(int(t.ptr))
            else:
                args.append(scalar_value(v, DTYPES[p.dtype]))
        if 0 in grid or 0 in self.block:
            return
        cfg = LaunchConfig(grid=grid, block=self.block, shmem_size=self.shared_mem)
        _core_launch(ctx.stream, cfg, kern, *args)
        if ctx.capture is not None:
            ctx.capture.kernels += 1

    def _skip_sim(self, borrows, ctx) -> None:
        """The simulator cannot run CUDA C++: poison what it would write and tell the chain."""
        for name, t, mut in borrows:
            if mut and t.dtype.name.startswith(("f", "bf")) and t.size:
                t._host_view()[...] = np.nan
        flight = ctx.flight
        if flight is not None and flight.error is None:
            flight.error = NoDeviceError(
                f"`{self.label}` is a CUDA C++ kernel: it needs a GPU, and this chain runs on "
                "the simulator",
                span=self.where,
                help="run it where there is a GPU (cl.set_backend('gpu')); here its launch and "
                     "the rest of the chain were checked (ownership, aliasing, borrows), and "
                     "what it would write was filled with NaN")

    def traffic(self) -> tuple[float, float, str]:
        """(bytes read, bytes written, element dtype) from the signature: every shared
        pointer's tensor read once, every written one written once — a lower bound of the
        traffic (the body is not read, so flops are unknown)."""
        read = written = 0.0
        dtype = "f32"
        for p in self.kernel.signature.params:
            v = self.bound.get(p.name)
            t = v.tensor if type(v) is Partition else v
            if not p.is_array or not hasattr(t, "nbytes"):
                continue
            if p.role == "mut":
                written += t.nbytes
            else:
                read += t.nbytes
            dtype = p.dtype
        return read, written, dtype

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={type(v).__name__}" for k, v in self.bound.items())
        return (f"<DeviceOp CUDA C++ launch {self.label}({args}) (lazy) from "
                f"{describe(self.where)}>")


# --- PyTorch work ---------------------------------------------------------------------------

class TorchOp(DeviceOp):
    """``fn(*args)`` run on the chain's stream as PyTorch's current stream; its result is what
    ``fn`` returns."""

    def __init__(self, fn, args, writes):
        super().__init__()
        from cutile_lab.runtime.launch.binding import backend_of as _backend_of
        if not callable(fn):
            raise LaunchError("cl.torch_op takes a function: cl.torch_op(fn, *tensors)",
                              span=self.where)
        self.fn = fn
        self.args = list(args)
        self.writes = None if writes is None else {int(i) for i in writes}
        self.label = f"torch_op({getattr(fn, '__name__', 'fn')})"
        self.backend = _backend_of(self.args)

    def _enqueue(self, ctx: ExecContext):
        values = []
        for v in self.args:
            if isinstance(v, DeviceOp):
                v = v._enqueue(ctx)
            values.append(v)
        borrows = []
        for i, v in enumerate(values):
            if type(v) is Tensor:
                if v.moved is not None:
                    ownership.raise_use_after_move(v, f"pass it to `{self.label}`",
                                                   where=self.where, how="launch")
                mut = self.writes is None or i in self.writes
                borrows.append((f"argument {i}", v, mut))
        if borrows and ownership.others_in_flight(ctx.flight):
            lane = ctx.flight.lane if ctx.capture is None else ownership.NO_LANE
            hits = ownership.check_launch_borrows(borrows, ctx.flight, self.where, lane)
            if hits:
                raise OwnershipError([d for _, d in hits])
        if ctx.backend == "gpu":
            result = self._run_gpu(values, ctx)
        else:
            result = self.fn(*[_host_arg(v) for v in values])
        flight = ctx.flight
        if flight is not None:
            for name, t, mut in borrows:
                lo, hi = t.range
                if hi > lo:
                    flight.entries.append(ownership.Borrow(lo, hi, mut, t, name))
                flight.keep.append(t)
        return result

    def _run_gpu(self, values, ctx):
        if ctx.capture is not None:
            raise LaunchError(
                f"{self.label} cannot be captured into a lab graph: PyTorch allocates memory "
                "as it runs, which a graph capture forbids", span=self.where,
                help="keep PyTorch work outside cl.graph(...), or capture it with "
                     "torch.cuda.graph")
        try:
            import torch
        except ImportError:
            raise LaunchError("cl.torch_op needs PyTorch", span=self.where,
                              help="install torch") from None
        from cutile_lab.runtime.memory import stream_handle
        ext = torch.cuda.ExternalStream(stream_handle(ctx.stream))
        with torch.cuda.stream(ext):
            targs = []
            for v in values:
                if type(v) is Tensor:
                    st = v.storage
                    if getattr(st, "ready", None) is not None:
                        ownership.wait_ready(st, ctx.stream)
                    targs.append(torch.from_dlpack(_Handover(v)))
                else:
                    targs.append(v)
            return self.fn(*targs)


class _Handover:
    """A tensor handed to work of the same chain: exported without the host-access check (the
    chain's earlier work on it is ordered before, on the same stream; other chains' work was
    checked by the op)."""

    def __init__(self, t: Tensor):
        self.t = t

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        from cutile_lab.runtime.dlpack import export_capsule
        from cutile_lab.runtime.dtypes import to_dlpack
        t = self.t
        kind, dev = t.__dlpack_device__()
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        return export_capsule(data_ptr=t.ptr, shape=t.shape, strides=t.strides,
                              dl_dtype=to_dlpack(t.dtype), device_type=kind, device_id=dev,
                              owner=t, versioned=versioned)


def _host_arg(v):
    """A simulator tensor as the function sees it: a torch CPU tensor sharing its memory when
    torch is installed, else its NumPy view."""
    if type(v) is not Tensor:
        return v
    view = v._host_view()
    try:
        import torch
        return torch.from_numpy(view)
    except ImportError:
        return view


def torch_op(fn, *args, writes: Sequence[int] | None = None) -> TorchOp:
    """``cl.torch_op(fn, *args)``: PyTorch work as a DeviceOp, run on the chain's stream with
    lab tensors handed over as torch tensors (no copy). ``writes``: the positions of the
    arguments ``fn`` writes (default: every tensor argument counts as written); the others are
    read. The lab cannot read ``fn``: what it does beyond that is the user's claim."""
    return TorchOp(fn, args, writes)


__all__ = ["CudaKernel", "CudaLaunchOp", "cuda_kernel", "TorchOp", "torch_op"]
