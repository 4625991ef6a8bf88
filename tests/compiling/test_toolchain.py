"""Toolchain discovery and running: real tileiras where installed, fake ones for the edge cases."""
from __future__ import annotations

import importlib.metadata
import inspect
import os
import stat
import sys
from pathlib import Path

import pytest

from cutile_lab.compiling import toolchain as tc_mod
from cutile_lab.compiling.cubin import cubin_arch, is_nvidia_elf
from cutile_lab.compiling.toolchain import (ToolFailure, Toolchain, TileirasError,
                                            disassemble_sass, disassemble_tileir, find_toolchain,
                                            parse_tileiras_errors, run_tileiras,
                                            supported_archs, toolchain_or_none)
from cutile_lab.errors import CompileError, ToolchainError


@pytest.fixture(autouse=True)
def fresh_discovery(monkeypatch):
    """Each test finds the toolchain again, in its own environment."""
    monkeypatch.delenv("CUTILE_LAB_TILEIRAS", raising=False)
    find_toolchain.cache_clear()
    yield
    find_toolchain.cache_clear()


def _real_toolchain() -> Toolchain | None:
    find_toolchain.cache_clear()
    return toolchain_or_none()


needs_toolchain = pytest.mark.skipif(_real_toolchain() is None,
                                     reason="no tileiras (pip install \"cuda-tile[tileiras]\")")


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _fake_tileiras(tmp_path: Path, compile_body: str) -> Path:
    """A tileiras that answers --version and runs ``compile_body`` otherwise."""
    bin_dir = tmp_path / "fakecuda" / "bin"
    bin_dir.mkdir(parents=True)
    return _script(bin_dir / "tileiras", f"""
case "$1" in
  --version) echo "Cuda compilation tools, release 13.4, V13.4.7"; exit 0;;
  --help) echo "  --gpu-name=<value>"; echo "    =sm_90   -   SM 90"; exit 0;;
esac
{compile_body}
""")


# ----------------------------------------------------------------------------- discovery

@needs_toolchain
def test_finds_a_toolchain_with_a_version():
    tc = find_toolchain()
    assert tc.tileiras.is_file()
    assert tc.source in ("env", "wheel", "PATH", "CUDA_HOME")
    assert tc.version.count(".") == 2 and tc.version_tuple >= (13, 1)
    assert tc.bin_dir == tc.tileiras.parent
    assert find_toolchain() is tc  # cached


def test_env_var_wins(tmp_path, monkeypatch):
    fake = _fake_tileiras(tmp_path, "exit 1")
    monkeypatch.setenv("CUTILE_LAB_TILEIRAS", str(fake))
    tc = find_toolchain()
    assert (tc.source, tc.version, tc.tileiras) == ("env", "13.4.7", fake.resolve())
    assert tc.tileirdisasm is None


def test_env_var_may_name_the_folder(tmp_path, monkeypatch):
    fake = _fake_tileiras(tmp_path, "exit 1")
    monkeypatch.setenv("CUTILE_LAB_TILEIRAS", str(fake.parent))
    assert find_toolchain().tileiras == fake.resolve()


def test_env_var_pointing_nowhere_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("CUTILE_LAB_TILEIRAS", str(tmp_path / "nope"))
    with pytest.raises(ToolchainError, match="CUTILE_LAB_TILEIRAS"):
        find_toolchain()
    assert toolchain_or_none() is None


def _no_wheels(monkeypatch, versions: dict[str, str] | None = None):
    real = importlib.metadata.version

    def fake_version(name):
        if name in tc_mod.WHEEL_PACKAGES:
            if versions and name in versions:
                return versions[name]
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)
    monkeypatch.setattr(importlib.metadata, "version", fake_version)


def test_missing_toolchain_says_how_to_install(tmp_path, monkeypatch):
    _no_wheels(monkeypatch)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    with pytest.raises(ToolchainError) as info:
        find_toolchain()
    text = str(info.value)
    assert "tileiras" in text and "not found" in text
    assert 'pip install "cuda-tile[tileiras]==1.7.0"' in text
    assert "CUTILE_LAB_TILEIRAS" in text
    assert toolchain_or_none() is None


def test_mismatched_wheels_are_named(monkeypatch):
    _no_wheels(monkeypatch, {"nvidia-cuda-tileiras": "13.4.92", "nvidia-cuda-nvcc": "13.2.51",
                             "nvidia-nvvm": "13.4.92"})
    with pytest.raises(ToolchainError) as info:
        find_toolchain()
    assert "nvidia-cuda-tileiras==13.4.92" in str(info.value)
    assert "nvidia-cuda-nvcc==13.2.51" in str(info.value)


def test_falls_back_to_path_then_cuda_home(tmp_path, monkeypatch):
    _no_wheels(monkeypatch)
    fake = _fake_tileiras(tmp_path, "exit 1")
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("PATH", str(fake.parent))
    assert find_toolchain().source == "PATH"
    find_toolchain.cache_clear()
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_HOME", str(fake.parent.parent))
    assert find_toolchain().source == "CUDA_HOME"


# ----------------------------------------------------------------------------- running

@needs_toolchain
@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_100", "sm_120"])
def test_compiles_bytecode_to_a_cubin(arch):
    from tests.compiling.cutile_kernels import add_bytecode
    bytecode, [symbol] = add_bytecode(128)
    result = run_tileiras(bytecode, arch)
    assert is_nvidia_elf(result.cubin)
    assert cubin_arch(result.cubin) == arch
    assert symbol.encode() in result.cubin
    assert result.seconds > 0
    if find_toolchain().supports_remarks:
        assert "Remark" in result.remarks_yaml


@needs_toolchain
def test_remarks_can_be_turned_off():
    from tests.compiling.cutile_kernels import add_bytecode
    result = run_tileiras(add_bytecode(128)[0], "sm_90", remarks=False, lineinfo=False, opt_level=1)
    assert result.remarks_yaml == "" and is_nvidia_elf(result.cubin)


@needs_toolchain
@pytest.mark.parametrize("cuda_home", ["missing", "broken"])
def test_an_old_or_broken_cuda_home_does_not_break_tileiras(tmp_path, monkeypatch, cuda_home):
    """tileiras looks for ptxas under $CUDA_HOME; the lab must never let it."""
    if cuda_home == "missing":
        home = tmp_path / "nonexistent"
    else:
        home = tmp_path / "cuda-13.0"
        for tool in ("bin/ptxas", "bin/nvdisasm", "nvvm/bin/cicc"):
            (home / tool).parent.mkdir(parents=True, exist_ok=True)
            _script(home / tool, "echo 'this is not the ptxas you want' >&2; exit 1\n")
        monkeypatch.setenv("PATH", f"{home / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("CUDA_HOME", str(home))
    monkeypatch.setenv("CUDA_PATH", str(home))
    from tests.compiling.cutile_kernels import add_bytecode
    result = run_tileiras(add_bytecode(128)[0], "sm_90")
    assert is_nvidia_elf(result.cubin)


def test_tools_run_in_a_clean_environment(tmp_path, monkeypatch):
    fake = _fake_tileiras(tmp_path, """
out=""
while [ $# -gt 0 ]; do [ "$1" = "-o" ] && out="$2"; shift; done
printf 'CUDA_HOME=%s\\nCUDA_PATH=%s\\nPATH=%s\\n' "${CUDA_HOME-unset}" "${CUDA_PATH-unset}" "$PATH" > "$out"
""")
    monkeypatch.setenv("CUTILE_LAB_TILEIRAS", str(fake))
    monkeypatch.setenv("CUDA_HOME", "/opt/cuda-13.0")
    monkeypatch.setenv("CUDA_PATH", "/opt/cuda-13.0")
    env = dict(line.split("=", 1) for line in
               run_tileiras(b"bytecode", "sm_90").cubin.decode().splitlines())
    assert env["CUDA_HOME"] == "unset" and env["CUDA_PATH"] == "unset"
    assert env["PATH"].split(os.pathsep)[0] == str(fake.parent.resolve())


@needs_toolchain
def test_compiler_errors_carry_the_message_and_the_source_location():
    from tests.compiling.cutile_kernels import fp8_bytecode, to_fp8
    with pytest.raises(CompileError) as info:
        run_tileiras(fp8_bytecode()[0], "sm_80")
    err = info.value
    assert isinstance(err, TileirasError) and err.stage == "tileiras"
    assert "unsupported type" in err.message and "sm_80" in err.message
    assert "return code" not in str(err) and "failed to compile Tile IR program" not in err.message
    assert "unsupported type" in err.compiler_output
    file, line, col = err.location
    assert Path(file).name == "cutile_kernels.py"
    lines, first = inspect.getsourcelines(to_fp8._annotated_function.pyfunc
                                          if hasattr(to_fp8, "_annotated_function") else to_fp8)
    assert first - 1 <= line <= first + len(lines)


@needs_toolchain
def test_garbage_bytecode_is_a_readable_error():
    with pytest.raises(CompileError) as info:
        run_tileiras(b"\x7fTileIR\x00" + b"\x00" * 40, "sm_90")
    assert "bytecode" in info.value.message.lower() or "offset" in info.value.message
    assert info.value.location is None


@needs_toolchain
def test_unknown_target_lists_the_known_ones():
    from tests.compiling.cutile_kernels import add_bytecode
    with pytest.raises(CompileError) as info:
        run_tileiras(add_bytecode(128)[0], "sm_75")
    assert "sm_75" in info.value.message and "sm_90" in (info.value.help or "")


def test_fake_compiler_error_with_location(tmp_path, monkeypatch):
    fake = _fake_tileiras(tmp_path, """
echo 'loc("kernel_cell.py":3:7): error: tile shape (100) must be a power of two' >&2
echo 'error: failed to compile Tile IR program' >&2
exit 5
""")
    monkeypatch.setenv("CUTILE_LAB_TILEIRAS", str(fake))
    with pytest.raises(CompileError) as info:
        run_tileiras(b"x", "sm_90")
    err = info.value
    assert err.message == "tileiras: tile shape (100) must be a power of two"
    assert err.location == ("kernel_cell.py", 3, 7)
    assert err.returncode == 5 and err.stage == "tileiras"


def test_a_compiler_that_hangs_is_stopped_and_said_to_hang(tmp_path, monkeypatch):
    fake = _fake_tileiras(tmp_path, "echo 'optimizing kernel' >&2\nsleep 5\n")
    monkeypatch.setenv("CUTILE_LAB_TILEIRAS", str(fake))
    with pytest.raises(ToolFailure) as info:
        run_tileiras(b"x", "sm_90", timeout=0.3)
    err = info.value
    assert not isinstance(err, CompileError) and isinstance(err, ToolchainError)
    assert err.message.startswith("tileiras hung: it was stopped after 0.3 s")
    assert err.returncode is None and "not of your kernel" in err.help
    assert "smaller tiles" not in str(err)


def test_a_compiler_that_dies_silently_is_a_toolchain_error(tmp_path, monkeypatch):
    monkeypatch.setenv("CUTILE_LAB_TILEIRAS", str(_fake_tileiras(tmp_path, "exit 7\n")))
    with pytest.raises(ToolFailure) as info:
        run_tileiras(b"x", "sm_90")
    err = info.value
    assert not isinstance(err, CompileError)
    assert err.message == "tileiras crashed (exit status 7); it printed nothing"
    assert (err.tool, err.returncode) == ("tileiras", 7)


def test_a_compiler_killed_by_a_signal_names_it_and_its_last_lines(tmp_path, monkeypatch):
    body = "".join(f"echo 'pass {i}' >&2\n" for i in range(12)) + "kill -SEGV $$\n"
    monkeypatch.setenv("CUTILE_LAB_TILEIRAS", str(_fake_tileiras(tmp_path, body)))
    with pytest.raises(ToolFailure) as info:
        run_tileiras(b"x", "sm_90")
    err = info.value
    assert err.message.startswith("tileiras crashed (killed by SIGSEGV)")
    assert "pass 11" in err.message and "pass 4" in err.message and "pass 3" not in err.message
    assert "pass 0" in err.output


def test_a_crash_report_is_the_toolchains_even_with_an_error_line(tmp_path, monkeypatch):
    fake = _fake_tileiras(tmp_path, """
echo 'loc("k.py":3:7): error: something went wrong' >&2
echo 'PLEASE submit a bug report to the developers' >&2
echo 'Stack dump:' >&2
exit 134
""")
    monkeypatch.setenv("CUTILE_LAB_TILEIRAS", str(fake))
    with pytest.raises(ToolFailure) as info:
        run_tileiras(b"x", "sm_90")
    assert "tileiras crashed (exit status 134)" in info.value.message
    assert "Stack dump:" in info.value.message


def test_a_tool_failure_reaches_the_cli_as_the_toolchains(tmp_path, monkeypatch, capsys):
    from cutile_lab.cli import main
    fake = _fake_tileiras(tmp_path, "exit 3\n")
    _script(fake.parent / "tileirdisasm", "exit 0\n")
    monkeypatch.setenv("CUTILE_LAB_TILEIRAS", str(fake))
    src = tmp_path / "k.py"
    src.write_text('def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):\n'
                   '    z.store(load_tile_like(x, z))\n')
    assert main(["compile", str(src), "--spec", "B=128", "--no-cache"]) == 1
    err = capsys.readouterr().err
    assert "error[CL020]" in err and "crashed (exit status 3)" in err
    assert ":0:" not in err and "k.py:" not in err


@pytest.mark.parametrize("stderr, messages, location", [
    ('loc("a.py":3:4): error: bad thing\nerror: failed to compile Tile IR program\n',
     ["bad thing"], ("a.py", 3, 4)),
    ('#cuda_tile.di_loc<loc("/x/k.py":5:9) in #cuda_tile.di_subprogram<file = <"k.py" in "/x">, '
     'line = 4>>: error: unsupported type \'f8E4M3FN\'\n', ["unsupported type 'f8E4M3FN'"],
     ("/x/k.py", 5, 9)),
    ('loc(fused<"x">["k.py":7:2]): error: oops\n', ["oops"], ("k.py", 7, 2)),
    ("error: failed to compile Tile IR program\n", ["failed to compile Tile IR program"], None),
    ("warning: something\n", [], None),
])
def test_parse_errors(stderr, messages, location):
    assert parse_tileiras_errors(stderr) == (messages, location)


# ----------------------------------------------------------------------------- disassembly

@needs_toolchain
def test_tileir_text_with_and_without_locations():
    if find_toolchain().tileirdisasm is None:
        pytest.skip("tileirdisasm needs CUDA 13.4+")
    from tests.compiling.cutile_kernels import add_bytecode
    bytecode, [symbol] = add_bytecode(128)
    with_locs = disassemble_tileir(bytecode, debug_info=True)
    plain = disassemble_tileir(bytecode, debug_info=False)
    assert f"entry @{symbol}" in with_locs and f"entry @{symbol}" in plain
    assert "cutile_kernels.py" in with_locs and "cutile_kernels.py" not in plain


@needs_toolchain
def test_sass_when_a_disassembler_is_present():
    from tests.compiling.cutile_kernels import add_bytecode
    bytecode, [symbol] = add_bytecode(128)
    cubin = run_tileiras(bytecode, "sm_90").cubin
    sass = disassemble_sass(cubin)
    tc = find_toolchain()
    if tc.nvdisasm is None and tc.cuobjdump is None:
        assert sass is None
    else:
        assert sass is not None and symbol in sass and "EXIT" in sass


def test_no_sass_without_a_disassembler(tmp_path, monkeypatch):
    monkeypatch.setenv("CUTILE_LAB_TILEIRAS", str(_fake_tileiras(tmp_path, "exit 1")))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(tc_mod, "_find_tool", lambda name, bin_dir: None)
    assert disassemble_sass(b"\x7fELF") is None


def test_supported_archs():
    archs = supported_archs()
    assert "sm_90" in archs and "sm_80" in archs and all(a.startswith("sm_") for a in archs)


def test_supported_archs_of_a_toolchain_come_from_its_help(tmp_path, monkeypatch):
    monkeypatch.setenv("CUTILE_LAB_TILEIRAS", str(_fake_tileiras(tmp_path, "exit 1")))
    assert supported_archs() == ["sm_90"]


def test_module_docstring_says_what_it_owns():
    assert "Owns" in (tc_mod.__doc__ or "") and sys.modules[tc_mod.__name__] is tc_mod
