"""Datasheet peaks of the NVIDIA GPUs the lab knows, and matching of driver-reported names to them.

Owns: ``DevicePeaks`` (memory bandwidth, dense compute rates per precision, SM count, boost
clock, and the document each figure comes from), the ``PEAKS`` table and ``lookup_device``.
Also the roof arithmetic (``attainable_flops``, ``percent_of_roof``) that timing rows and the
roofline figures share. It holds published numbers only: measured ceilings live in
``performance.ceilings``; talking to a device (to learn its name) belongs to
``cutile_lab.runtime``.

Conventions:

* Every rate is **dense**. NVIDIA datasheets quote tensor-core rates "with sparsity" (2:4
  structured sparsity); the table stores half of those, which is what a dense GEMM can reach.
* Units are SI: bytes/s (1 TB/s = 1e12 bytes/s) and flop/s (1 TFLOP/s = 1e12 flop/s).
* ``f16`` / ``bf16`` / ``tf32`` / ``fp8`` are tensor-core rates with FP32 accumulation (what a
  GEMM producing f16/bf16 output with f32 accumulators runs at). ``f32`` and ``f64`` are the
  CUDA-core (non-tensor) rates; ``f64_tensor`` is the FP64 tensor-core (DMMA) rate.
* GeForce cards run FP16/FP8 tensor math with FP32 accumulation at half the FP16-accumulate rate;
  the table stores the FP32-accumulate figure and says so in ``notes``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

T = 1e12  # tera
G = 1e9   # giga

#: Precision names ``DevicePeaks.peak_flops`` accepts, in plotting order.
PRECISIONS: tuple[str, ...] = ("f64", "f32", "tf32", "f16", "bf16", "fp8")

_ALIASES: Mapping[str, str] = {
    "float64": "f64", "fp64": "f64", "double": "f64",
    "float32": "f32", "fp32": "f32", "float": "f32",
    "tfloat32": "tf32",
    "float16": "f16", "fp16": "f16", "half": "f16",
    "bfloat16": "bf16",
    "f8": "fp8", "float8": "fp8", "f8e4m3": "fp8", "f8e5m2": "fp8", "e4m3": "fp8", "e5m2": "fp8",
    "float8_e4m3fn": "fp8", "float8_e5m2": "fp8",
}


def canonical_precision(precision: str) -> str:
    """``'float16'`` → ``'f16'`` etc.; also accepts ``'f64_tensor'``. ValueError if unknown."""
    p = precision.strip().lower()
    p = _ALIASES.get(p, p)
    if p in PRECISIONS or p == "f64_tensor":
        return p
    raise ValueError(f"unknown precision {precision!r}; expected one of {', '.join(PRECISIONS)}")


@dataclass(frozen=True)
class DevicePeaks:
    """Published peaks of one GPU model. Rates in flop/s (dense), bandwidth in bytes/s."""

    key: str                      # short stable id, e.g. "H100-SXM"
    name: str                     # human name, e.g. "NVIDIA H100 SXM5 80GB"
    compute_capability: str       # "9.0"
    sm_count: int
    boost_clock_hz: float | None  # max boost clock; None where NVIDIA publishes none
    memory_bytes: float
    mem_bw: float                 # bytes/s
    f64: float | None             # CUDA-core FP64
    f64_tensor: float | None      # FP64 tensor core (DMMA)
    f32: float                    # CUDA-core FP32
    tf32: float | None            # tensor core, dense
    f16: float | None             # tensor core, dense, FP32 accumulate
    bf16: float | None
    fp8: float | None
    source: str                   # title of the document most figures come from
    sources: Mapping[str, str] = field(default_factory=dict)  # per-field exceptions to `source`
    notes: str = ""

    def peak_flops(self, precision: str, *, tensor: bool = True) -> float | None:
        """The compute ceiling for ``precision`` ('f64', 'f32', 'tf32', 'f16', 'bf16', 'fp8').

        For 'f64', ``tensor=True`` (the default) gives the FP64 tensor-core rate where the
        device has one (a DGEMM's ceiling) and ``tensor=False`` the CUDA-core rate. Returns
        None where the device lacks the precision (fp8 on an A100). ValueError on an unknown
        precision name.
        """
        p = canonical_precision(precision)
        if p == "f64":
            if tensor and self.f64_tensor is not None:
                return self.f64_tensor
            return self.f64
        return getattr(self, p)

    def ridge_point(self, precision: str) -> float | None:
        """Arithmetic intensity (flop/byte) where the memory roof meets the compute roof."""
        peak = self.peak_flops(precision)
        return None if peak is None else peak / self.mem_bw

    @property
    def precisions(self) -> tuple[str, ...]:
        """The precisions this device has a published rate for, in ``PRECISIONS`` order."""
        return tuple(p for p in PRECISIONS if self.peak_flops(p) is not None)

    def source_of(self, figure: str) -> str:
        """The document a figure ('mem_bw', 'f16', 'sm_count', ...) comes from."""
        return self.sources.get(figure, self.source)

    def summary(self) -> str:
        """A few lines of text: bandwidth and every rate, in TB/s and TFLOP/s."""
        lines = [f"{self.name}  (sm_{self.compute_capability.replace('.', '')}, "
                 f"{self.sm_count} SMs"
                 + (f", boost {self.boost_clock_hz / 1e6:.0f} MHz" if self.boost_clock_hz else "")
                 + ")",
                 f"  memory     {self.memory_bytes / G:.0f} GB at {self.mem_bw / T:.3g} TB/s"]
        rows = [("f64", self.f64), ("f64 tensor", self.f64_tensor), ("f32", self.f32),
                ("tf32 tensor", self.tf32), ("f16 tensor", self.f16),
                ("bf16 tensor", self.bf16), ("fp8 tensor", self.fp8)]
        for label, value in rows:
            if value is not None:
                lines.append(f"  {label:<11}{value / T:8.1f} TFLOP/s dense")
        lines.append(f"  source: {self.source}")
        if self.notes:
            lines.append(f"  note: {self.notes}")
        return "\n".join(lines)


# --- the table ---------------------------------------------------------------------------------
# Comments give the datasheet's own "with sparsity" figure where it halves to the stored one.

_A100_DS = "NVIDIA A100 Tensor Core GPU datasheet"
_A100_WP = "NVIDIA A100 Tensor Core GPU Architecture whitepaper"
_H100_DS = "NVIDIA H100 Tensor Core GPU datasheet"
_H100_WP = "NVIDIA H100 Tensor Core GPU Architecture whitepaper"
_H200_DS = "NVIDIA H200 Tensor Core GPU datasheet"
_ADA_WP = "NVIDIA Ada GPU Architecture whitepaper"
_RTXBW_WP = "NVIDIA RTX Blackwell GPU Architecture whitepaper"


def _a100(key: str, name: str, memory_gb: float, bw: float) -> DevicePeaks:
    return DevicePeaks(
        key=key, name=name, compute_capability="8.0", sm_count=108, boost_clock_hz=1410e6,
        memory_bytes=memory_gb * G, mem_bw=bw,
        f64=9.7 * T, f64_tensor=19.5 * T, f32=19.5 * T,
        tf32=156 * T,    # 312 with sparsity
        f16=312 * T,     # 624 with sparsity
        bf16=312 * T,    # 624 with sparsity
        fp8=None,
        source=_A100_DS, sources={"sm_count": _A100_WP, "boost_clock_hz": _A100_WP})


def _hopper(key: str, name: str, memory_gb: float, bw: float, source: str,
            boost_clock_hz: float | None, sxm: bool, clock_source: str = _H100_WP) -> DevicePeaks:
    if sxm:   # H100 SXM5 / H200 SXM
        rates = dict(f64=34 * T, f64_tensor=67 * T, f32=67 * T,
                     tf32=494.7 * T,    # 989 with sparsity
                     f16=989.4 * T,     # 1,979 with sparsity
                     bf16=989.4 * T,
                     fp8=1978.9 * T)    # 3,958 with sparsity
    else:     # H100 NVL / H200 NVL (PCIe cards, 132 SMs at a lower clock)
        rates = dict(f64=30 * T, f64_tensor=60 * T, f32=60 * T,
                     tf32=417.5 * T,    # 835 with sparsity
                     f16=835.5 * T,     # 1,671 with sparsity
                     bf16=835.5 * T,
                     fp8=1670.5 * T)    # 3,341 with sparsity
    return DevicePeaks(
        key=key, name=name, compute_capability="9.0", sm_count=132,
        boost_clock_hz=boost_clock_hz, memory_bytes=memory_gb * G, mem_bw=bw, **rates,
        source=source, sources={"sm_count": _H100_WP, "boost_clock_hz": clock_source})


PEAKS: dict[str, DevicePeaks] = {p.key: p for p in [
    _a100("A100-SXM-80GB", "NVIDIA A100 SXM4 80GB", 80, 2039 * G),
    _a100("A100-SXM-40GB", "NVIDIA A100 SXM4 40GB", 40, 1555 * G),
    _a100("A100-PCIE-80GB", "NVIDIA A100 PCIe 80GB", 80, 1935 * G),
    _a100("A100-PCIE-40GB", "NVIDIA A100 PCIe 40GB", 40, 1555 * G),
    _hopper("H100-SXM", "NVIDIA H100 SXM5 80GB", 80, 3.35 * T, _H100_DS, 1980e6, sxm=True),
    DevicePeaks(
        key="H100-PCIE", name="NVIDIA H100 PCIe 80GB", compute_capability="9.0", sm_count=114,
        boost_clock_hz=1755e6, memory_bytes=80 * G, mem_bw=2.0 * T,
        f64=26 * T, f64_tensor=51 * T, f32=51 * T,
        tf32=378 * T,     # 756 with sparsity
        f16=756 * T,      # 1,513 with sparsity
        bf16=756 * T,
        fp8=1513 * T,     # 3,026 with sparsity
        source=_H100_DS, sources={"sm_count": _H100_WP, "boost_clock_hz": _H100_WP}),
    _hopper("H100-NVL", "NVIDIA H100 NVL 94GB", 94, 3.9 * T, _H100_DS, 1785e6, sxm=False,
            clock_source="NVIDIA H100 NVL product brief"),
    _hopper("H200-SXM", "NVIDIA H200 SXM 141GB", 141, 4.8 * T, _H200_DS, 1980e6, sxm=True),
    _hopper("H200-NVL", "NVIDIA H200 NVL 141GB", 141, 4.8 * T, _H200_DS, None, sxm=False),
    DevicePeaks(
        key="B200", name="NVIDIA B200 (HGX, 1000 W)", compute_capability="10.0", sm_count=148,
        boost_clock_hz=1965e6, memory_bytes=180 * G, mem_bw=7.7 * T,
        f64=37 * T, f64_tensor=37 * T, f32=75 * T,
        tf32=1100 * T,    # 2.2 PFLOP/s with sparsity
        f16=2250 * T,     # 4.5 PFLOP/s with sparsity
        bf16=2250 * T,
        fp8=4500 * T,     # 9 PFLOP/s with sparsity
        source="NVIDIA HGX B200 technical specifications (per-GPU figures)",
        sources={"sm_count": "NVIDIA Blackwell Architecture Technical Brief",
                 "boost_clock_hz": "driver-reported maximum SM clock (not in the datasheet)"},
        notes="HGX B200 per-GPU figures at 1000 W; the DGX B200 datasheet quotes 8 TB/s and "
              "192 GB for earlier boards. The B200 in a GB200 runs higher (up to 1200 W)."),
    DevicePeaks(
        key="L40S", name="NVIDIA L40S 48GB", compute_capability="8.9", sm_count=142,
        boost_clock_hz=2520e6, memory_bytes=48 * G, mem_bw=864 * G,
        f64=91.6 * T / 64, f64_tensor=None, f32=91.6 * T,
        tf32=183 * T,     # 366 with sparsity
        f16=362.05 * T,   # 733 with sparsity (the datasheet prints 362.05 dense, not 366.5)
        bf16=362.05 * T,
        fp8=733 * T,      # 1,466 with sparsity
        source="NVIDIA L40S GPU datasheet",
        sources={"f64": f"1/64 of the FP32 rate ({_ADA_WP})", "sm_count": _ADA_WP,
                 "boost_clock_hz": "NVIDIA L40S product brief"}),
    DevicePeaks(
        key="RTX-4090", name="NVIDIA GeForce RTX 4090", compute_capability="8.9", sm_count=128,
        boost_clock_hz=2520e6, memory_bytes=24 * G, mem_bw=1008 * G,
        f64=1.29 * T, f64_tensor=None, f32=82.6 * T,
        tf32=82.6 * T,    # 165.2 with sparsity
        f16=165.2 * T,    # FP32 accumulate; 330.3 with FP16 accumulate
        bf16=165.2 * T,
        fp8=330.3 * T,    # FP32 accumulate; 660.6 with FP16 accumulate
        source=_ADA_WP,
        notes="GeForce: f16/bf16/fp8 tensor rates are with FP32 accumulation, half the "
              "FP16-accumulate rate."),
    DevicePeaks(
        key="RTX-5090", name="NVIDIA GeForce RTX 5090", compute_capability="12.0", sm_count=170,
        boost_clock_hz=2407e6, memory_bytes=32 * G, mem_bw=1792 * G,
        f64=104.8 * T / 64, f64_tensor=None, f32=104.8 * T,
        tf32=104.8 * T,   # 209.5 with sparsity
        f16=209.5 * T,    # FP32 accumulate; 419 with FP16 accumulate (838 sparse)
        bf16=209.5 * T,
        fp8=419 * T,      # FP32 accumulate; 838 with FP16 accumulate
        source=_RTXBW_WP,
        sources={"f64": f"1/64 of the FP32 rate ({_RTXBW_WP})"},
        notes="GeForce: f16/bf16/fp8 tensor rates are with FP32 accumulation, half the "
              "FP16-accumulate rate."),
]}


# --- matching driver names ---------------------------------------------------------------------
# Names as the driver reports them (cudaGetDeviceProperties().name / nvidia-smi), normalized by
# `_normalize`. Matches are whole-name, so variants with other specs ("RTX 4090 D", "GH200",
# "H100 ... Laptop") do not silently take a sibling's numbers.
_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"a100 sxm4? 80gb", "A100-SXM-80GB"),
    (r"a100 sxm4? 40gb", "A100-SXM-40GB"),
    (r"a100 (80gb pcie|pcie 80gb)", "A100-PCIE-80GB"),
    (r"a100 (40gb pcie|pcie 40gb)", "A100-PCIE-40GB"),
    (r"h100 (80gb hbm3|sxm5? 80gb|sxm5?)", "H100-SXM"),
    (r"h100 (80gb )?pcie( 80gb)?", "H100-PCIE"),
    (r"h100 nvl( 94gb)?", "H100-NVL"),
    (r"h200( sxm)?( 141gb)?", "H200-SXM"),
    (r"h200 nvl( 141gb)?", "H200-NVL"),
    (r"b200", "B200"),
    (r"l40s", "L40S"),
    (r"rtx 4090", "RTX-4090"),
    (r"rtx 5090", "RTX-5090"),
)


def _normalize(name: str) -> str:
    s = re.sub(r"[-_\s]+", " ", name.strip().lower())
    s = re.sub(r"^nvidia ", "", s)
    s = re.sub(r"^geforce ", "", s)
    return s


def lookup_device(name: str) -> DevicePeaks | None:
    """The peaks of the GPU the driver calls ``name`` ("NVIDIA H100 80GB HBM3"), or None.

    Also accepts the table's own keys ("H100-SXM") and names ("NVIDIA H100 SXM5 80GB").
    Unknown models — and variants whose specs differ from a known model — give None.
    """
    if name in PEAKS:
        return PEAKS[name]
    by_name = {_normalize(p.name): p for p in PEAKS.values()}
    by_key = {_normalize(k): p for k, p in PEAKS.items()}
    s = _normalize(name)
    if s in by_name:
        return by_name[s]
    if s in by_key:
        return by_key[s]
    for pattern, key in _PATTERNS:
        if re.fullmatch(pattern, s):
            return PEAKS[key]
    return None


# --- the roof a measurement is judged against (arithmetic only: no matplotlib) ------------------

def roof_precision(precision: str) -> str | None:
    """The precision whose roof a measurement in ``precision`` is judged against (None: unknown)."""
    try:
        p = canonical_precision(precision)
    except ValueError:
        return None
    return "f64" if p == "f64_tensor" else p


def attainable_flops(intensity: float, mem_bw: float, peak: float | None) -> float:
    """The roof at ``intensity`` (flop/byte): ``min(peak, intensity * mem_bw)``."""
    mem_roof = intensity * mem_bw
    return mem_roof if peak is None else min(peak, mem_roof)


def percent_of_roof(measurement, peaks: DevicePeaks | None) -> float | None:
    """How close ``measurement`` comes to the datasheet roof at its own intensity, in percent.

    The roof is ``min(peak_flops(precision), intensity * mem_bw)``. Where the memory roof is
    the lower one this equals achieved / datasheet bandwidth, so kernels without flops (copies)
    get a meaningful figure too. None without peaks or without counted work; a precision the device has no rate for is
    judged against the memory roof alone.
    """
    if peaks is None or measurement.seconds <= 0 or not (measurement.bytes or measurement.flops):
        return None
    p = roof_precision(measurement.precision)
    peak = peaks.peak_flops(p) if p else None
    if peak is None or measurement.intensity * peaks.mem_bw <= peak:
        return 100.0 * measurement.bandwidth / peaks.mem_bw
    return 100.0 * measurement.flop_rate / peak
