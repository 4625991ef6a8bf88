"""The result of a compile: the cubin and everything the report shows about it.

A ``CompiledKernel`` is plain data (it is also what the disk cache stores); the runtime reads
``symbol``, ``cubin`` and ``params`` to launch it, the notebook layer reads the rest.
"""
from __future__ import annotations

from dataclasses import dataclass, field, asdict

from cutile_lab.diagnostics import Diagnostic


@dataclass(frozen=True)
class LaunchParam:
    """One kernel parameter as the calling convention passes it (constants are baked in)."""

    name: str
    kind: str                # 'array' (pointer, shape..., strides...) or 'scalar'
    dtype: str
    ndim: int = 0
    index_bits: int = 32


@dataclass
class CompiledKernel:
    name: str
    symbol: str
    arch: str
    cubin: bytes
    bytecode: bytes
    tileir: str
    tileir_line_map: list[tuple[int, int]]
    lowered_source: str
    params: list[LaunchParam]
    consts: dict[str, int]
    resources: dict
    remarks: list[dict] = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    cache: str = "miss"                  # 'miss', 'memory' or 'disk'
    toolchain_version: str | None = None
    key: str = ""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    _sass: str | None = None

    @property
    def max_threads_per_block(self) -> int | None:
        return self.resources.get("max_threads_per_block")

    @property
    def sass(self) -> str | None:
        """SASS from nvdisasm/cuobjdump (the ``nvidia-cuda-nvdisasm`` wheel is a dependency),
        or None without a disassembler. Disassembled on first use and kept in the compile
        cache beside the cubin, so a cached compile has it at once."""
        if self._sass is None:
            from cutile_lab.compiling.toolchain import disassemble_sass
            text = disassemble_sass(self.cubin) or ""
            self._sass = text
            if text and self.key:
                from cutile_lab.compiling.cache import default_cache
                try:
                    default_cache().add_blobs(self.key, {"sass": text.encode("utf-8")})
                except Exception:     # a cache must not break a report
                    pass
        return self._sass or None

    def metadata(self) -> dict:
        """JSON-able fields, for the disk cache (blobs are stored beside them)."""
        d = {k: v for k, v in asdict(self).items()
             if k not in ("cubin", "bytecode", "diagnostics", "_sass", "timings", "cache")}
        d["build_timings"] = self.timings
        return d

    @classmethod
    def from_cache(cls, meta: dict, blobs: dict[str, bytes]) -> "CompiledKernel":
        fields_ = {k: v for k, v in meta.items() if k in cls.__dataclass_fields__}
        fields_["params"] = [LaunchParam(**p) for p in meta["params"]]
        fields_["tileir_line_map"] = [tuple(x) for x in meta["tileir_line_map"]]
        if "sass" in blobs:
            fields_["_sass"] = blobs["sass"].decode("utf-8", "replace")
        return cls(cubin=blobs["cubin"], bytecode=blobs["bytecode"], **fields_)

    def summary(self) -> str:
        r = self.resources
        t = self.timings
        return (f"{self.name} [{self.arch}] {', '.join(f'{k}={v}' for k, v in self.consts.items())}"
                f" — registers {r.get('registers')}, shared {r.get('shared_bytes')} B, "
                f"local {r.get('local_bytes')} B, threads/block {r.get('max_threads_per_block')};"
                f" cache {self.cache}, {t.get('total', 0) * 1e3:.1f} ms")
