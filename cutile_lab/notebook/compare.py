"""``%tile_diff``: two compiles of one kernel side by side, as Compiler Explorer's diff view
shows them — two specializations (``B=128`` against ``B=256``), two option sets
(``opt_level=3`` against ``opt_level=2``) or two architectures (``arch=sm_90`` against
``arch=sm_100``): the Tile IR diff, the SASS diff, resources and compile timings.

Owns: parsing the two sides, the line diffs (``difflib``; SASS addresses, mangled symbol names
and line-table comments are left out so that only instructions are compared) and the ``"diff"``
report bundle (JSON for the JupyterLab extension, HTML and text for other front ends). The
compiles themselves are ``Kernel.compile``'s (cached, SASS included).
"""
from __future__ import annotations

import difflib
import re
from typing import Any, Mapping, Sequence

from IPython.core.error import UsageError

HINTS = ("num_ctas", "occupancy", "opt_level", "num_worker_warps")
_SASS_ADDRESS = re.compile(r"/\*[0-9a-f]{4,}\*/\s*")
_SASS_ENCODING = re.compile(r"\s*/\*\s*0x[0-9a-f]+\s*\*/\s*$")


def parse_side(text: str, default_arch: str) -> dict[str, Any]:
    """``"B=128,arch=sm_100,opt_level=2"`` -> ``{"label", "arch", "consts", "options"}``."""
    from cutile_lab.compiling.driver import normalize_arch
    from cutile_lab.errors import CompileError
    arch, consts, options = default_arch, {}, {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, eq, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not eq or not name or not value:
            raise UsageError(f"%tile_diff: {item!r} is not NAME=VALUE (e.g. B=128, "
                             "arch=sm_100, opt_level=2)")
        if name == "arch":
            try:
                arch = normalize_arch(value)
            except CompileError as e:
                raise UsageError(f"%tile_diff: {e.message}; {e.help}") from None
            continue
        try:
            number = int(value)
        except ValueError:
            raise UsageError(f"%tile_diff: {name}={value!r}: the value must be an integer") \
                from None
        (options if name in HINTS else consts)[name] = number
    return {"label": text, "arch": arch, "consts": consts, "options": options}


def sass_lines(sass: str | None) -> list[str]:
    """Instructions only: no addresses, encodings, line-table comments or symbol names (which
    carry the specialization and would differ on every line that names them)."""
    out = []
    for line in (sass or "").splitlines():
        s = line.strip()
        if not s or s.startswith(("//", ".", "@")) or s.endswith(":"):
            continue
        s = _SASS_ENCODING.sub("", _SASS_ADDRESS.sub("", s))
        if s:
            out.append(s)
    return out


def line_diff(left: Sequence[str], right: Sequence[str]) -> dict[str, Any]:
    """Side-by-side rows ``[tag, left_no, left_text, right_no, right_text]`` (tag: equal,
    replace, delete, insert; numbers 1-based, null on the missing side) and the counts."""
    rows: list[list] = []
    added = removed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, left, right,
                                                        autojunk=False).get_opcodes():
        n = max(i2 - i1, j2 - j1)
        for k in range(n):
            li, rj = i1 + k, j1 + k
            lt = left[li] if li < i2 else None
            rt = right[rj] if rj < j2 else None
            rows.append([tag, li + 1 if lt is not None else None, lt,
                         rj + 1 if rt is not None else None, rt])
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return {"rows": rows, "added": added, "removed": removed,
            "left_lines": len(left), "right_lines": len(right)}


def _side_json(side: Mapping, compiled) -> dict[str, Any]:
    from cutile_lab.notebook.report import resources_json, timings_json
    return {"label": side["label"], "arch": compiled.arch, "consts": dict(compiled.consts),
            "options": dict(side["options"]), "resources": resources_json(compiled.resources),
            "timings": timings_json(compiled.timings, compiled.cache),
            "summary": compiled.summary()}


def diff_report(name: str, left: Mapping, right: Mapping, a, b) -> dict[str, Any]:
    """The ``"diff"`` report of two compiles ``a`` and ``b`` of kernel ``name``."""
    from cutile_lab.notebook.report import REPORT_MIME, VERSION
    ir = line_diff(a.tileir.splitlines(), b.tileir.splitlines())
    sass_a, sass_b = a.sass, b.sass
    sass = line_diff(sass_lines(sass_a), sass_lines(sass_b)) if sass_a and sass_b else None
    report = {
        "version": VERSION, "kind": "diff", "kernel": name, "arch": None, "cell_id": None,
        "status": "compiled", "source": None, "diagnostics": None, "tileir": None,
        "resources": None, "sass": None, "remarks": [], "timings": None, "benchmark": None,
        "notes": [] if sass is not None else ["no SASS diff: no disassembler (nvdisasm)"],
        "diff": {"left": _side_json(left, a), "right": _side_json(right, b),
                 "tileir": ir, "sass": sass},
    }
    report["summary"] = (f"{name}: {left['label']} vs {right['label']}: Tile IR "
                         f"+{ir['added']} -{ir['removed']} lines" +
                         (f", SASS +{sass['added']} -{sass['removed']} instructions"
                          if sass else ""))
    from cutile_lab.notebook.report_html import diff_html
    return {REPORT_MIME: report, "text/html": diff_html(report, _resource_rows(report), _unified),
            "text/plain": _text(report)}


def _unified(d: Mapping, a: str, b: str) -> list[str]:
    out = [f"--- {a}", f"+++ {b}"]
    for tag, _ln, lt, _rn, rt in d["rows"]:
        if tag == "equal":
            continue
        if lt is not None:
            out.append(f"-{lt}")
        if rt is not None:
            out.append(f"+{rt}")
    return out


def _resource_rows(report: Mapping) -> list[tuple[str, Any, Any]]:
    left, right = report["diff"]["left"], report["diff"]["right"]
    keys = list(dict.fromkeys(list(left["resources"] or {}) + list(right["resources"] or {})))
    rows = [(k, (left["resources"] or {}).get(k), (right["resources"] or {}).get(k))
            for k in keys]
    def ms(side):
        t = (side["timings"] or {}).get("total")
        return round(t * 1e3, 1) if isinstance(t, (int, float)) else None
    rows.append(("compile time (ms)", ms(left), ms(right)))
    return rows


def _text(report: Mapping) -> str:
    d = report["diff"]
    a, b = d["left"]["label"], d["right"]["label"]
    lines = [report["summary"], ""]
    for k, x, y in _resource_rows(report):
        mark = "" if x == y else "   <- differs"
        lines.append(f"  {k:24} {x!s:>12} {y!s:>12}{mark}")
    lines += ["", "Tile IR:"] + _unified(d["tileir"], a, b)
    if d["sass"]:
        lines += ["", "SASS:"] + _unified(d["sass"], a, b)
    return "\n".join(lines)


def run_tile_diff(shell, line: str) -> None:
    """``%tile_diff KERNEL LEFT RIGHT``: compile both sides and publish the diff report."""
    from cutile_lab.errors import CutileLabError
    from cutile_lab.notebook.options import default_arch
    from cutile_lab.errors import TileCellError
    from cutile_lab.notebook.report import publish
    words = line.split()
    if len(words) != 3:
        raise UsageError("usage: %tile_diff KERNEL LEFT RIGHT, each side a comma list of "
                         "const generics, arch= and compiler hints, e.g. "
                         "%tile_diff add B=128 B=256, %tile_diff add B=128,arch=sm_90 "
                         "B=128,arch=sm_100, %tile_diff gemm BM=128,BN=128 "
                         "BM=128,BN=128,opt_level=2")
    name, left_text, right_text = words
    kernel = shell.user_ns.get(name)
    if kernel is None or not hasattr(kernel, "compile") or not hasattr(kernel, "definition"):
        from cutile_lab.diagnostics.suggest import did_you_mean
        kernels = [k for k, v in shell.user_ns.items()
                   if hasattr(v, "definition") and hasattr(v, "compile") and not k.startswith("_")]
        guess = did_you_mean(name, kernels)
        raise UsageError(f"%tile_diff: `{name}` is not a kernel defined in this notebook"
                         + (f"; did you mean `{guess}`?" if guess else
                            f" (kernels: {', '.join(kernels) or 'none yet'})"))
    arch = default_arch()
    left, right = parse_side(left_text, arch), parse_side(right_text, arch)
    try:
        a = kernel.compile(left["arch"], options=left["options"] or None, **left["consts"])
        b = kernel.compile(right["arch"], options=right["options"] or None, **right["consts"])
    except CutileLabError as e:
        from cutile_lab.notebook.launch_view import show_error
        show_error(shell, e)
        raise TileCellError(f"%tile_diff: {e.message}") from None
    publish(diff_report(name, left, right, a, b))
