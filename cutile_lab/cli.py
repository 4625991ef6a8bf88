"""The ``cutile-lab`` command: info, check, compile and cache, for files of tile kernels;
explain (a diagnostic code's entry in the catalog) and tutorials (the notebooks, copied out)."""
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
        sass = tc.nvdisasm or tc.cuobjdump
        print(f"SASS            {sass or 'no disassembler (nvdisasm/cuobjdump) found'}")
    from cutile_lab.compiling.nvrtc import nvrtc_version
    nvrtc = nvrtc_version()
    print("NVRTC           " + (nvrtc or "not found: CUDA C++ kernels cannot compile "
                                          "(pip install nvidia-cuda-nvrtc)"))
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
    else:
        _write(args.output, _report_text(compiled) + _report_sections(compiled, args.show))
    return 0


def _report_sections(compiled, show: str | None) -> str:
    """The report's Tile IR, resources, remarks and lowered Python as terminal text, as the
    notebook's text report has them (``--show tileir,resources``: only those, long ones whole)."""
    from cutile_lab.notebook.report import SECTIONS, compile_report_json, report_sections_text
    wanted = None if show in (None, "all") else [s.strip() for s in show.split(",") if s.strip()]
    bad = [s for s in wanted or () if s not in SECTIONS]
    if bad:
        raise CutileLabError(f"--show: unknown section {', '.join(map(repr, bad))}",
                             help=f"choose from {','.join(SECTIONS)} (or all)")
    # by default what the lines above do not already say (remarks, timings)
    report = compile_report_json(compiled, show=wanted if wanted is not None else
                                 ["tileir", "resources", "sass", "lowered"])
    return "".join(line + "\n" for line in report_sections_text(report))


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


def cmd_explain(args) -> int:
    """``cutile-lab explain TL010``: the catalog's entry for a code, like ``rustc --explain``."""
    from cutile_lab.checking.explain import entries, explain_text
    if args.list or not args.code:
        from cutile_lab.checking.codes import CODES
        for code in entries():
            info = CODES.get(code)
            print(f"{code}  {info.severity:<8} {info.title}" if info else code)
        if not args.list:
            print("\nexplain one with: cutile-lab explain CODE", file=sys.stderr)
        return 0
    sys.stdout.write(explain_text(args.code))
    return 0


TUTORIAL_FILES = ("*.ipynb", "puzzles.py", "README.md")


def tutorials_source():
    """Where this installation's tutorial notebooks are: shipped in the package
    (``cutile_lab/tutorials``), else the checkout's ``notebooks/``."""
    from pathlib import Path
    here = Path(__file__).resolve().parent
    for folder in (here / "tutorials", here.parent / "notebooks"):
        if any(folder.glob("[0-9]*.ipynb")):
            return folder
    raise CutileLabError("the tutorial notebooks are missing from this installation "
                         f"(looked in {here / 'tutorials'} and {here.parent / 'notebooks'})",
                         help="reinstall cutile-lab from a wheel, or run from a checkout")


def cmd_tutorials(args) -> int:
    """``cutile-lab tutorials [DIR]``: copy the tutorials into DIR (files already there are
    kept: they may hold your work) and open JupyterLab on them."""
    import shutil
    from pathlib import Path
    src = tutorials_source()
    dest = Path(args.dir).expanduser()
    dest.mkdir(parents=True, exist_ok=True)
    copied, kept = [], []
    for pattern in TUTORIAL_FILES:
        for f in sorted(src.glob(pattern)):
            target = dest / f.name
            if target.exists() and not args.force:
                kept.append(f.name)
                continue
            shutil.copyfile(f, target)
            copied.append(f.name)
    print(f"tutorials in {dest.resolve()}: {len(copied)} copied"
          + (f", {len(kept)} already there and kept (--force replaces them)" if kept else ""),
          file=sys.stderr)
    if args.no_open:
        print(dest.resolve())
        return 0
    lab = [sys.executable, "-m", "jupyter", "lab", str(dest)]
    if hasattr(os, "getuid") and os.getuid() == 0:
        lab.append("--allow-root")    # containers often run as root
    sys.stdout.flush()
    os.execv(sys.executable, lab)
    return 0    # not reached


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
    k.add_argument("--emit", choices=["tileir", "cubin", "report", "lowered"], default="report")
    k.add_argument("-o", "--output", help="output file (default: stdout; cubin: NAME.ARCH.cubin)")
    k.add_argument("--no-cache", action="store_true", help="compile even if cached")
    k.add_argument("--show", metavar="SECTIONS",
                   help="report sections after the summary, e.g. tileir,resources (default: "
                        "all; a long section is cut unless it is the only long one asked for)")
    k.set_defaults(func=cmd_compile)
    ca = sub.add_parser("cache", help="inspect or clear the compile cache")
    ca.add_argument("action", choices=["info", "clear"])
    ca.set_defaults(func=cmd_cache)
    e = sub.add_parser("explain", help="what a diagnostic code means and how to fix it",
                       description="Print the catalog's entry for a diagnostic code (the part "
                                   "in brackets of `error[TL010]: ...`).")
    e.add_argument("code", nargs="?", help="e.g. TL010; without it, the documented codes")
    e.add_argument("--list", action="store_true", help="list the documented codes")
    e.set_defaults(func=cmd_explain)
    t = sub.add_parser("tutorials", help="copy the tutorial notebooks to a folder and open them",
                       description="Copy the tutorial notebooks (shipped with the package) "
                                   "into DIR and open JupyterLab on them.")
    t.add_argument("dir", nargs="?", default="cutile-lab-tutorials",
                   help="where to put them (default: ./cutile-lab-tutorials)")
    t.add_argument("--no-open", action="store_true",
                   help="only copy; print the folder instead of opening JupyterLab")
    t.add_argument("--force", action="store_true",
                   help="replace notebooks already in DIR (your changes to them are lost)")
    t.set_defaults(func=cmd_tutorials)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _run_to_closed_pipe(args)
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


def _run_to_closed_pipe(args) -> int:
    """Run a subcommand; a reader that stops early (``cutile-lab info | head -2``) ends it
    quietly, as it ends any Unix tool, with the status of a closed pipe (128 + SIGPIPE)."""
    try:
        status = args.func(args)
        sys.stdout.flush()      # a piped stdout is buffered: the closed pipe shows up here
        return status
    except BrokenPipeError:
        # Python would try to flush stdout again at exit and print the error: point it at
        # /dev/null first.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
