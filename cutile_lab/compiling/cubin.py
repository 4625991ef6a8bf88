"""Read a kernel's resource usage out of a cubin, in pure Python, without a GPU or any tool.

Owns: parsing NVIDIA CUDA ELF files (``e_machine == EM_CUDA``) far enough to report, per kernel,
registers, static shared memory, local memory (stack frame, which is where spills go), the
thread-block size the compiler was told about, the register cap and the code size, plus the
target architecture from the ELF header. It must not run tools, load the cubin on a device or
guess: a field the cubin does not record is ``None``.

Where things live (checked against cubins from tileiras 13.4 for sm_80, sm_90, sm_100, sm_120):

* arch: ``e_flags``. With ELF ABI version 8 and later (CUDA 13 cubins, every architecture)
  the SM number is bits 8..15 (``0x..005a04`` is sm_90); older cubins (ABI version 7, CUDA 12
  and before) keep it in the low byte (``0x5a055a``; from published e_flags tables).
* kernels: ``.text.<name>`` sections whose symbol (``sh_info`` low 24 bits) is a CUDA entry
  point (``st_other & STO_CUDA_ENTRY``) or which have a ``.nv.info.<name>`` section.
* registers: the ``EIATTR_REGCOUNT`` record for the kernel's symbol in the module-wide
  ``.nv.info`` section; older cubins also put it in ``sh_info >> 24`` of ``.text.<name>``.
* local memory: ``EIATTR_FRAME_SIZE`` for the kernel's symbol (bytes per thread; non-zero
  means spills or local arrays); ``EIATTR_MIN_STACK_SIZE`` is the stack including callees.
* shared memory: the ``NOBITS`` section ``.nv.shared.<name>``. On sm_90 and later (cubins
  with a ``.nv.shared.reserved.*`` section) that section also holds the 1 KiB the driver
  reserves per block (``.nv.reservedSmem.cap`` where recorded); it is left out, so
  ``shared_bytes`` equals what ``ptxas -v`` prints and ``cuFuncGetAttribute`` returns (checked
  on an H100). The module-wide reserved sections are reported as ``reserved_shared_bytes``.
* barriers: ``EIATTR_NUM_BARRIERS`` in ``.nv.info.<name>``.
* block size: ``EIATTR_REQNTID`` (the block size the kernel was compiled for; tile kernels
  always have one) or else ``EIATTR_MAX_THREADS`` (an upper bound), both three 32-bit
  dimensions, in ``.nv.info.<name>``. Note the driver's own ``max_threads_per_block`` is a
  different number (the register-file limit).

``.nv.info`` records are: 1 byte format, 1 byte attribute, then for ``EIFMT_SVAL`` (4) a
16-bit size and that many payload bytes, for ``EIFMT_HVAL`` (3) a 16-bit value, for
``EIFMT_BVAL`` (2) one byte value and one pad byte, for ``EIFMT_NVAL`` (1) two pad bytes.
The cubin records no spill *instruction* counts (ptxas prints those itself), so
``spill_stores`` / ``spill_loads`` are ``None`` unless a future format adds them.
"""
from __future__ import annotations

import struct
from dataclasses import asdict, dataclass
from typing import Any, Iterator

__all__ = ["Resources", "read_resources", "cubin_arch", "is_nvidia_elf", "EM_CUDA"]

EM_CUDA = 190
STO_CUDA_ENTRY = 0x10
SHT_SYMTAB = 2
SHT_NOBITS = 8

EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL, EIFMT_SVAL = 0x01, 0x02, 0x03, 0x04

EIATTR_MAX_THREADS = 0x05
EIATTR_REQNTID = 0x10
EIATTR_FRAME_SIZE = 0x11
EIATTR_MIN_STACK_SIZE = 0x12
EIATTR_MAXREG_COUNT = 0x1B
EIATTR_CRS_STACK_SIZE = 0x1E
EIATTR_MAX_STACK_SIZE = 0x23
EIATTR_REGCOUNT = 0x2F
EIATTR_NUM_BARRIERS = 0x4C

_SYSTEM_SHARED_RESERVE = 1024  # bytes per block the driver keeps for itself on sm_90+

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")


@dataclass(frozen=True)
class Resources:
    """What one kernel in a cubin uses. ``None`` means the cubin does not say."""

    kernel: str
    registers: int | None
    shared_bytes: int | None
    local_bytes: int | None
    max_threads_per_block: int | None
    arch: str | None
    elf_ok: bool
    spill_stores: int | None = None
    spill_loads: int | None = None
    reserved_shared_bytes: int | None = None
    stack_bytes: int | None = None
    max_registers: int | None = None
    code_bytes: int | None = None
    barriers: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Resources":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


class _Malformed(Exception):
    pass


@dataclass
class _Section:
    index: int
    name: str
    type: int
    offset: int
    size: int
    link: int
    info: int


def is_nvidia_elf(cubin: bytes) -> bool:
    """True if ``cubin`` is a 64-bit little-endian ELF file for ``EM_CUDA``."""
    if len(cubin) < _EHDR.size or cubin[:4] != b"\x7fELF":
        return False
    if cubin[4] != 2 or cubin[5] != 1:  # ELFCLASS64, ELFDATA2LSB
        return False
    return struct.unpack_from("<H", cubin, 18)[0] == EM_CUDA


def cubin_arch(cubin: bytes) -> str:
    """The SM architecture a cubin was built for, such as ``"sm_90"``. Raises ``ValueError``."""
    if not is_nvidia_elf(cubin):
        raise ValueError("not an NVIDIA cubin (64-bit little-endian ELF with e_machine EM_CUDA)")
    abi_version = cubin[8]
    e_flags = _EHDR.unpack_from(cubin, 0)[7]
    sm = (e_flags >> 8) & 0xFF if abi_version >= 8 else e_flags & 0xFF
    if sm == 0:
        raise ValueError(f"cannot read the SM architecture from e_flags {e_flags:#x}")
    return f"sm_{sm}"


def read_resources(cubin: bytes) -> list[Resources]:
    """Resource usage of every kernel (entry point) in ``cubin``, in section order.

    Raises ``ValueError`` when ``cubin`` is not an NVIDIA ELF file or its section table is
    unreadable. A kernel whose ``.nv.info`` records (or the symbol table) are damaged is still
    reported, with what could be read and ``elf_ok=False``.
    """
    if not is_nvidia_elf(cubin):
        raise ValueError("not an NVIDIA cubin (64-bit little-endian ELF with e_machine EM_CUDA)")
    try:
        return _read_resources(bytes(cubin))
    except (_Malformed, struct.error, IndexError) as e:
        raise ValueError(f"damaged cubin: {e}") from None


def _read_resources(cubin: bytes) -> list[Resources]:
    try:
        arch: str | None = cubin_arch(cubin)
    except ValueError:
        arch = None
    module = _module_info(cubin)
    result = []
    for sec in module.sections:
        if sec.name.startswith(".text."):
            res = _kernel_resources(cubin, sec, module, arch)
            if res is not None:
                result.append(res)
    return result


@dataclass
class _ModuleInfo:
    """What the module as a whole records about its kernels."""

    sections: list[_Section]
    by_name: dict[str, _Section]
    symbols: list[tuple[str, int, int]]      # (name, st_other, value) by symbol index
    per_symbol: dict[int, dict[int, int]]    # symbol index -> {EIATTR: value} of .nv.info
    elf_ok: bool                             # False where a part could not be read
    reserved_shared: int | None
    system_reserve: int


def _module_info(cubin: bytes) -> _ModuleInfo:
    sections = _sections(cubin)
    phoff, phentsize, phnum = struct.unpack_from("<Q", cubin, 32)[0], *struct.unpack_from(
        "<HH", cubin, 54)
    elf_ok = phoff + phentsize * phnum <= len(cubin)  # a cut-off file loses its program headers
    by_name = {s.name: s for s in sections}
    symbols: list[tuple[str, int, int]] = []
    symtab = next((s for s in sections if s.type == SHT_SYMTAB), None)
    if symtab is not None:
        try:
            symbols = _symbols(cubin, symtab, sections)
        except (_Malformed, struct.error):
            elf_ok = False

    # Module-wide .nv.info: per-symbol records (payload: u32 symbol index, u32 value).
    per_symbol: dict[int, dict[int, int]] = {}
    if ".nv.info" in by_name:
        try:
            for _fmt, attr, payload in _records(cubin, by_name[".nv.info"]):
                if isinstance(payload, bytes) and len(payload) >= 8:
                    sym, value = struct.unpack_from("<II", payload, 0)
                    per_symbol.setdefault(sym, {})[attr] = value
        except (_Malformed, struct.error):
            elf_ok = False

    reserved = [s.size for s in sections if s.name.startswith(".nv.shared.reserved.")]
    reserved_shared = sum(reserved) if reserved else None
    # Where the module has reserved shared memory (sm_90+), each kernel's shared section also
    # starts with the per-block system reserve (1 KiB; ``.nv.reservedSmem.cap`` where recorded),
    # which ptxas -v and cuFuncGetAttribute leave out. We leave it out too.
    system_reserve = 0
    if reserved:
        caps = [value for sym_name, _other, value in symbols if sym_name == ".nv.reservedSmem.cap"]
        system_reserve = caps[0] if caps else _SYSTEM_SHARED_RESERVE
    return _ModuleInfo(sections, by_name, symbols, per_symbol, elf_ok, reserved_shared,
                       system_reserve)


def _kernel_resources(cubin: bytes, sec: _Section, module: _ModuleInfo,
                      arch: str | None) -> Resources | None:
    """The resources of the kernel whose code is the ``.text.`` section ``sec`` (None: the
    section is not a kernel's: no entry symbol and no ``.nv.info.`` of its own)."""
    symbols = module.symbols
    name = sec.name[len(".text."):]
    sym_index = sec.info & 0xFFFFFF
    info_sec = module.by_name.get(".nv.info." + name)
    is_entry = sym_index < len(symbols) and bool(symbols[sym_index][1] & STO_CUDA_ENTRY)
    if not (is_entry or info_sec is not None):
        return None
    if sym_index < len(symbols) and symbols[sym_index][0]:
        name = symbols[sym_index][0]
    kernel_ok = module.elf_ok

    attrs: dict[int, Any] = {}
    if info_sec is not None:
        try:
            for _fmt, attr, payload in _records(cubin, info_sec):
                attrs.setdefault(attr, payload)
        except (_Malformed, struct.error):
            kernel_ok = False

    mod = module.per_symbol.get(sym_index, {})
    registers = mod.get(EIATTR_REGCOUNT)
    if registers is None and sec.info >> 24:
        registers = sec.info >> 24

    shared_sec = module.by_name.get(".nv.shared." + sec.name[len(".text."):])
    shared = 0  # no section: no static shared memory
    if shared_sec is not None:
        reserve = module.system_reserve
        shared = shared_sec.size - reserve if shared_sec.size >= reserve else shared_sec.size

    threads = _threads(attrs.get(EIATTR_REQNTID)) or _threads(attrs.get(EIATTR_MAX_THREADS))
    maxreg = attrs.get(EIATTR_MAXREG_COUNT)
    return Resources(
        kernel=name,
        registers=registers,
        shared_bytes=shared,
        local_bytes=mod.get(EIATTR_FRAME_SIZE),
        max_threads_per_block=threads,
        arch=arch,
        elf_ok=kernel_ok,
        reserved_shared_bytes=module.reserved_shared,
        stack_bytes=mod.get(EIATTR_MIN_STACK_SIZE),
        max_registers=_int(maxreg),
        code_bytes=sec.size,
        barriers=_int(attrs.get(EIATTR_NUM_BARRIERS)),
    )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) else None


def _threads(payload: Any) -> int | None:
    if not isinstance(payload, bytes) or len(payload) < 12:
        return None
    x, y, z = struct.unpack_from("<III", payload, 0)
    return x * y * z if x and y and z else None


def _sections(data: bytes) -> list[_Section]:
    fields = _EHDR.unpack_from(data, 0)
    shoff, shentsize, shnum, shstrndx = fields[6], fields[11], fields[12], fields[13]
    if shoff == 0 or shnum == 0:
        return []
    if shentsize < _SHDR.size or shoff + shnum * shentsize > len(data) or shstrndx >= shnum:
        raise _Malformed("section header table out of range")
    raw = [_SHDR.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
    strtab = raw[shstrndx]
    str_off, str_size = strtab[4], strtab[5]
    if str_off + str_size > len(data):
        raise _Malformed("section name table out of range")
    out = []
    for i, (sh_name, sh_type, _flags, _addr, off, size, link, info, _align, _ent) in enumerate(raw):
        name = _cstr(data, str_off + sh_name, str_off + str_size)
        if sh_type != SHT_NOBITS and off + size > len(data):
            raise _Malformed(f"section {name!r} out of range")
        out.append(_Section(i, name, sh_type, off, size, link, info))
    return out


def _symbols(data: bytes, symtab: _Section, sections: list[_Section]) -> list[tuple[str, int, int]]:
    if symtab.link >= len(sections):
        raise _Malformed("symbol string table index out of range")
    strtab = sections[symtab.link]
    out = []
    for i in range(symtab.size // _SYM.size):
        st_name, _info, st_other, _shndx, value, _size = _SYM.unpack_from(
            data, symtab.offset + i * _SYM.size)
        name = _cstr(data, strtab.offset + st_name, strtab.offset + strtab.size)
        out.append((name, st_other, value))
    return out


def _records(data: bytes, sec: _Section) -> Iterator[tuple[int, int, bytes | int | None]]:
    """``(format, attribute, payload)`` for every record of an ``.nv.info`` section."""
    pos, end = sec.offset, sec.offset + sec.size
    while pos < end:
        if pos + 4 > end:
            raise _Malformed(f"truncated record in {sec.name}")
        fmt, attr = data[pos], data[pos + 1]
        if fmt == EIFMT_SVAL:
            (size,) = struct.unpack_from("<H", data, pos + 2)
            if pos + 4 + size > end:
                raise _Malformed(f"record of {size} bytes overruns {sec.name}")
            yield fmt, attr, bytes(data[pos + 4:pos + 4 + size])
            pos += 4 + size
        elif fmt == EIFMT_HVAL:
            yield fmt, attr, struct.unpack_from("<H", data, pos + 2)[0]
            pos += 4
        elif fmt == EIFMT_BVAL:
            yield fmt, attr, data[pos + 2]
            pos += 4
        elif fmt == EIFMT_NVAL:
            yield fmt, attr, None
            pos += 4
        else:
            raise _Malformed(f"unknown record format {fmt:#x} in {sec.name}")


def _cstr(data: bytes, start: int, limit: int) -> str:
    if start >= limit:
        return ""
    end = data.find(b"\0", start, limit)
    return data[start:end if end >= 0 else limit].decode("utf-8", "replace")
