"""Tuning const generics: ``sweep`` (a pandas DataFrame over a cartesian product) and
``explore`` (an ipywidgets explorer that recompiles and re-runs as the choices change).

Owns: enumerating configurations, compiling them in parallel through any
``concurrent.futures.Executor`` (workers get the kernel's *source text*, filename and consts —
never live objects — so a process pool or a Dask client's ``get_executor()`` work the same),
progress (``tqdm.auto``: a widget in a notebook, a text line elsewhere), and the table. The
worker-side compile and run of one configuration are ``notebook.fanout``'s; timing and counting
``performance.timing``'s; compiling ``Kernel.compile``'s.
"""
from __future__ import annotations

import ast
import itertools
import math
import os
import time
from typing import Any, Callable, Iterable, Mapping

from cutile_lab.notebook import fanout, gpu_pools
from cutile_lab.performance import timing


# --- host side ----------------------------------------------------------------------------------

def _simple_globals(kernel) -> dict:
    """The module-level values the kernel body reads that can travel to a worker."""
    g = getattr(kernel, "globals", None) or {}
    names = {n.id for n in ast.walk(kernel.definition.node)
             if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    out = {}
    for n in names:
        if n in g:
            v = g[n]
            if isinstance(v, (int, float, bool, str, tuple)) or v is None:
                out[n] = v
    return out


def configurations(choices: Mapping[str, Iterable]) -> list[dict]:
    """The cartesian product of ``choices``, in the order given."""
    keys = list(choices)
    values = []
    for k in keys:
        v = choices[k]
        if isinstance(v, (str, bytes)) or not isinstance(v, Iterable):
            v = [v]
        values.append(list(v))
    return [dict(zip(keys, combo)) for combo in itertools.product(*values)]


def _takes(fn, name: str) -> bool:
    """Whether ``fn`` can be called with the keyword ``name`` (True when its signature cannot
    be read)."""
    import inspect
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.kind == p.VAR_KEYWORD or (p.name == name and p.kind in (
        p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)) for p in params)


def check_choices(kernel, make_args, choices: Mapping) -> None:
    """A sweep's kernel and choices before anything compiles: a ``LanguageError`` for what is
    not a kernel, a ``LaunchError`` for no choices, a choice with no values, or a name that is
    neither a const generic nor a keyword of ``make_args``."""
    from cutile_lab.errors import LanguageError, LaunchError
    generics = getattr(kernel, "const_generics", None)
    if generics is None or getattr(kernel, "definition", None) is None:
        raise LanguageError(f"cannot sweep {type(kernel).__name__}: not a kernel",
                            help="sweep a kernel defined by %%tilekernel, @cl.kernel or "
                                 "@ct.kernel")
    example = f"sweep({kernel.name}, make_args, {(generics or ['B'])[0]}=[64, 128])"
    if not choices:
        raise LaunchError("sweep: no choices to sweep", help=f"give them as keywords, e.g. "
                                                               f"{example}")
    for name in choices:
        values = choices[name]
        if not isinstance(values, (str, bytes)) and isinstance(values, Iterable) \
                and not list(values):
            raise LaunchError(f"sweep: {name}={values!r} gives no values to sweep",
                              help=f"give at least one, e.g. {example}")
        if name not in generics and (make_args is None or not _takes(make_args, name)):
            raise LaunchError(f"sweep: `{name}` is not a const generic of `{kernel.name}`"
                              + (" nor a keyword of `make_args`" if make_args else ""),
                              help=f"the const generics of `{kernel.name}` are "
                                   f"{', '.join(generics) or 'none'}; other choices go to "
                                   "`make_args` as keywords")


def progress_bar(total: int, label: str, enabled: bool = True, file=None):
    """A ``tqdm.auto`` bar over ``total`` steps: an ipywidgets bar in a notebook, one rewritten
    text line (on ``file``, default stderr) elsewhere; disabled when ``enabled`` is false or
    there is nothing to do."""
    from tqdm.auto import tqdm
    return tqdm(total=total, desc=label, disable=not enabled or total <= 0, file=file,
                leave=True, dynamic_ncols=True)


def _default_executor(n_tasks: int):
    """A local process pool (spawned workers: no CUDA context or threads are forked)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    workers = max(1, min(n_tasks, os.cpu_count() or 1, 8))
    return ProcessPoolExecutor(max_workers=workers,
                               mp_context=multiprocessing.get_context("spawn"))


def _compile_all(kernel, configs: list[dict], arch: str, executor, progress: bool,
                 use_cache: bool) -> dict[tuple, dict]:
    """Compile every distinct const binding of ``configs``; results keyed by the binding."""
    from concurrent.futures import as_completed
    generics = set(kernel.const_generics)
    keys = []
    for c in configs:
        key = tuple(sorted((k, v) for k, v in c.items() if k in generics))
        if key not in keys:
            keys.append(key)
    src = kernel.source
    common = dict(text=src.text, filename=src.filename, line_offset=src.line_offset,
                  kernel_name=kernel.name, arch=arch, globals_=_simple_globals(kernel),
                  options=dict(kernel.definition.options), use_cache=use_cache)
    unbound = [g for g in kernel.const_generics
               if all(g not in dict(k) for k in keys)
               and (kernel.definition.param(g) is None
                    or kernel.definition.param(g).default is None)]
    if kernel.definition.kind == "cutile" or unbound:
        why = ("a plain cuTile kernel compiles at launch" if kernel.definition.kind == "cutile"
               else f"{', '.join(unbound)} bound at launch")
        return {k: {"ok": True, "error": None, "compile_s": None, "deferred": why}
                for k in keys}
    results: dict[tuple, dict] = {}
    if use_cache:           # what the compile cache holds needs no worker (a sweep run again)
        for k in keys:
            hit = fanout.compile_config(consts=dict(k), cached_only=True, **common)
            if hit is not None and hit["ok"]:
                results[k] = hit
        keys = [k for k in keys if k not in results]
        if not keys:
            return results
    own = executor is None
    if own:
        executor = _default_executor(len(keys))
    bar = progress_bar(len(keys), f"compiling {kernel.name}", progress)
    with fanout.spawnable_main():
        try:
            futures = {}
            for k in keys:
                try:
                    futures[executor.submit(fanout.compile_config, consts=dict(k),
                                            **common)] = k
                except Exception as e:     # the executor refused the work: this row's fault
                    results[k] = {"ok": False, "compile_s": None,
                                  "error": f"executor failed: {type(e).__name__}: {e}"}
                    bar.update()
            for fut in as_completed(futures):
                k = futures[fut]
                try:
                    results[k] = fut.result()
                except Exception as e:     # a worker died (out of memory, killed...)
                    results[k] = {"ok": False, "error": f"worker failed: {e}",
                                  "compile_s": None}
                bar.update()
        finally:
            bar.close()
            if own:
                executor.shutdown(wait=True)
    return results


def sweep(kernel, make_args: Callable | None = None, executor=None, progress: bool = True, *,
          gpus=None, baseline: Callable | None = None, arch: str | None = None,
          repeats: int = 20, warmup: int = 3, use_cache: bool = True, record: bool = True,
          check: Callable | None = None, keep_pool: bool = True, **choices):
    """Compile and time ``kernel`` over the cartesian product of ``choices``.

    ``choices`` map names to candidate values: const generics (``B=[64, 128, 256]``) and any
    other keyword ``make_args`` takes (problem sizes). ``make_args(**config)`` returns the
    launch's arguments (a tuple, a dict of keywords, or a ready launch op). Distinct const
    bindings compile in parallel on ``executor`` (default: a local process pool; any
    ``concurrent.futures`` executor; or a ``dask.distributed`` ``Client``); then, on a GPU, each
    configuration is timed (CUDA events, median of ``repeats``) and recorded for
    ``%tile_roofline``; without a GPU each runs once on the simulator, and
    ``check(result[, args])`` says whether its output is right.

    Where configurations run: in this process by default; on every GPU of this host with
    ``gpus="all"`` (or a count, a list of indices, or a ``GPUPool``), one configuration per GPU
    at a time, in one worker process per GPU. The first ``gpus=`` sweep on a set of GPUs starts
    its workers (they warm up while the configurations compile) and the session keeps them:
    the next sweep on the same GPUs reuses them, without their start (a CUDA context each,
    PyTorch's CUDA start and cuBLAS). Each kept worker holds a CUDA context, and what PyTorch
    cached, on its GPU until ``close_gpu_pools()`` (``cutile_lab.close_gpu_pools``) or the end
    of the session; ``keep_pool=False`` gives a pool of this sweep's own, closed when it ends. A
    ``GPUPool`` passed as ``gpus=`` is yours: the sweep never closes it. On the workers of a
    Dask cluster when ``executor`` is a ``Client`` (each worker on its own GPU, or on the
    simulator where it has none). ``make_args``, ``check`` and
    ``baseline`` then run on the worker (closures travel with cloudpickle). ``baseline(**config)``
    returns a function that enqueues the same work another way (``lambda: torch.add(x, y)``);
    it is timed on the same GPU as the configuration (``baseline_us``, ``speedup``).

    Returns a DataFrame: the choices, registers, shared_bytes, compile_s, median_us, gbps,
    tflops, pct_of_roof, ok (and error, checked, gpu, device, sim_ms, baseline_us, speedup as
    they apply). A configuration's fault (a compile error, a crash, a worker that died twice,
    a lost GPU context) is its row's ``error``; the sweep goes on.
    """
    import pandas as pd
    from cutile_lab.notebook.options import default_arch
    check_choices(kernel, make_args, choices)
    configs = configurations(choices)
    arch = arch or default_arch()
    runner, own_runner = gpu_pools.runner_for(executor, gpus, keep_pool) \
        if make_args is not None else (None, False)
    try:
        if runner is not None:
            spec = fanout.KernelSpec.of(kernel, _simple_globals(kernel))
            payload = fanout.pack(make_args, check, baseline)
            if isinstance(runner, fanout.GPUPool):
                runner.start(spec, payload)     # the workers warm up while the compiles run
        compiled = _compile_all(kernel, configs, arch, fanout.compile_executor(executor),
                                progress, use_cache)
        rows = _compiled_rows(kernel, configs, compiled)
        todo = [i for i, r in enumerate(rows) if r["ok"] and make_args is not None]
        run = _run_here if runner is None else _run_on(runner, spec, payload)
        run(kernel, make_args, configs, rows, todo, progress=progress, repeats=repeats,
            warmup=warmup, record=record, check=check, baseline=baseline)
    finally:
        if own_runner:             # nothing waits on its workers' exit: they end on their own
            runner.shutdown(wait=False)
    return _table(pd.DataFrame(rows), list(choices))


def _compiled_rows(kernel, configs: list[dict], compiled: dict[tuple, dict]) -> list[dict]:
    """One row per configuration: its choices and what compiling its const binding gave."""
    generics = set(kernel.const_generics)
    rows = []
    for config in configs:
        c = compiled[tuple(sorted((k, v) for k, v in config.items() if k in generics))]
        row: dict[str, Any] = dict(config)
        row.update(registers=c.get("registers"), shared_bytes=c.get("shared_bytes"),
                   compile_s=c.get("compile_s"), median_us=None, gbps=None, tflops=None,
                   pct_of_roof=None, ok=bool(c.get("ok")), error=c.get("error"))
        rows.append(row)
    return rows


def _table(df, choices: list[str]):
    """The sweep's columns in their order (the choices first); ``error`` only where one is."""
    columns = choices + ["registers", "shared_bytes", "compile_s", "median_us", "gbps",
                         "tflops", "pct_of_roof", "ok"]
    df = df[columns + [c for c in df.columns if c not in columns]]
    if "error" in df and df["error"].isna().all():
        df = df.drop(columns=["error"])
    return df


def _run_on(runner, spec: fanout.KernelSpec, payload: bytes) -> Callable:
    """Run the configurations on ``runner`` (a ``GPUPool`` or a Dask client): the user's
    callables (``payload``) travel to the workers, each result is folded in as it arrives."""
    def run(kernel, make_args, configs, rows, todo, *, progress, repeats, warmup, record,
            check, baseline) -> None:
        from cutile_lab.performance import MEASUREMENTS
        order = _largest_first(todo, configs, set(kernel.const_generics))
        with progress_bar(len(todo), f"running {kernel.name} on {_runner_name(runner)}",
                          progress) as bar:
            def done(j: int, result: dict) -> None:
                m = result.pop("_measurement", None)
                if record and m is not None:
                    MEASUREMENTS.add(m)
                _finish_row(rows[order[j]], result)
                bar.update()
            with fanout.spawnable_main():
                fanout.run_all(runner, spec, [configs[i] for i in order], payload, repeats,
                               warmup, done)
    return run


def _largest_first(todo: list[int], configs: list[dict], generics: set) -> list[int]:
    """The order configurations are handed to workers in: the largest problems first (the
    product of the numeric choices that are not const generics, e.g. ``size``), so that on
    several GPUs the last ones to finish are short and no GPU idles behind one long run
    (longest processing time first). The table keeps the order of ``choices``."""
    def work(i: int) -> float:
        p = 1.0
        for k, v in configs[i].items():
            if k not in generics and isinstance(v, (int, float)) and not isinstance(v, bool):
                p *= abs(float(v)) or 1.0
        return p
    return sorted(todo, key=lambda i: -work(i))


def _runner_name(runner) -> str:
    if isinstance(runner, fanout.GPUPool):
        return f"{len(runner.gpus)} GPU(s)"
    return f"{len(runner.scheduler_info().get('workers', {}))} Dask worker(s)"


def _finish_row(row: dict, result: dict) -> None:
    """Fold one configuration's run columns into its row."""
    row.update(result)
    if row.get("error"):
        row["ok"] = False
    elif row.get("checked") is False:
        row["ok"] = False
        row["error"] = "wrong result"
    if row.get("baseline_us") and row.get("median_us"):
        row["speedup"] = row["baseline_us"] / row["median_us"]


def _run_here(kernel, make_args, configs, rows, todo, *, progress, repeats, warmup, record,
              check, baseline) -> None:
    """Run the configurations in this process, one after the other."""
    from cutile_lab.performance import MEASUREMENTS, lookup_device
    found, _ = timing.gpu_status()
    device = timing.device_name() or "" if found else ""
    peaks = lookup_device(device) if device else None
    place = fanout.where() if todo else {}
    place.pop("worker", None)
    with progress_bar(len(todo), f"{'timing' if found else 'running'} {kernel.name}",
                      progress) as bar:
        for i in todo:
            result: dict[str, Any] = {}
            try:
                result.update(fanout.run_config(kernel, make_args, configs[i], gpu=found,
                                                repeats=repeats, warmup=warmup, record=False,
                                                check=check, peaks=peaks, device=device))
                if baseline is not None and found:
                    result["baseline_us"] = fanout.time_baseline(baseline, configs[i],
                                                                 repeats, warmup) * 1e6
            except Exception as e:
                result["error"] = getattr(e, "message", None) or f"{type(e).__name__}: {e}"
            m = result.pop("_measurement", None)
            if record and m is not None:
                MEASUREMENTS.add(m)
            result.update(place)
            _finish_row(rows[i], result)
            bar.update()


# --- explore ------------------------------------------------------------------------------------

class Explorer:
    """The widget ``explore`` returns: one control per choice, a plot and the table of every
    configuration tried so far (``history``, a DataFrame). ``run(**config)`` runs one."""

    def __init__(self, kernel, make_args: Callable, choices: Mapping[str, Iterable], *,
                 arch: str | None = None, repeats: int = 20, warmup: int = 3,
                 check: Callable | None = None, auto: bool = True):
        import ipywidgets as w
        from cutile_lab.notebook.options import default_arch
        from cutile_lab.performance import lookup_device
        self.kernel = kernel
        self.make_args = make_args
        self.arch = arch or default_arch()
        self.repeats = repeats
        self.warmup = warmup
        self.check = check
        self.gpu, _ = timing.gpu_status()
        self.device = (timing.device_name() or "") if self.gpu else ""
        self.peaks = lookup_device(self.device) if self.device else None
        self.rows: list[dict] = []
        self.controls: dict[str, Any] = {}
        for name, values in choices.items():
            values = list(values) if not isinstance(values, (str, bytes)) else [values]
            if len(values) > 4 and all(isinstance(v, (int, float)) for v in values):
                ctl = w.SelectionSlider(options=values, value=values[0], description=name,
                                        continuous_update=False)
            else:
                ctl = w.Dropdown(options=values, value=values[0], description=name)
            self.controls[name] = ctl
        self.button = w.Button(description="Run", icon="play")
        self.status = w.HTML()
        self.plot = w.Output()
        self.table = w.Output()
        self.button.on_click(lambda _b: self.run_current())
        if auto:
            for ctl in self.controls.values():
                ctl.observe(lambda _change: self.run_current(), names="value")
        mode = "GPU timings" if self.gpu else "no GPU: simulator correctness + resources"
        header = w.HTML(f"<b>{kernel.name}</b> · {self.arch} · {mode}")
        # The plot keeps its own width (a PNG) and the table scrolls: at an ordinary width
        # (a 1400 px window with the file browser open) neither squeezes the other to nothing,
        # and on a narrow one the table wraps below the plot.
        self.plot.layout = w.Layout(flex="0 0 auto", min_width="320px", max_width="100%")
        self.table.layout = w.Layout(flex="1 1 360px", min_width="0", max_width="100%",
                                     overflow="auto")
        views = w.Box([self.plot, self.table],
                      layout=w.Layout(display="flex", flex_flow="row wrap",
                                      align_items="flex-start", width="100%"))
        self.widget = w.VBox([header, w.HBox(list(self.controls.values()) + [self.button],
                                             layout=w.Layout(flex_flow="row wrap")),
                              self.status, views])

    @property
    def history(self):
        import pandas as pd
        return pd.DataFrame(self.rows)

    def current(self) -> dict:
        return {k: c.value for k, c in self.controls.items()}

    def run_current(self) -> dict:
        return self.run(**self.current())

    def run(self, **config) -> dict:
        """Compile and run one configuration; append it to ``history``; refresh the views."""
        from cutile_lab.notebook.tilecell import _unbound_generics
        consts = {k: v for k, v in config.items() if k in self.kernel.const_generics}
        row: dict[str, Any] = dict(config)
        self.status.value = "compiling…"
        t0 = time.perf_counter()
        try:
            if self.kernel.definition.kind != "cutile" and \
                    not _unbound_generics(self.kernel, consts):
                c = self.kernel.compile(self.arch, **consts)
                row.update(registers=c.resources.get("registers"),
                           shared_bytes=c.resources.get("shared_bytes"),
                           local_bytes=c.resources.get("local_bytes"), cache=c.cache)
            row["compile_s"] = time.perf_counter() - t0
            self.status.value = "running…"
            row.update(fanout.run_config(self.kernel, self.make_args, config, gpu=self.gpu,
                                         repeats=self.repeats, warmup=self.warmup, record=True,
                                         check=self.check, peaks=self.peaks,
                                         device=self.device))
            row["ok"] = row.get("checked") is not False
            if not row["ok"]:
                row["error"] = "wrong result"
            self.status.value = ""
        except Exception as e:
            row["ok"] = False
            row["error"] = getattr(e, "message", None) or f"{type(e).__name__}: {e}"
            self.status.value = (f'<span style="color:#cf222e">{_html_escape(row["error"])}'
                                 f'</span>')
        # one row per configuration: trying one again replaces its row
        same = [i for i, r in enumerate(self.rows)
                if all(r.get(k) == v for k, v in config.items())]
        if same:
            self.rows[same[0]] = row
        else:
            self.rows.append(row)
        self._refresh()
        return row

    def _refresh(self) -> None:
        df = self.history
        # outputs set directly: works with or without a live kernel behind the widgets
        self.table.outputs = ()
        self.table.append_display_data(df)
        metric = "median_us" if self.gpu else "registers"
        if metric not in df or df[metric].isna().all():
            return
        from matplotlib.figure import Figure
        from cutile_lab.performance import figure_png
        from IPython.display import Image
        fig = Figure(figsize=(5, 3), layout="constrained")
        ax = fig.add_subplot()
        keys = list(self.controls)
        labels = [",".join(f"{k}={r.get(k)}" for k in keys) for r in self.rows]
        values = [r.get(metric) if r.get(metric) is not None else math.nan for r in self.rows]
        colors = ["tab:blue" if r.get("ok") else "tab:red" for r in self.rows]
        ax.bar(range(len(values)), values, color=colors)
        ax.set_xticks(range(len(values)), labels, rotation=45, ha="right", fontsize=8)
        ax.set_ylabel("median µs" if self.gpu else "registers")
        ax.set_title(f"{self.kernel.name}: {'time per launch' if self.gpu else 'registers'}",
                     fontsize=10)
        self.plot.outputs = ()
        self.plot.append_display_data(Image(figure_png(fig, dpi=80)))

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)


def _html_escape(s: str) -> str:
    import html
    return html.escape(str(s))


def explore(kernel, make_args: Callable, *, arch: str | None = None, repeats: int = 20,
            warmup: int = 3, check: Callable | None = None, run_first: bool = True,
            **choices) -> Explorer:
    """An ipywidgets explorer over ``kernel``'s const generics (and any other keyword
    ``make_args`` takes): one dropdown or slider per entry of ``choices`` (``B=[64, 128,
    256]``). Each change recompiles and re-runs — GPU timings when there is a GPU, else one
    simulator run checked by ``check(result[, args])`` plus the compiled resources — and
    updates a plot and the table of everything tried (``explorer.history``)."""
    if not choices:
        raise ValueError("give the choices to explore, e.g. explore(add, make_args, "
                         "B=[64, 128, 256])")
    ex = Explorer(kernel, make_args, choices, arch=arch, repeats=repeats, warmup=warmup,
                  check=check)
    if run_first:
        ex.run_current()
    return ex
