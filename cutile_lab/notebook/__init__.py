"""The notebook layer: ``%load_ext cutile_lab``, the ``%%tilekernel`` cell magic, the report
(MIME bundle with HTML and text fallbacks), timing/device/roofline line magics and tuning widgets.

It displays what the other stages produce and must not reimplement any of them.

Modules: ``magics`` (the IPython magics), ``cuda_magic`` (``%%cuda``: CUDA C++ cells), ``report`` (the report bundles, the JupyterLab
contract), ``highlight`` (Tile IR highlighting), ``diagnostics`` (diagnostics as JSON/text/HTML),
``measure_view`` (``%tile_time``, ``%tile_device``, ``%tile_roofline``, ``%tile_bandwidth``:
timing and counting themselves are ``performance``'s), ``simkernel`` (kernels of a ``--sim`` cell), ``tuning``
(``sweep``, ``explore``), ``fanout`` (a sweep's workers), ``gpu_pools`` (the GPU workers a
session keeps: ``close_gpu_pools``). Heavy imports (matplotlib, pandas, ipywidgets) happen on first use.
"""

__all__ = ["explore", "sweep", "close_gpu_pools", "compile_report_bundle",
           "benchmark_report_bundle"]


def __getattr__(name: str):
    if name in ("explore", "sweep", "Explorer"):
        from cutile_lab.notebook import tuning
        return getattr(tuning, name)
    if name == "close_gpu_pools":
        from cutile_lab.notebook.gpu_pools import close_gpu_pools
        return close_gpu_pools
    if name in ("compile_report_bundle", "benchmark_report_bundle", "REPORT_MIME"):
        from cutile_lab.notebook import report
        return getattr(report, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
