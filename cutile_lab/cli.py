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
        print(f"SASS            {_sass_tool_line(tc)}")
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
    from cutile_lab.runtime.device import describe_device
    try:
        return describe_device()
    except CutileLabError as e:
        return e.message


def cmd_check(args) -> int:
    from cutile_lab.checking import unchecked_spans
    from cutile_lab.diagnostics.render import render_text, to_json
    try:
        with open(args.file, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise CutileLabError(f"cannot read {args.file}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise CutileLabError(f"cannot read {args.file}: it is not UTF-8 text (byte {e.start} is "
                             f"{e.object[e.start:e.start + 1]!r})",
                             help="a file of kernels is Python source, saved as UTF-8") from None
    diags = check_file(text, args.file)
    if args.json:
        print(json.dumps(to_json(diags), indent=2))
    elif diags:
        lines = text.splitlines()
        print(render_text(diags, lambda fn, ln: lines[ln - 1] if 0 < ln <= len(lines) else "",
                          color=sys.stdout.isatty()))
    errors = sum(d.is_error for d in diags)
    warnings = sum(d.severity == "warning" for d in diags)
    if not args.json:
        unchecked = unchecked_spans(diags)
        extra = ""
        if unchecked:       # code the checker did not check is never "0 problems"
            where = ", ".join(f"line {s.line}" for s in unchecked)
            extra = f", {len(unchecked)} unchecked block(s) ({where})"
        print(f"{args.file}: {errors} error(s), {warnings} warning(s){extra}", file=sys.stderr)
    return 1 if errors else 0


def check_file(text: str, path: str) -> list:
    """Diagnostics of every kernel in a file whose top level ran as ``import`` runs it (so plain
    cuTile kernels see their module's aliases and helpers); a file whose top level fails, or
    that holds no kernel, gives one located TL000 error."""
    from cutile_lab.checking import check_kernel
    from cutile_lab.diagnostics import Diagnostic, sort_diagnostics
    from cutile_lab.errors import LanguageError
    from cutile_lab.kernel import load_kernels
    try:
        kernels = load_kernels(path)
    except LanguageError as e:
        return [Diagnostic("TL000", "error", e.message, e.span, help=e.help)]
    diags, seen = [], set()
    for k in kernels.values():
        if id(k.definition) in seen:
            continue
        seen.add(id(k.definition))
        diags.extend(check_kernel(k.definition, k.globals))
    return sort_diagnostics(diags)


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
    consts, layouts = kernel_arguments(kernel, parse_spec(args.spec), args.arg or [])
    compiled = kernel.compile(args.arch, use_cache=not args.no_cache, layouts=layouts, **consts)
    if args.emit == "tileir":
        _write(args.output, compiled.tileir)
    elif args.emit == "cubin":
        out = args.output or f"{kernel.name}.{compiled.arch}.cubin"
        _write_file(out, compiled.cubin)
        print(f"wrote {out} ({len(compiled.cubin)} bytes, symbol {compiled.symbol})",
              file=sys.stderr)
    elif args.emit == "lowered":
        _write(args.output, compiled.lowered_source)
    elif args.emit == "sass":
        _emit_sass(compiled, args.output)
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


# --- --arg: argument types, shapes and constants from the command line ---------------------

_ARG_HELP = ("write NAME=VALUE: an array as DTYPE[dims] (x=f16[?,?], x=f32[1024]), a scalar as "
             "its dtype (n=i32), a constant as its value (B=128, eps=1e-6, causal=true)")


def parse_arg(text: str):
    """One ``--arg``: ``NAME=DTYPE[dims]`` (an array: its dtype and rank; sizes may be ``?``),
    ``NAME=DTYPE`` (a runtime scalar), or ``NAME=VALUE`` (a constant: an integer, a float such
    as ``1e-6``, or ``true``/``false``). Returns ``(name, value)`` where value is an
    ``ArrayLayout``, a ``ScalarLayout`` or a Python int/float/bool."""
    import re
    from cutile_lab.compiling.specialization import ArrayLayout, ScalarLayout
    from cutile_lab.language.dtypes import dtype_by_name
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not name.isidentifier() or not value:
        raise CompileError(f"--arg: bad argument {text!r}", help=_ARG_HELP)
    m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:\[(.*)\])?", value)
    if m and dtype_by_name(m.group(1)) is not None:
        dtype = dtype_by_name(m.group(1))
        if m.group(2) is None:
            return name, ScalarLayout(dtype.name)
        dims = [d.strip() for d in m.group(2).split(",")] if m.group(2).strip() else []
        for d in dims:
            if d != "?" and not (d.isdigit() and int(d) > 0):
                raise CompileError(f"--arg {name}: bad dimension {d!r} in {value!r}",
                                   help="each dimension is a positive size or `?`, e.g. "
                                        f"{name}={m.group(1)}[?,?]")
        if not dims:
            raise CompileError(f"--arg {name}: an array needs at least one dimension",
                               help=f"e.g. {name}={m.group(1)}[?]")
        return name, ArrayLayout(dtype.name, len(dims))
    if value.lower() in ("true", "false"):
        return name, value.lower() == "true"
    try:
        return name, int(value, 0)
    except ValueError:
        pass
    try:
        return name, float(value)
    except ValueError:
        pass
    if m:
        from difflib import get_close_matches
        from cutile_lab.language.dtypes import ALIASES, DTYPES
        near = get_close_matches(m.group(1), list(DTYPES) + list(ALIASES), n=1)
        raise CompileError(f"--arg {name}: unknown dtype {m.group(1)!r}"
                           + (f" (did you mean {near[0]!r}?)" if near else ""), help=_ARG_HELP)
    raise CompileError(f"--arg {name}: cannot read {value!r}", help=_ARG_HELP)


def kernel_arguments(kernel, spec: dict, arg_texts: list[str]) -> tuple[dict, dict]:
    """(consts, layouts) for ``kernel.compile`` from ``--spec`` and ``--arg``, checked against
    the kernel's parameters: an unknown name, a constant given a type, an array or scalar given
    a value, or (for a plain cuTile kernel) a parameter left out is a clear error."""
    from cutile_lab.compiling.specialization import ArrayLayout, ScalarLayout
    kdef = kernel.definition
    params = {p.name: p for p in kdef.params}
    consts: dict = dict(spec)
    layouts: dict = {}
    for text in arg_texts:
        name, value = parse_arg(text)
        p = params.get(name)
        if p is None and name not in kdef.const_generics:
            raise CompileError(f"--arg {name}: `{kdef.name}` has no parameter `{name}`",
                               span=kdef.span, help=f"its parameters are: "
                               f"{', '.join(params) or 'none'}")
        is_const = p is None or p.role == "const"
        if isinstance(value, (ArrayLayout, ScalarLayout)):
            if is_const:
                raise CompileError(f"--arg {name}: `{name}` is a compile-time constant; give its "
                                   f"value, e.g. --arg {name}=128", span=p.span if p else None)
            if kdef.kind == "tile" and p.dtype is not None:
                raise CompileError(f"--arg {name}: the signature already types `{name}`; "
                                   "give only its constants", span=p.span)
            layouts[name] = value
        else:
            if not is_const:
                kind = "an array" if p.role in ("shared", "mut") else "a scalar"
                raise CompileError(f"--arg {name}: `{name}` is a runtime parameter, not a "
                                   f"constant; give {kind} type, e.g. --arg "
                                   + (f"{name}=f32[?]" if kind == "an array" else f"{name}=f32"),
                                   span=p.span)
            consts[name] = value
    if kdef.kind == "cutile":
        missing = [p.name for p in kdef.params if p.name not in consts and p.name not in layouts
                   and not (p.role == "const" and _has_default(kdef, p.name))]
        if missing:
            types_ = [n for n in missing if params[n].role != "const"]
            values = [n for n in missing if params[n].role == "const"]
            wanted = " and ".join(
                part for part in (
                    ("the type of " + ", ".join(f"`{n}`" for n in types_)) if types_ else "",
                    ("the value of " + ", ".join(f"`{n}`" for n in values)) if values else "")
                if part)
            examples = " ".join(f"--arg {n}=" + (_example_value(kernel, params[n])
                                                 if params[n].role == "const" else "f32[?]")
                                for n in missing)
            raise CompileError(
                f"`{kdef.name}` is a plain cuTile kernel: give {wanted}", span=kdef.span,
                help=f"e.g. {examples} (arrays: DTYPE[dims], scalars: DTYPE, constants: value)")
    return consts, layouts


def _example_value(kernel, param) -> str:
    """An example value for a constant, of the type its annotation names."""
    import typing
    from cutile_lab.language.constants import evaluate_annotation
    value = evaluate_annotation(param.annotation, kernel.globals) \
        if param.annotation is not None else None
    inner = typing.get_args(value)[0] if typing.get_origin(value) is typing.Annotated else None
    return {float: "1e-6", bool: "true"}.get(inner, "128")


def _has_default(kdef, name: str) -> bool:
    a = kdef.node.args
    with_default = [x.arg for x in a.args[len(a.args) - len(a.defaults):]]
    return name in with_default


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
        _write_file(path, text.encode("utf-8"))
    else:
        sys.stdout.write(text)


def _write_file(path: str, data: bytes) -> None:
    """``-o PATH``: a folder that does not exist (or cannot be written) is one error line."""
    try:
        with open(path, "wb") as f:
            f.write(data)
    except OSError as e:
        raise CutileLabError(f"cannot write {path}: {e.strerror}",
                             help="give -o a path in a folder that exists and you can write "
                                  "to") from None


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
    from cutile_lab.diagnostics import CODES
    from cutile_lab.diagnostics.explain import CatalogLookupError, entries, explain_text
    if args.list or not args.code:
        for code in entries():
            info = CODES.get(code)
            print(f"{code}  {info.severity:<8} {info.title}" if info else code)
        if not args.list:
            print("\nexplain one with: cutile-lab explain CODE", file=sys.stderr)
        return 0
    from cutile_lab.errors import error_code_text
    if args.code.strip().upper().startswith("CL"):
        import cutile_lab  # noqa: F401  (every stage's error classes, for their CL codes)
    try:
        sys.stdout.write(error_code_text(args.code) or explain_text(args.code))
    except CatalogLookupError as e:
        raise CutileLabError(e.message, help=e.help) from None
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
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as e:        # a file of that name, a folder not writable...
        raise CutileLabError(f"cannot make the folder {dest}: {e.strerror}",
                             help="give a folder that does not exist yet, or an existing "
                                  "folder you can write to") from None
    copied, kept = [], []
    for pattern in TUTORIAL_FILES:
        for f in sorted(src.glob(pattern)):
            target = dest / f.name
            if target.exists() and not args.force:
                kept.append(f.name)
                continue
            try:
                shutil.copyfile(f, target)
            except OSError as e:
                raise CutileLabError(f"cannot write {target}: {e.strerror}",
                                     help="give a folder you can write to") from None
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
    k.add_argument("--arg", action="append", metavar="NAME=VALUE",
                   help="a parameter's type or a constant's value (repeat it): x=f16[?,?] "
                        "(array), n=i32 (scalar), B=128, eps=1e-6, causal=true (constants)")
    k.add_argument("--emit", choices=["tileir", "cubin", "sass", "report", "lowered"], default="report")
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
