"""The notebook magics' arguments: ``--spec``, ``--show`` and ``--arch`` of ``%%tilekernel``,
the default architecture (the GPU present, else sm_90), and the options-then-expression line
of ``%tile_time``.

Owns only parsing: each bad value is an IPython ``UsageError`` that says what was wrong and
what is accepted. Used by ``notebook.magics``, ``notebook.tilecell``, ``%%cuda`` and
``%tile_diff``.
"""
from __future__ import annotations

import os
import sys
from typing import Any

from IPython.core.error import UsageError

from cutile_lab.errors import CompileError

SHOW_CHOICES = ("diagnostics", "tileir", "resources", "sass", "remarks", "timings", "lowered")
DEFAULT_ARCH = "sm_90"


def parse_spec(text: str | None) -> dict[str, int]:
    """``"B=128,BK=64"`` -> ``{"B": 128, "BK": 64}`` (UsageError when malformed)."""
    from cutile_lab.compiling.specialization import parse_spec as parse
    try:
        return parse(text)
    except CompileError as e:
        raise UsageError(f"{e.message}; {e.help}") from None


def parse_show(text: str | None) -> tuple[str, ...]:
    if not text or text.strip() == "all":
        return SHOW_CHOICES
    if text.strip() == "none":
        return ()
    items = tuple(s.strip() for s in text.split(",") if s.strip())
    bad = [s for s in items if s not in SHOW_CHOICES]
    if bad:
        raise UsageError(f"--show: unknown section{'s' * (len(bad) > 1)} "
                         f"{', '.join(map(repr, bad))}; choose from {','.join(SHOW_CHOICES)} "
                         "(or all, none)")
    return items


def parse_arch(text: str | None) -> str:
    if not text:
        return default_arch()
    from cutile_lab.compiling.driver import normalize_arch
    try:
        return normalize_arch(text)
    except CompileError as e:
        raise UsageError(f"--arch: {e.message}; {e.help}") from None


_default_arch: str | None = None


def default_arch() -> str:
    """The architecture of the GPU present, else sm_90 (decided once per process)."""
    global _default_arch
    if _default_arch is not None:
        return _default_arch
    arch = _arch_from_proc()
    if arch is not None:
        _default_arch = arch
        return arch
    arch = DEFAULT_ARCH
    # Skip probing the driver on machines that plainly have no NVIDIA device: it costs time.
    if sys.platform != "linux" or os.path.exists("/dev/nvidiactl"):
        try:
            from cutile_lab.runtime.device import current_arch, gpu_available
            if gpu_available():
                arch = current_arch()
        except Exception:     # no runtime, no driver, a broken device: compile for sm_90
            arch = DEFAULT_ARCH
    _default_arch = arch
    return arch


def _arch_from_proc() -> str | None:
    """The GPUs' architecture from the driver's /proc files and the peaks table, without
    initialising CUDA (which costs a few hundred milliseconds); None when unsure."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") not in (None, ""):
        visible = os.environ["CUDA_VISIBLE_DEVICES"]
        if visible.strip() in ("-1", "none"):
            return None
    root = "/proc/driver/nvidia/gpus"
    try:
        entries = os.listdir(root)
    except OSError:
        return None
    models = set()
    for e in entries:
        try:
            with open(os.path.join(root, e, "information"), encoding="utf-8") as f:
                for line in f:
                    if line.startswith("Model:"):
                        models.add(line.split(":", 1)[1].strip())
        except OSError:
            return None
    if len(models) != 1:
        return None
    from cutile_lab.performance.peaks import lookup_device
    peaks = lookup_device(models.pop())
    if peaks is None or not peaks.compute_capability:
        return None
    return "sm_" + peaks.compute_capability.replace(".", "")


def parse_cell_options(magic_func, line: str):
    """A cell magic's option line parsed with its own parser; a line that cannot be split into
    words (an unclosed quote) is a ``UsageError`` that says so, not shlex's ``ValueError``."""
    from IPython.core.magic_arguments import parse_argstring
    try:
        return parse_argstring(magic_func, line)
    except ValueError as e:
        raise UsageError(f"%%{magic_func.__name__} {line.strip()}: {e} in the options; close "
                         "the quote, or quote a value that holds spaces as a whole") from None


def split_line_options(line: str, magic_func) -> tuple[Any, str]:
    """Options at the start of ``line`` parsed with the magic's own parser; the rest, verbatim,
    is the expression (so quotes and spaces inside it are kept)."""
    parser = magic_func.parser
    flags_with_value = set()
    flags = set()
    for action in parser._actions:
        for s in action.option_strings:
            (flags_with_value if action.nargs != 0 else flags).add(s)
    def word(text: str) -> tuple[str, str]:
        """The first word of ``text`` (a quoted one keeps its spaces) and the rest."""
        text = text.lstrip()
        if text[:1] in ("'", '"'):
            end = text.find(text[0], 1)
            if end > 0:
                return text[1:end], text[end + 1:].lstrip()
        head, _, tail = text.partition(" ")
        return head, tail.lstrip()

    rest = line.strip()
    taken: list[str] = []
    while rest.startswith("-"):
        head, tail = word(rest)
        name = head.split("=", 1)[0]
        if name in flags:
            taken.append(head)
            rest = tail
        elif name in flags_with_value:
            if "=" in head:
                taken.append(head)
                rest = tail
            else:
                value, rest = word(tail)
                taken.extend([head, value])
        else:
            break
    try:
        opts = parser.parse_args(taken)
    except SystemExit:   # argparse already printed the problem
        raise UsageError(f"bad options: {' '.join(taken)}") from None
    if not rest:
        raise UsageError(f"%{magic_func.__name__}: give an expression to run, e.g. "
                         f"%{magic_func.__name__} add(z.partition([128]), x, y)")
    return opts, rest
