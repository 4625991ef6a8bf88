"""Reading resources out of cubins: real ones from tileiras, and hand-built ELF files for the
corners real ones do not hit (older header format, damaged records)."""
from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cutile_lab.compiling.cubin import (EM_CUDA, Resources, cubin_arch, is_nvidia_elf,
                                        read_resources)
from cutile_lab.compiling.toolchain import find_toolchain, run_tileiras, toolchain_or_none

needs_toolchain = pytest.mark.skipif(toolchain_or_none() is None, reason="no tileiras")


# ----------------------------------------------------------------------------- a tiny ELF writer

def _sval(attr: int, payload: bytes) -> bytes:
    return bytes([0x04, attr]) + struct.pack("<H", len(payload)) + payload


def _hval(attr: int, value: int) -> bytes:
    return bytes([0x03, attr]) + struct.pack("<H", value)


def build_elf(sections, symbols, *, e_flags=0x6005A04, abi_version=8, machine=EM_CUDA) -> bytes:
    """``sections``: (name, sh_type, data-or-NOBITS-size, sh_info), symbols: (name, st_other).
    Section and symbol indices count from 1 in the order given (.symtab etc. come after)."""
    names = [s[0] for s in sections] + [".shstrtab", ".strtab", ".symtab"]
    shstr = b"\0" + b"".join(n.encode() + b"\0" for n in names)
    strtab = b"\0" + b"".join(n.encode() + b"\0" for n, _ in symbols)
    syms, off = [b"\0" * 24], 1
    for name, other in symbols:
        syms.append(struct.pack("<IBBHQQ", off, 0x12, other, 1, 0, 0))
        off += len(name) + 1
    all_sections = list(sections) + [(".shstrtab", 3, shstr, 0), (".strtab", 3, strtab, 0),
                                     (".symtab", 2, b"".join(syms), 0)]
    body, headers = b"", [b"\0" * 64]
    name_off = 1
    n_user = len(sections)
    for i, (name, sh_type, data, info) in enumerate(all_sections):
        link = n_user + 2 if name == ".symtab" else (n_user + 3 if name.startswith(".nv.info")
                                                     or name.startswith(".text.") else 0)
        offset = 64 + len(body)
        if sh_type == 8:
            size = data
        else:
            size = len(data)
            body += data + b"\0" * (-len(data) % 8)
        headers.append(struct.pack("<IIQQQQIIQQ", name_off, sh_type, 0, 0, offset, size, link,
                                   info, 1, 24 if name == ".symtab" else 0))
        name_off += len(name) + 1
    shoff = 64 + len(body)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0x41, abi_version]) + b"\0" * 7
    header = ident + struct.pack("<HHIQQQIHHHHHH", 2, machine, 1, 0, 0, shoff, e_flags, 64, 56, 0,
                                 64, len(headers), n_user + 1)
    return header + body + b"".join(headers)


def _one_kernel(*, nv_info=b"", module_info=b"", text_info=1, shared=None, extra=(),
                **kw) -> bytes:
    sections = [(".nv.info", 0x70000000, module_info, 0),
                (".nv.info.k", 0x70000000, nv_info, 3),
                (".text.k", 1, b"\0" * 256, text_info)]
    if shared is not None:
        sections.append((".nv.shared.k", 8, shared, 3))
    sections += list(extra)
    return build_elf(sections, [("k", 0x10)], **kw)


# ----------------------------------------------------------------------------- header

@pytest.mark.parametrize("e_flags, abi, arch", [
    (0x6005004, 8, "sm_80"), (0xB005A04, 8, "sm_90"), (0x6006402, 8, "sm_100"),
    (0x6007802, 8, "sm_120"), (0x6007902, 8, "sm_121"),
    (0x500550, 7, "sm_80"), (0x5A055A, 7, "sm_90"), (0x590559, 7, "sm_89"),
])
def test_arch_from_e_flags(e_flags, abi, arch):
    assert cubin_arch(_one_kernel(e_flags=e_flags, abi_version=abi)) == arch


def test_recognises_nvidia_elf_only():
    good = _one_kernel()
    assert is_nvidia_elf(good)
    assert not is_nvidia_elf(b"")
    assert not is_nvidia_elf(b"\x7fELF")
    assert not is_nvidia_elf(_one_kernel(machine=62))  # x86-64
    assert not is_nvidia_elf(b"MZ" + good[2:])
    with pytest.raises(ValueError, match="not an NVIDIA cubin"):
        read_resources(b"definitely not a cubin")
    with pytest.raises(ValueError):
        cubin_arch(b"\x7fELF")


# ----------------------------------------------------------------------------- records

def test_new_style_records():
    module = (_sval(0x2F, struct.pack("<II", 1, 40))       # REGCOUNT sym 1 -> 40
              + _sval(0x2F, struct.pack("<II", 7, 99))     # another function's
              + _sval(0x11, struct.pack("<II", 1, 96))     # FRAME_SIZE
              + _sval(0x12, struct.pack("<II", 1, 128)))   # MIN_STACK_SIZE
    info = (_hval(0x1B, 168) + _sval(0x10, struct.pack("<III", 128, 2, 1))
            + bytes([0x02, 0x4C, 3, 0]) + bytes([0x01, 0x35, 0, 0]))
    [r] = read_resources(_one_kernel(nv_info=info, module_info=module, shared=8192))
    assert r == Resources(kernel="k", registers=40, shared_bytes=8192, local_bytes=96,
                          max_threads_per_block=256, arch="sm_90", elf_ok=True,
                          stack_bytes=128, max_registers=168, code_bytes=256, barriers=3)
    assert Resources.from_dict(r.to_dict()) == r


def test_old_style_register_count_in_sh_info():
    [r] = read_resources(_one_kernel(text_info=(32 << 24) | 1, e_flags=0x5A055A, abi_version=7))
    assert r.registers == 32 and r.arch == "sm_90"


def test_max_threads_when_no_reqntid():
    [r] = read_resources(_one_kernel(nv_info=_sval(0x05, struct.pack("<III", 64, 4, 1))))
    assert r.max_threads_per_block == 256


def test_absent_fields_are_none_not_guesses():
    [r] = read_resources(_one_kernel())
    assert r.registers is None and r.local_bytes is None and r.max_threads_per_block is None
    assert r.spill_stores is None and r.spill_loads is None and r.barriers is None
    assert r.shared_bytes == 0  # no .nv.shared.k section: no static shared memory
    assert r.elf_ok


def test_sm90_system_reserve_is_not_counted_as_the_kernels_shared_memory():
    reserved = [(".nv.shared.reserved.0", 8, 0, 0)]
    [r] = read_resources(_one_kernel(shared=4096 + 1024, extra=reserved))
    assert (r.shared_bytes, r.reserved_shared_bytes) == (4096, 0)


def test_damaged_records_are_flagged_not_fatal():
    overrun = _hval(0x1B, 255) + bytes([0x04, 0x10, 0xFF, 0x00])  # SVAL of 255 bytes: past the end
    [r] = read_resources(_one_kernel(nv_info=overrun))
    assert r.kernel == "k" and not r.elf_ok and r.max_registers == 255
    unknown_format = _hval(0x1B, 255) + bytes([0x09, 0x10, 0, 0])
    [r] = read_resources(_one_kernel(nv_info=unknown_format))
    assert not r.elf_ok


def test_damaged_section_table_is_a_value_error():
    data = _one_kernel()
    shoff = struct.unpack_from("<Q", data, 40)[0]
    with pytest.raises(ValueError, match="damaged"):
        read_resources(data[:shoff + 10])


# ----------------------------------------------------------------------------- real cubins

@needs_toolchain
@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_100", "sm_120"])
def test_real_cubin(arch):
    from tests.compiling.cutile_kernels import add_bytecode
    bytecode, [symbol] = add_bytecode(128)
    cubin = run_tileiras(bytecode, arch).cubin
    assert cubin_arch(cubin) == arch
    [r] = read_resources(cubin)
    assert r.kernel == symbol and r.arch == arch and r.elf_ok
    assert 0 < r.registers <= 255
    assert r.shared_bytes == 0 and r.local_bytes == 0
    assert r.max_threads_per_block and r.max_threads_per_block % 32 == 0
    assert r.code_bytes > 0


@needs_toolchain
def test_real_cubin_with_several_kernels():
    from tests.compiling.cutile_kernels import add_bytecode
    bytecode, symbols = add_bytecode(64, 256, 1024)
    found = {r.kernel: r for r in read_resources(run_tileiras(bytecode, "sm_90").cubin)}
    assert set(found) == set(symbols)
    # bigger tiles need more registers per thread
    regs = [found[s].registers for s in symbols]
    assert regs == sorted(regs) and regs[0] < regs[-1]


@needs_toolchain
def test_real_cubin_with_shared_memory():
    from tests.compiling.cutile_kernels import matmul_bytecode
    bytecode, [symbol] = matmul_bytecode(64, 64, 32)
    [r] = read_resources(run_tileiras(bytecode, "sm_90").cubin)
    # at least one 64x32 and one 32x64 f16 tile are staged in shared memory
    assert r.kernel == symbol and r.shared_bytes >= 2 * 64 * 32 * 2
    assert r.shared_bytes % 1024 == 0 and r.registers > 32


@pytest.fixture(scope="module")
def real_cubin() -> bytes:
    if toolchain_or_none() is None:
        pytest.skip("no tileiras")
    from tests.compiling.cutile_kernels import add_bytecode
    return run_tileiras(add_bytecode(128)[0], "sm_90", toolchain=find_toolchain()).cubin


@needs_toolchain
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_real_cubins_never_crash(real_cubin, data):
    """Flipped bytes or a cut-off file: a result or ValueError, never another exception."""
    blob = bytearray(real_cubin)
    if data.draw(st.booleans()):
        for _ in range(data.draw(st.integers(1, 8))):
            blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
    else:
        del blob[data.draw(st.integers(0, len(blob) - 1)):]
    try:
        result = read_resources(bytes(blob))
    except ValueError:
        return
    assert all(isinstance(r, Resources) for r in result)


@needs_toolchain
def test_a_cut_off_cubin_is_flagged(real_cubin):
    results = read_resources(real_cubin[:-8])  # program headers sit at the end
    assert results and not results[0].elf_ok
