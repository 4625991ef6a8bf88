"""The options of ``@kernel(...)``: their names, the values each takes, and what is wrong with a
given set of them. One definition for the checker (which reports a problem as TL004 when the
kernel is defined) and the lowering (which refuses to lower such a kernel): a misspelt
``schedule=`` must never silently compile the default schedule."""
from __future__ import annotations

from dataclasses import dataclass

from cutile_lab.diagnostics.suggest import did_you_mean

TILE_ORDERS = ("row", "grouped", "reverse")      # how the launch index maps to output tiles
SCHEDULES = ("tiles", "persistent")              # one instance per tile, or about one per SM
INT_OPTIONS = ("group_size", "num_ctas", "occupancy", "opt_level", "num_worker_warps")
KNOWN = ("tile_order", "schedule") + INT_OPTIONS


@dataclass(frozen=True)
class OptionProblem:
    option: str          # the option at fault (the first of two that do not combine)
    message: str
    help: str


def option_problem(options: dict) -> OptionProblem | None:
    """The first problem with ``options`` (a kernel definition's), or None."""
    for name, value in options.items():
        if name not in KNOWN:
            return OptionProblem(name, f"`@kernel` has no option `{name}`",
                                 _did_you_mean(name, KNOWN) + "options are "
                                 + ", ".join(f"`{k}`" for k in KNOWN))
        if name in INT_OPTIONS and (not isinstance(value, int) or isinstance(value, bool)
                                    or value < (0 if name == "opt_level" else 1)):
            return OptionProblem(name, f"`{name}={value!r}`: a positive integer is needed",
                                 f"e.g. `{name}=2`")
    for name, allowed in (("tile_order", TILE_ORDERS), ("schedule", SCHEDULES)):
        if name in options and options[name] not in allowed:
            value = options[name]
            close = _did_you_mean(value, allowed) if isinstance(value, str) else ""
            return OptionProblem(name, f"`{name}={value!r}` is not one of "
                                 + ", ".join(repr(a) for a in allowed),
                                 close or f'e.g. `{name}="{allowed[-1]}"`')
    if options.get("tile_order") == "reverse" and options.get("schedule") == "persistent":
        return OptionProblem("tile_order", '`tile_order="reverse"` and `schedule="persistent"` '
                             "do not combine", "a persistent instance walks its tiles in launch "
                             "order: drop one of the two")
    return None


def _did_you_mean(name: str, candidates) -> str:
    close = did_you_mean(name, candidates)
    return f"did you mean `{close}`? " if close else ""
