"""Measurements of kernel runs, the session's list of them, and the timing loops that make them.

Owns: ``Measurement`` (one timed kernel configuration with its flop/byte count and derived
rates), ``Measurements`` (an ordered registry; ``MEASUREMENTS`` is the session-wide one that the
notebook's roofline shows), ``Timing`` and the timing loops ``time_events`` (device events,
supplied by the runtime as callables) and ``time_host`` (a host clock). It never touches a GPU
itself: the runtime plugs CUDA events in through ``EventPair``.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol, Sequence

from cutile_lab.performance.counting import FlopByteCount


def median(samples: Sequence[float]) -> float:
    """The median of ``samples`` (ValueError when empty)."""
    if not samples:
        raise ValueError("median of no samples")
    return float(statistics.median(samples))


@dataclass(frozen=True)
class Timing:
    """Per-run durations in seconds, in the order they ran."""

    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        return median(self.samples)

    @property
    def min(self) -> float:
        return min(self.samples)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.samples)

    @property
    def spread(self) -> float:
        """Interquartile range relative to the median: a quick noise figure (0.02 = 2%)."""
        if len(self.samples) < 4:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.samples, n=4)
        return (q3 - q1) / self.median if self.median else 0.0


class EventPairLike(Protocol):
    def record_start(self) -> None: ...
    def record_end(self) -> None: ...
    def elapsed_ms(self) -> float: ...


@dataclass(frozen=True)
class EventPair:
    """Three callables around one timed run, e.g. two CUDA events on the launch stream.

    ``record_start`` / ``record_end`` enqueue the events (they must not block);
    ``elapsed_ms`` waits for the end event and returns the time between them in milliseconds.
    """

    record_start: Callable[[], Any]
    record_end: Callable[[], Any]
    elapsed_ms: Callable[[], float]


def time_events(run: Callable[[], Any], *, make_events: Callable[[], EventPairLike],
                warmup: int = 3, repeats: int = 20,
                before_each: Callable[[], Any] | None = None) -> Timing:
    """Time ``run`` with device events: ``warmup`` untimed runs, then ``repeats`` timed ones.

    Every timed run gets its own event pair from ``make_events``; all runs are enqueued before
    any elapsed time is read, so the host never waits between runs. ``before_each`` runs (and
    is enqueued) before each timed run's start event, e.g. an L2 flush, so it is not timed.
    """
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    for _ in range(warmup):
        if before_each is not None:
            before_each()
        run()
    pairs = []
    for _ in range(repeats):
        pair = make_events()
        if before_each is not None:
            before_each()
        pair.record_start()
        run()
        pair.record_end()
        pairs.append(pair)
    return Timing(tuple(float(p.elapsed_ms()) / 1e3 for p in pairs))


def time_host(run: Callable[[], Any], *, warmup: int = 3, repeats: int = 20,
              clock: Callable[[], float] = time.perf_counter) -> Timing:
    """Time ``run`` with a host clock (seconds): for host overhead or the CPU simulator."""
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    for _ in range(warmup):
        run()
    samples = []
    for _ in range(repeats):
        t0 = clock()
        run()
        samples.append(clock() - t0)
    return Timing(tuple(samples))


@dataclass
class Measurement:
    """One timed kernel configuration. ``seconds`` is the median of ``samples``."""

    name: str                 # label shown on plots, e.g. "add f32 2^28"
    kernel: str               # kernel (or library op) name, e.g. "add", "torch.add"
    precision: str            # 'f32', 'f16', ... — selects the compute roof
    flops: float
    bytes: float              # bytes moved to and from memory
    seconds: float
    samples: list[float] = field(default_factory=list)
    device: str = ""          # driver-reported device name
    params: dict[str, Any] = field(default_factory=dict)  # const generics, sizes, options

    @classmethod
    def from_timing(cls, name: str, timing: Timing, count: FlopByteCount, *, kernel: str = "",
                    precision: str = "f32", device: str = "",
                    params: dict[str, Any] | None = None) -> "Measurement":
        return cls(name=name, kernel=kernel or name, precision=precision, flops=count.flops,
                   bytes=count.bytes, seconds=timing.median, samples=list(timing.samples),
                   device=device, params=dict(params or {}))

    @property
    def flop_rate(self) -> float:
        """flop/s."""
        return self.flops / self.seconds if self.seconds > 0 else math.nan

    @property
    def bandwidth(self) -> float:
        """bytes/s."""
        return self.bytes / self.seconds if self.seconds > 0 else math.nan

    @property
    def intensity(self) -> float:
        """flop/byte (inf when no bytes move)."""
        return self.flops / self.bytes if self.bytes else math.inf

    def as_row(self) -> dict[str, Any]:
        """A flat dict for a DataFrame: fields, derived rates, then ``params`` as columns."""
        row: dict[str, Any] = {
            "name": self.name, "kernel": self.kernel, "precision": self.precision,
            "device": self.device, "seconds": self.seconds, "flops": self.flops,
            "bytes": self.bytes, "flop_rate": self.flop_rate, "bandwidth": self.bandwidth,
            "intensity": self.intensity, "n_samples": len(self.samples),
        }
        for k, v in self.params.items():
            row[f"param_{k}" if k in row else k] = v
        return row


class Measurements:
    """An ordered list of measurements with the few operations the notebook needs."""

    def __init__(self, items: Sequence[Measurement] = ()):
        self._items: list[Measurement] = list(items)

    def add(self, m: Measurement) -> Measurement:
        self._items.append(m)
        return m

    def extend(self, ms: Sequence[Measurement]) -> None:
        self._items.extend(ms)

    def clear(self) -> None:
        self._items.clear()

    def for_device(self, device: str) -> "Measurements":
        return Measurements([m for m in self._items if m.device == device])

    def __iter__(self) -> Iterator[Measurement]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i: int) -> Measurement:
        return self._items[i]

    def __repr__(self) -> str:
        return f"Measurements({len(self)} measured)"

    def to_dataframe(self):
        """A pandas DataFrame, one row per measurement (see ``Measurement.as_row``)."""
        import pandas as pd
        columns = ["name", "kernel", "precision", "device", "seconds", "flops", "bytes",
                   "flop_rate", "bandwidth", "intensity", "n_samples"]
        rows = [m.as_row() for m in self._items]
        return pd.DataFrame(rows) if rows else pd.DataFrame(columns=columns)


#: The session-wide registry: timed launches are added here and ``%roofline`` plots it.
MEASUREMENTS = Measurements()
