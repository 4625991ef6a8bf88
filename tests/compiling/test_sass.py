"""SASS everywhere: the disassembler wheels are dependencies, `--emit sass` prints it, and the
compile cache keeps it beside the cubin (a cached compile is not disassembled again)."""
from __future__ import annotations

import random
import subprocess
import sys

import pytest

from cutile_lab.compiling import cache as cache_mod
from cutile_lab.compiling import toolchain as toolchain_mod
from cutile_lab.compiling.cache import CompileCache, make_key
from cutile_lab.compiling.toolchain import toolchain_or_none

KERNEL = '''from cutile_lab.lang import *
import cutile_lab as cl

@cl.kernel
def add(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z) + load_tile_like(y, z))
'''

needs_tools = pytest.mark.skipif(toolchain_or_none() is None, reason="no Tile IR toolchain")


def test_the_disassembler_comes_from_the_wheels():
    """A fresh install has nvdisasm without a system CUDA: it is found beside tileiras."""
    tc = toolchain_or_none()
    if tc is None:
        pytest.skip("no Tile IR toolchain")
    assert tc.nvdisasm is not None or tc.cuobjdump is not None, toolchain_mod.SASS_HINT
    if tc.source == "wheel":
        assert tc.nvdisasm is not None and tc.nvdisasm.parent == tc.bin_dir


def test_add_blobs_extends_an_entry(tmp_path):
    cache = CompileCache(tmp_path / "c", disk=True)
    key = make_key(k=random.random())
    assert not cache.add_blobs(key, {"sass": b"x"})     # nothing to extend
    blobs = {"cubin": random.randbytes(300), "bytecode": random.randbytes(50)}
    cache.put(key, {"toolchain_version": "13.4.92"}, blobs)
    text = f"SASS {random.random()}".encode()
    assert cache.add_blobs(key, {"sass": text})
    fresh = CompileCache(tmp_path / "c", disk=True)       # another process: from disk
    hit = fresh.get(key, "13.4.92")
    assert hit.where == "disk" and hit.blobs == {**blobs, "sass": text}


@needs_tools
def test_sass_is_kept_in_the_compile_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CUTILE_LAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUTILE_LAB_NO_CACHE", raising=False)
    from cutile_lab.kernel import kernels_from_source
    src = tmp_path / "k.py"
    src.write_text(KERNEL)
    kernel = kernels_from_source(KERNEL, str(src))["add"]
    b = random.choice([64, 128, 256])
    first = kernel.compile("sm_90", B=b)
    assert first.cache == "miss"
    sass = first.sass
    assert sass and "EXIT" in sass
    calls = []
    monkeypatch.setattr(toolchain_mod, "disassemble_sass", lambda *a, **k: calls.append(1))
    cache_mod.default_cache().forget_memory()            # the next compile comes from disk
    again = kernel.compile("sm_90", B=b)
    assert again.cache == "disk" and again.sass == sass and not calls


@needs_tools
def test_cli_emit_sass(tmp_path):
    src = tmp_path / "kernels.py"
    src.write_text(KERNEL)
    env_cache = str(tmp_path / "cache")
    run = subprocess.run([sys.executable, "-m", "cutile_lab", "compile", str(src), "--spec",
                          "B=128", "--emit", "sass", "-o", str(tmp_path / "add.sass")],
                         capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, "CUTILE_LAB_CACHE_DIR": env_cache})
    assert run.returncode == 0, run.stderr
    text = (tmp_path / "add.sass").read_text()
    assert "add_" in text and "EXIT" in text and ("LDG" in text or "STG" in text)


def test_cli_without_a_disassembler_says_how_to_get_one(capsys, monkeypatch):
    from cutile_lab import cli

    class Compiled:
        name = "add"
        sass = None
    with pytest.raises(cli.CutileLabError) as e:
        cli._emit_sass(Compiled(), None)
    assert "nvdisasm" in e.value.help and "pip install" in e.value.help

    class Tc:
        nvdisasm = cuobjdump = None
    assert "pip install" in cli._sass_tool_line(Tc())
