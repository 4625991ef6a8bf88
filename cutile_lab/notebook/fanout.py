"""Spreading a sweep's configurations over workers: every GPU of this host, or a Dask cluster.

Owns: the worker-side compile of one configuration (``compile_config``: plain data back, never
an exception) and the worker-side run of one (``run_config`` in this process;
``run_configuration`` on a worker: the kernel rebuilt from
its source text, the launch's arguments made by the user's ``make_args`` *on the worker*, the
configuration timed on that worker's GPU — or run on the simulator where it has none — and the
optional baseline timed on the very same GPU), the two kinds of runner that carry those runs
(``GPUPool``: one process per local GPU, pinned with ``CUDA_VISIBLE_DEVICES``, forked from a
per-session fork server that imported the lab and PyTorch once (spawned where the platform has
no fork server), each warmed up -- ``warm_up`` -- before its first configuration; a
``distributed.Client``: each worker runs what the scheduler gives it), and the fault rules:

- a worker process that dies is replaced and its configuration tried once more (Dask does this
  itself; ``GPUPool`` does it here); a second death is that row's error;
- a configuration that leaves its GPU context unusable (an illegal address, say) is that row's
  error, and its worker is restarted so that the next configuration gets a clean context;
- any other exception stays in its row.

Why a pool of our own beside Dask: a multi-GPU host should not need a cluster to time on every
GPU, and ``concurrent.futures.ProcessPoolExecutor`` alone cannot pin a worker to a GPU or survive
the death of one worker (a dead worker breaks the whole pool). Callables (``make_args``,
``check``, ``baseline``) travel with ``cloudpickle``, so lambdas and closures defined in a
notebook work, as they do with Dask.

Nothing here imports the runtime at module level: a worker decides for itself whether it has a
GPU. Timing and counting are ``performance.timing``'s.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import socket
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from cutile_lab.performance import timing
from cutile_lab.runtime.device import device_indices

POOL_GPU_ENV = "CUTILE_LAB_POOL_GPU"


@dataclass(frozen=True)
class KernelSpec:
    """What a worker needs to rebuild a kernel: its source text, never the live object."""
    text: str
    filename: str
    line_offset: int
    name: str
    globals_: dict = field(default_factory=dict)

    @classmethod
    def of(cls, kernel, globals_: dict) -> "KernelSpec":
        src = kernel.source
        return cls(src.text, src.filename, src.line_offset, kernel.name, dict(globals_))


_KERNELS: dict[tuple, Any] = {}


def _kernel(spec: KernelSpec):
    key = (spec.text, spec.filename, spec.line_offset, spec.name,
           tuple(sorted(spec.globals_.items())))
    k = _KERNELS.get(key)
    if k is None:
        from cutile_lab.kernel import kernels_from_source
        k = kernels_from_source(spec.text, spec.filename, globals_=spec.globals_,
                                line_offset=spec.line_offset)[spec.name]
        _KERNELS[key] = k
    return k


def pack(make_args: Callable | None, check: Callable | None, baseline: Callable | None) -> bytes:
    """The user's callables, as bytes a worker can load (cloudpickle: closures travel)."""
    import cloudpickle
    return cloudpickle.dumps((make_args, check, baseline))


def where() -> dict:
    """This worker's place: ``gpu`` (the host's index of its GPU, or None on the simulator),
    ``device`` (the GPU's name, or ``simulator``) and ``worker`` (host:pid)."""
    found, _ = timing.gpu_status()
    gpu = None
    if found:
        pinned = os.environ.get(POOL_GPU_ENV) or \
            (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0]
        try:
            gpu = int(pinned)
        except ValueError:        # a UUID in CUDA_VISIBLE_DEVICES
            gpu = pinned
    return {"gpu": gpu, "device": (timing.device_name() or "GPU") if found else "simulator",
            "worker": f"{socket.gethostname()}:{os.getpid()}"}


def uses_torch(payload: bytes) -> bool:
    """Whether the user's callables use PyTorch: they name it (a global, or an ``import torch``
    inside one: cloudpickle carries the names their code reads), or this process has imported
    it (callables pickled by reference, from a module, carry no code). Only decides what a
    warm-up prepares: a wrong guess costs time, never a result."""
    return b"torch" in payload or "torch" in sys.modules


def warm_up(spec: KernelSpec | None = None, torch: bool | None = None) -> dict:
    """Pay this worker's one-time costs now, before its first configuration: the lab's imports,
    the GPU context, the toolchain probe, the kernel rebuilt from ``spec``, and -- with
    ``torch`` (default: where PyTorch is installed) -- PyTorch's import, CUDA start and cuBLAS
    handle (imported on a second thread while the context is made). Returns the worker's place
    and the seconds each step took (``warm_s``: all of it); a failing step is ``error``, never
    an exception: the configurations then pay, or report, it themselves."""
    import importlib.util
    import threading
    from cutile_lab.runtime.backend import silence_announcement
    started = time.perf_counter()
    silence_announcement()
    if torch is None:
        torch = importlib.util.find_spec("torch") is not None
    steps: dict[str, Any] = {}
    box: dict[str, Any] = {}

    def import_torch() -> None:
        t = time.perf_counter()
        try:
            import torch as module
            box["torch"] = module
        except Exception as e:
            box["error"] = f"import torch: {type(e).__name__}: {e}"
        steps["torch_import_s"] = time.perf_counter() - t
    thread = threading.Thread(target=import_torch, daemon=True) if torch else None
    if thread is not None:
        thread.start()
    out: dict[str, Any] = {}
    try:
        t = time.perf_counter()
        out.update(where())                # makes the GPU context (or finds the simulator)
        steps["context_s"] = time.perf_counter() - t
        t = time.perf_counter()
        from cutile_lab.compiling.toolchain import toolchain_or_none
        import cutile_lab.runtime.launch  # noqa: F401  (the launch path's imports)
        toolchain_or_none()
        if spec is not None:
            _kernel(spec).check()
        steps["lab_s"] = time.perf_counter() - t
        if thread is not None:
            thread.join()
            if "error" in box:
                out["error"] = box["error"]
            elif out["gpu"] is not None:
                t = time.perf_counter()
                tm = box["torch"]
                tm.cuda.current_blas_handle()                   # CUDA start + cuBLAS handle
                a = tm.randn(256, 256, device="cuda", dtype=tm.float16)
                (a @ a).sum().item()                            # cuBLAS's first GEMM
                steps["torch_cuda_s"] = time.perf_counter() - t
    except Exception as e:
        out["error"] = getattr(e, "message", None) or f"{type(e).__name__}: {e}"
    out.update(steps)
    out["warm_s"] = time.perf_counter() - started
    return out


def _context_lost() -> bool:
    """Whether this process's GPU context is unusable (a sticky error such as an illegal
    address): a synchronize then fails too."""
    try:
        from cutile_lab.runtime.device import gpu
        gpu().device.sync()  # a sticky error surfaces here
        return False
    except Exception:
        return True


def time_baseline(baseline: Callable, config: dict, repeats: int, warmup: int) -> float:
    """Median seconds of ``baseline(**config)()`` on this worker's GPU: PyTorch work timed
    with its own events on its current stream, or a lab op with the lab's timer."""
    fn = baseline(**config)
    probe = fn()
    if timing.is_op(probe):
        t = timing.time_launch(fn, warmup=warmup, repeats=repeats, label="baseline")
        return t.median
    import statistics
    import torch
    for _ in range(max(warmup, 1)):
        fn()
    torch.cuda.synchronize()
    pairs = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        pairs.append((a, b))
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in pairs) / 1e3


def compile_config(text: str, filename: str, line_offset: int, kernel_name: str, arch: str,
                   consts: dict, globals_: dict, options: dict, use_cache: bool,
                   cached_only: bool = False) -> dict | None:
    """Compile one configuration from source text (runs in a worker process or thread).

    Returns plain data: ok, error, registers, shared_bytes, local_bytes, compile_s, cache
    (with ``cached_only``, None where the compile cache holds no compile of it).
    """
    from cutile_lab.runtime.backend import silence_announcement
    silence_announcement()
    t0 = time.perf_counter()
    out: dict[str, Any] = {"ok": False, "error": None, "registers": None, "shared_bytes": None,
                           "local_bytes": None, "compile_s": None, "cache": None}
    try:
        from cutile_lab.kernel import kernels_from_source
        kernels = kernels_from_source(text, filename, globals_=globals_, line_offset=line_offset)
        compiled = kernels[kernel_name].compile(arch, use_cache=use_cache, options=options,
                                                cached_only=cached_only, **consts)
        if compiled is None:            # cached_only, and the cache has none
            return None
        r = compiled.resources
        out.update(ok=True, registers=r.get("registers"), shared_bytes=r.get("shared_bytes"),
                   local_bytes=r.get("local_bytes"), cache=compiled.cache)
    except Exception as e:   # reported per configuration, never raised out of the sweep
        msg = getattr(e, "message", None) or str(e) or type(e).__name__
        span = getattr(e, "span", None)
        out["error"] = (f"line {span.line}: " if span is not None and span.line else "") + \
            msg.splitlines()[0]
    out["compile_s"] = time.perf_counter() - t0
    return out


def launch_of(kernel, args):
    """``kernel(*args)`` / ``kernel(**args)``, or ``args`` itself when it is already an op."""
    if timing.is_op(args):
        return args
    if isinstance(args, Mapping):
        return kernel(**args)
    if isinstance(args, (tuple, list)):
        return kernel(*args)
    return kernel(args)


def run_config(kernel, make_args: Callable, config: dict, *, gpu: bool, repeats: int,
               warmup: int, record: bool, check: Callable | None, peaks, device: str) -> dict:
    """Run one configuration: time it on the GPU (or run it once on the simulator) and check
    it. Returns the row's run columns."""
    row: dict[str, Any] = {"median_us": None, "gbps": None, "tflops": None,
                           "pct_of_roof": None, "checked": None}

    def make():
        return launch_of(kernel, make_args(**config))
    first_args = make_args(**config)
    first = launch_of(kernel, first_args)
    if gpu:
        count, _ = timing.work_of(first)
        ops = [first]
        t = timing.time_launch(lambda: ops.pop() if ops else make(), warmup=max(warmup, 1),
                               repeats=repeats)
        from cutile_lab.performance import MEASUREMENTS, Measurement
        label = f"{kernel.name} " + ",".join(f"{k}={v}" for k, v in config.items())
        m = Measurement(label, kernel.name, count.precision, count.flops, count.bytes, t.median,
                        list(t.samples), device=device, params=dict(config))
        if record:
            MEASUREMENTS.add(m)
        else:
            row["_measurement"] = m          # recorded by the caller (a sweep's host)
        r = timing.measurement_row(m, peaks)
        row.update(median_us=r["median_us"], gbps=r["gbps"], tflops=r["tflops"],
                   pct_of_roof=r["pct_of_roof"])
    else:
        t0 = time.perf_counter()
        result = first.sync() if timing.is_op(first) else first
        row["sim_ms"] = (time.perf_counter() - t0) * 1e3
        if check is not None:
            row["checked"] = bool(_call_check(check, first_args, result))
    if gpu and check is not None:
        args = make_args(**config)
        result = launch_of(kernel, args).sync()
        row["checked"] = bool(_call_check(check, args, result))
    return row


def _call_check(check: Callable, args, result) -> bool:
    """``check(result, args)`` or ``check(result)``: True when the output is right."""
    import inspect
    try:
        n = len(inspect.signature(check).parameters)
    except (TypeError, ValueError):
        n = 1
    out = check(result, args) if n >= 2 else check(result)
    return True if out is None else bool(out)


def run_configuration(spec: KernelSpec, config: dict, payload: bytes, repeats: int,
                      warmup: int) -> dict:
    """Run (and on a GPU, time) one configuration on this worker; returns its row's run
    columns, the worker's place, and ``_measurement`` for the host to record. Never raises for
    the configuration's own faults: they are the row's ``error``."""
    import cloudpickle
    from cutile_lab.runtime.backend import silence_announcement
    started = time.perf_counter()
    silence_announcement()
    make_args, check, baseline = cloudpickle.loads(payload)
    place = where()
    on_gpu = place["gpu"] is not None
    row: dict[str, Any] = {}
    try:
        from cutile_lab.performance import lookup_device
        peaks = lookup_device(place["device"]) if on_gpu else None
        row.update(run_config(_kernel(spec), make_args, config, gpu=on_gpu, repeats=repeats,
                              warmup=warmup, record=False, check=check, peaks=peaks,
                              device=place["device"] if on_gpu else ""))
        if baseline is not None and on_gpu:
            row["baseline_us"] = time_baseline(baseline, config, repeats, warmup) * 1e6
    except Exception as e:
        row["error"] = getattr(e, "message", None) or f"{type(e).__name__}: {e}"
        if on_gpu and _context_lost():
            row["context_lost"] = True
            row["error"] += " (the GPU context was lost; the worker was restarted)"
    row.update(place)
    row["worker_s"] = time.perf_counter() - started     # the worker's own time for this row
    return row


@contextlib.contextmanager
def spawnable_main():
    """While spawning workers from IPython: its ``__main__`` (the notebook's namespace) has no
    ``__spec__``, which spawned workers read; None tells them there is no main module to
    re-import."""
    main = sys.modules.get("__main__")
    patched = main is not None and not hasattr(main, "__spec__")
    if patched:
        main.__spec__ = None
    try:
        yield
    finally:
        if patched:
            try:
                del main.__spec__
            except AttributeError:
                pass


# --- runners ------------------------------------------------------------------------------------

def _pin(index, env: Mapping[str, str] | None = None) -> None:
    """Worker initializer: this process has the pool owner's environment ``env`` (a forked
    worker starts with its fork server's) and sees only GPU ``index`` (before CUDA is
    touched)."""
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    os.environ["CUDA_VISIBLE_DEVICES"] = str(index)
    os.environ[POOL_GPU_ENV] = str(index)


def _worker_context(torch: bool):
    """How a pool's worker processes start. Where the platform has it (Linux), from a fork
    server: one process per session that imports the lab -- and PyTorch, where ``torch`` says
    the sweep uses it -- once; every later worker is a fork of it (no CUDA in it yet, so each
    makes its own context) and starts without those imports. The server's imports are fixed when
    it starts. Elsewhere, spawned: each worker imports everything itself."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    import importlib.util
    preload = [__name__] + (["torch"] if torch and importlib.util.find_spec("torch") else [])
    ctx.set_forkserver_preload(preload)
    return ctx


def local_gpu_count() -> int:
    """How many GPUs this host's driver sees (0 without a driver), without making a context."""
    try:
        from cuda.bindings import driver
        (err,) = driver.cuInit(0)
        if int(err) != 0:
            return 0
        err, n = driver.cuDeviceGetCount()
        return int(n) if int(err) == 0 else 0
    except Exception:
        return 0


class GPUPool:
    """One worker process per GPU of this host, each pinned to its GPU, each running one
    configuration at a time. ``GPUPool()`` takes every GPU; ``GPUPool([0, 2])`` some;
    ``GPUPool(2)`` the first two. Use it as ``sweep(..., gpus=pool)`` (``gpus="all"`` uses the
    session's kept pool: ``notebook.gpu_pools``); close it with ``shutdown()`` or a ``with``
    block.

    Its workers start on the first ``start``/``warm``/``submit`` (a sweep calls ``start``
    before it compiles) and warm up once (``warm_up``); a pool kept open pays that once.

    ``allow_simulator=True`` lets a pool be made where there is no GPU (each worker then runs
    the simulator): for tests of the dispatch and fault handling on a CPU-only machine.
    """

    def __init__(self, gpus: int | Sequence[int] | str | None = None, *,
                 allow_simulator: bool = False):
        n = local_gpu_count()
        indices = list(range(n)) if gpus is None or gpus == "all" else device_indices(gpus)
        if not indices:
            from cutile_lab.errors import NoDeviceError
            raise NoDeviceError("no GPU to make a pool of (this host's driver sees none)",
                                  help="sweep without gpus= to run on the simulator, or pass "
                                       "a Dask client as executor=")
        missing = [i for i in indices if i >= n]
        if missing and not allow_simulator:
            from cutile_lab.errors import NoDeviceError
            raise NoDeviceError(f"this host has {n} GPU(s); there is no GPU {missing[0]}",
                                  help=f"choose among 0..{n - 1}" if n else
                                  "run on a machine with NVIDIA GPUs")
        self.gpus = indices
        self._pools: dict[int, ProcessPoolExecutor] = {}
        self._warming: dict[int, Future] = {}
        self._torch = "torch" in sys.modules
        self.restarts = 0

    def _pool(self, slot: int) -> ProcessPoolExecutor:
        p = self._pools.get(slot)
        if p is not None and getattr(p, "_broken", False):     # its worker died (in a warm-up)
            self.restart(slot)
            p = None
        if p is None:
            p = ProcessPoolExecutor(max_workers=1, mp_context=_worker_context(self._torch),
                                    initializer=_pin, initargs=(self.gpus[slot],
                                                                dict(os.environ)))
            self._pools[slot] = p
        return p

    def submit(self, slot: int, fn: Callable, *args) -> Future:
        with spawnable_main():             # a worker process starts on its first task
            return self._pool(slot).submit(fn, *args)

    def repair(self) -> None:
        """Replace every worker that died (its executor broken, or its process gone before the
        executor noticed), so that the next sweep finds each GPU's worker alive and warms the
        new ones in its ``start``."""
        for slot, p in list(self._pools.items()):
            procs = list((getattr(p, "_processes", None) or {}).values())
            if getattr(p, "_broken", False) or any(not q.is_alive() for q in procs):
                self.restart(slot)

    @property
    def pids(self) -> dict[int, int]:
        """The process id of each started worker, by GPU index."""
        return {self.gpus[slot]: pid for slot, p in self._pools.items()
                for pid in (getattr(p, "_processes", None) or {})}

    def restart(self, slot: int) -> None:
        """Replace the worker of ``slot`` (it died, or its GPU context is unusable)."""
        p = self._pools.pop(slot, None)
        self._warming.pop(slot, None)
        if p is not None:
            p.shutdown(wait=False, cancel_futures=True)
        self.restarts += 1

    def start(self, spec: KernelSpec | None = None, payload: bytes | None = None) -> None:
        """Start every worker and its ``warm_up`` now, without waiting: a sweep calls this
        before its compiles, so the workers' one-time costs (process, imports, GPU context,
        PyTorch and cuBLAS where ``payload`` uses them) overlap them, and each worker takes its
        first configuration as soon as its own warm-up is done. A worker warms once; a pool
        kept open across sweeps pays it once."""
        torch = None if payload is None else uses_torch(payload)
        self._torch = self._torch or bool(torch)
        for slot in range(len(self.gpus)):
            if slot not in self._warming:
                self._warming[slot] = self.submit(slot, warm_up, spec, torch)

    def warm(self, spec: KernelSpec | None = None, payload: bytes | None = None) -> None:
        """``start`` and wait until every worker is warm (a pool made before timed sweeps)."""
        self.start(spec, payload)
        wait(list(self._warming.values()))

    @property
    def warmups(self) -> dict[int, dict]:
        """Each warmed worker's ``warm_up`` record, by GPU index."""
        out = {}
        for slot, f in self._warming.items():
            if f.done() and not f.cancelled() and f.exception() is None:
                out[self.gpus[slot]] = f.result()
        return out

    def shutdown(self, wait: bool = True) -> None:
        """Stop every worker (what is queued is cancelled). With ``wait``, return once they have
        exited (their GPU memory is then free); without, at once: they exit on their own."""
        for p in self._pools.values():
            p.shutdown(wait=wait, cancel_futures=True)
        self._pools.clear()
        self._warming.clear()

    def __enter__(self) -> "GPUPool":
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        return f"GPUPool(gpus={self.gpus})"

    def run_all(self, spec: KernelSpec, configs: list[dict], payload: bytes, repeats: int,
                warmup: int, on_result: Callable[[int, dict], None]) -> None:
        """Every configuration, each GPU kept busy with one at a time (a faster GPU takes
        more); ``on_result(i, row)`` as each finishes."""
        queue = list(range(len(configs)))
        attempts = [0] * len(configs)
        running: dict[Future, tuple[int, int]] = {}

        def feed(slot: int) -> None:
            if queue:
                i = queue.pop(0)
                attempts[i] += 1
                running[self.submit(slot, run_configuration, spec, configs[i], payload,
                                    repeats, warmup)] = (slot, i)
        for slot in range(len(self.gpus)):
            feed(slot)
        while running:
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for fut in done:
                slot, i = running.pop(fut)
                try:
                    row = fut.result()
                except BrokenProcessPool:
                    self.restart(slot)
                    if attempts[i] < 2:
                        queue.insert(0, i)
                    else:
                        on_result(i, {"error": "the worker process died twice running this "
                                               "configuration", "gpu": self.gpus[slot]})
                    feed(slot)
                    continue
                except Exception as e:      # the task itself could not run (unpicklable...)
                    row = {"error": f"{type(e).__name__}: {e}", "gpu": self.gpus[slot]}
                if row.pop("context_lost", False):
                    self.restart(slot)
                on_result(i, row)
                feed(slot)


def is_dask_client(obj) -> bool:
    return type(obj).__name__ == "Client" and type(obj).__module__.startswith("distributed")


def run_on_dask(client, spec: KernelSpec, configs: list[dict], payload: bytes, repeats: int,
                warmup: int, on_result: Callable[[int, dict], None]) -> None:
    """Every configuration as a Dask task (the scheduler spreads them over the workers and
    reschedules the tasks of a worker that dies); ``on_result(i, row)`` as each finishes.

    For GPU timings give each worker one thread (``dask-cuda``'s ``LocalCUDACluster`` does), so
    that no two configurations share a GPU while they are timed."""
    from distributed import as_completed
    futures = {client.submit(run_configuration, spec, c, payload, repeats, warmup,
                             pure=False, retries=1): i for i, c in enumerate(configs)}
    for fut in as_completed(futures):
        i = futures[fut]
        try:
            row = fut.result()
        except Exception as e:            # KilledWorker after the allowed failures, ...
            row = {"error": f"the worker failed running this configuration "
                            f"({type(e).__name__}: {e})"}
        if row.pop("context_lost", False) and row.get("worker"):
            _restart_dask_worker(client, row["worker"])
        on_result(i, row)


def _restart_dask_worker(client, worker: str) -> None:
    host, _, pid = worker.rpartition(":")
    try:
        info = client.scheduler_info()["workers"]
        addrs = [a for a, w in info.items() if str(w.get("pid")) == pid]
        if addrs:
            client.restart_workers(addrs)
    except Exception:        # a restart that fails leaves that worker's later rows to fail
        pass


def run_all(runner, spec: KernelSpec, configs: list[dict], payload: bytes, repeats: int,
            warmup: int, on_result: Callable[[int, dict], None]) -> None:
    if isinstance(runner, GPUPool):
        runner.run_all(spec, configs, payload, repeats, warmup, on_result)
    else:
        run_on_dask(runner, spec, configs, payload, repeats, warmup, on_result)


def compile_executor(executor):
    """A Dask client compiles through its ``concurrent.futures`` face."""
    if is_dask_client(executor):
        return executor.get_executor(pure=False)
    return executor


__all__: Iterable[str] = ("GPUPool", "KernelSpec", "run_configuration", "local_gpu_count",
                          "is_dask_client")
