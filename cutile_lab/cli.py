"""The ``cutile-lab`` command: info, check, compile and cache, for files of tile kernels."""
from __future__ import annotations

import argparse
import json
import os
import sys

from cutile_lab.compiling.specialization import parse_spec
from cutile_lab.errors import CompileError, CutileLabError, KernelDiagnosticsError


def cmd_info(args) -> int:
    from cutile_lab.compiling.cache import default_cache
    from cutile_lab.compiling.driver import LAB_VERSION, cuda_tile_version
    from cutile_lab.compiling.toolchain import toolchain_or_none
    print(f"cutile_lab      {LAB_VERSION}")
    print(f"python          {sys.version.split()[0]}")
    print(f"cuda-tile       {cuda_tile_version()}")
    tc = toolchain_or_none()
    if tc is None:
        print("toolchain       not found (pip install \"cuda-tile[tileiras]==1.7.0\", or set "
              "CUTILE_LAB_TILEIRAS); cached kernels still load")
    else:
        print(f"tileiras        {tc.version} ({tc.source}: {tc.tileiras})")
        print(f"tileirdisasm    {tc.tileirdisasm or 'not found'}")
        print(f"SASS            {_sass_tool_line(tc)}")
    print(f"GPU             {_gpu_line()}")
    info = default_cache().info()
    print(f"cache           {info.get('path')} ({info.get('entries', 0)} entries, "
          f"{info.get('bytes', 0) / 1e6:.1f} MB){'' if info.get('enabled', True) else ' [disabled]'}")
    return 0


def _gpu_line() -> str:
    try:
        from cutile_lab.runtime.device import describe_device
    except ImportError:
        return "unknown (runtime not installed)"
    try:
        return describe_device()
    except CutileLabError as e:
        return e.message


def cmd_check(args) -> int:
    from cutile_lab.checking import check_source
    from cutile_lab.checking.render import render_text, to_json
    try:
        with open(args.file, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise CutileLabError(f"cannot read {args.file}: {e.strerror}") from None
    diags = check_source(text, args.file)
    if args.json:
        print(json.dumps(to_json(diags), indent=2))
    elif diags:
        lines = text.splitlines()
        print(render_text(diags, lambda fn, ln: lines[ln - 1] if 0 < ln <= len(lines) else "",
                          color=sys.stdout.isatty()))
    errors = sum(d.is_error for d in diags)
    warnings = sum(d.severity == "warning" for d in diags)
    if not args.json:
        print(f"{args.file}: {errors} error(s), {warnings} warning(s)", file=sys.stderr)
    return 1 if errors else 0


def cmd_compile(args) -> int:
    from cutile_lab.kernel import load_kernels
    kernels = load_kernels(args.file)
    if args.kernel:
        if args.kernel not in kernels:
            raise CutileLabError(f"no kernel named {args.kernel!r} in {args.file}",
                                 help=f"kernels found: {', '.join(kernels)}")
        kernel = kernels[args.kernel]
    elif len(kernels) == 1:
        kernel = next(iter(kernels.values()))
    else:
        raise CutileLabError(f"{args.file} has {len(kernels)} kernels",
                             help=f"pick one with --kernel ({', '.join(kernels)})")
    compiled = kernel.compile(args.arch, use_cache=not args.no_cache, **parse_spec(args.spec))
    if args.emit == "tileir":
        _write(args.output, compiled.tileir)
    elif args.emit == "cubin":
        out = args.output or f"{kernel.name}.{compiled.arch}.cubin"
        with open(out, "wb") as f:
            f.write(compiled.cubin)
        print(f"wrote {out} ({len(compiled.cubin)} bytes, symbol {compiled.symbol})",
              file=sys.stderr)
    elif args.emit == "lowered":
        _write(args.output, compiled.lowered_source)
    elif args.emit == "sass":
        _emit_sass(compiled, args.output)
    else:
        _write(args.output, _report_text(compiled))
    return 0


def _sass_tool_line(tc) -> str:
    """`cutile-lab info`'s SASS line: the disassembler, or how to get one."""
    from cutile_lab.compiling.toolchain import SASS_HINT
    return str(tc.nvdisasm or tc.cuobjdump or SASS_HINT)


def _emit_sass(compiled, output: str | None) -> None:
    """`--emit sass`: the kernel's SASS (kept in the compile cache), or a located error."""
    from cutile_lab.compiling.toolchain import SASS_HINT
    text = compiled.sass
    if not text:
        raise CutileLabError(f"cannot show the SASS of `{compiled.name}`", help=SASS_HINT)
    _write(output, text)


def _report_text(compiled) -> str:
    r = compiled.resources
    lines = [f"kernel          {compiled.name} ({compiled.symbol})",
             f"arch            {compiled.arch}",
             f"const generics  {', '.join(f'{k}={v}' for k, v in compiled.consts.items()) or '-'}",
             f"registers       {r.get('registers')}",
             f"shared memory   {r.get('shared_bytes')} bytes",
             f"local (spills)  {r.get('local_bytes')} bytes",
             f"threads/block   {r.get('max_threads_per_block')}",
             f"cubin           {len(compiled.cubin)} bytes",
             f"cache           {compiled.cache}",
             "timings (ms)    " + ", ".join(f"{k} {v * 1e3:.1f}" for k, v in
                                            compiled.timings.items() if isinstance(v, float))]
    if compiled.remarks:
        lines.append(f"remarks         {len(compiled.remarks)}")
        for rm in compiled.remarks[:20]:
            lines.append(f"  line {rm.get('line', '?')}: [{rm.get('kind')}] {rm.get('message')}")
    return "\n".join(lines) + "\n"


def _write(path: str | None, text: str) -> None:
    if path:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


def cmd_cache(args) -> int:
    from cutile_lab.compiling.cache import default_cache
    cache = default_cache()
    if args.action == "clear":
        print(f"removed {cache.clear()} entries from {cache.info().get('path')}")
    else:
        info = cache.info()
        for k, v in info.items():
            print(f"{k:8} {v}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cutile-lab",
                                description="Check, compile and inspect safe GPU tile kernels.")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="versions, toolchain, GPU and cache location").set_defaults(
        func=cmd_info)
    c = sub.add_parser("check", help="ownership diagnostics for a file of kernels")
    c.add_argument("file")
    c.add_argument("--json", action="store_true", help="diagnostics as JSON")
    c.set_defaults(func=cmd_check)
    k = sub.add_parser("compile", help="compile a kernel to Tile IR / cubin")
    k.add_argument("file")
    k.add_argument("--kernel", help="which kernel, when the file has several")
    k.add_argument("--arch", default="sm_90", help="target, e.g. sm_80, sm_90, sm_100, sm_120")
    k.add_argument("--spec", help="const generics, e.g. B=128,BK=64")
    k.add_argument("--emit", choices=["tileir", "cubin", "sass", "report", "lowered"], default="report")
    k.add_argument("-o", "--output", help="output file (default: stdout; cubin: NAME.ARCH.cubin)")
    k.add_argument("--no-cache", action="store_true", help="compile even if cached")
    k.set_defaults(func=cmd_compile)
    ca = sub.add_parser("cache", help="inspect or clear the compile cache")
    ca.add_argument("action", choices=["info", "clear"])
    ca.set_defaults(func=cmd_cache)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KernelDiagnosticsError as e:
        print(str(e), file=sys.stderr)
        return 1
    except CompileError as e:
        print(f"error[{e.code}]: {e}", file=sys.stderr)
        if os.environ.get("CUTILE_LAB_VERBOSE") and e.compiler_output:
            print(e.compiler_output, file=sys.stderr)
        return 1
    except CutileLabError as e:
        print(f"error[{e.code}]: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
