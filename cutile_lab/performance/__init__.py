"""Performance: what a device can do, what a kernel did, and the pictures that compare the two.

Owns: datasheet peaks (``peaks``), measured ceilings cached per device (``ceilings``), flop/byte
counts (``counting``: closed forms, and a launch's work read off the checker's typed kernel),
measurements and timing loops (``measurement``), timing a launch on the GPU (``timing``: the
gate, the CUDA-event timer, a launch's work and row) and roofline / bandwidth figures
(``roofline``). It comes after the launch in the pipeline: it times what the runtime launches
and never reaches into the notebook layer, which displays what it measures. ``timing`` and
``roofline`` (and so matplotlib) are imported only when used.
"""
from cutile_lab.performance.ceilings import (COPY_BW, cache_dir, clear_ceilings, gemm_ceiling_name,
                                             load_ceiling_dates, load_ceilings, save_ceiling)
from cutile_lab.performance.counting import (FlopByteCount, count_elementwise, count_gemm,
                                             count_rowwise)
from cutile_lab.performance.measurement import (MEASUREMENTS, EventPair, Measurement,
                                                Measurements, Timing, median, time_events,
                                                time_host)
from cutile_lab.performance.peaks import (PEAKS, PRECISIONS, DevicePeaks, attainable_flops,
                                         lookup_device, percent_of_roof)

_ROOFLINE = ("roofline_figure", "bandwidth_figure", "figure_png")


def __getattr__(name: str):
    if name in _ROOFLINE:
        from cutile_lab.performance import roofline
        return getattr(roofline, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["COPY_BW", "cache_dir", "clear_ceilings", "gemm_ceiling_name", "load_ceiling_dates",
           "load_ceilings", "save_ceiling", "FlopByteCount", "count_elementwise", "count_gemm",
           "count_rowwise", "MEASUREMENTS", "EventPair", "Measurement", "Measurements", "Timing",
           "median", "time_events", "time_host", "PEAKS", "PRECISIONS", "DevicePeaks",
           "lookup_device", "percent_of_roof", "attainable_flops", *_ROOFLINE]
