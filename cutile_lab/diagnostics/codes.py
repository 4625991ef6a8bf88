"""The registry of diagnostic codes: one stable code per kind of problem, with its usual severity
and a one-line title.

``TL0xx`` codes come from the kernel's source (the frontend's signature checks and the kernel-level
rules, run when a kernel is defined); ``TL1xx`` codes come from a launch (the launch-level rules,
run on the host before work is queued); ``TL15x`` codes come from a call of the kernel library
(``cutile_lab.kernels``: its host-side checks of the arguments). A code, once published, keeps
its meaning; retired codes are not reused. Every code has an entry in ``docs/diagnostics.md`` (a test checks this).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from cutile_lab.diagnostics.values import Severity


@dataclass(frozen=True)
class Code:
    code: str
    severity: Severity
    title: str
    level: Literal["kernel", "launch", "library"]


_TABLE: list[tuple[str, Severity, str]] = [
    ("TL000", "error", "the source is not valid Python, or holds no kernel"),
    # frontend: the kernel's signature
    ("TL001", "error", "a parameter's type is missing or is not a tile-language type"),
    ("TL002", "error", "the parameter list uses *args, **kwargs or keyword-only parameters"),
    ("TL003", "error", "a name is both a parameter and a shape (const generic) name"),
    ("TL004", "error", "an unknown `@kernel` option, or a value it cannot take"),
    # memory access and ownership
    ("TL010", "error", "store into a shared (read-only) input"),
    ("TL011", "error", "raw memory operation outside `with unsafe():`"),
    ("TL012", "warning", "`with unsafe():` block that contains nothing unsafe"),
    ("TL013", "error", "a `Mut` output is never stored"),
    ("TL014", "warning", "a `Mut` output is stored more than once"),
    ("TL015", "warning", "a `Mut` output is not stored on every path"),
    ("TL016", "error", "the stored tile's shape differs from the output's tile shape"),
    ("TL017", "error", "the stored tile's dtype converts to the output's dtype with loss"),
    ("TL018", "warning", "the stored tile is converted to the output's dtype implicitly (no loss)"),
    ("TL019", "warning", "unsafe code writes into a shared (read-only) input"),
    ("TL020", "error", "`load_tile_like(x, z)`: `z` is not one of the kernel's `Mut` outputs"),
    ("TL021", "error", "a load reads from something that is not a tensor parameter"),
    ("TL022", "error", "`load_tile_like(x, z)`: `x` and `z` have different ranks"),
    ("TL023", "error", "`load_tile`: the index or shape has the wrong number of entries"),
    ("TL024", "error", "a load reads from an output that other tiles are writing"),
    ("TL025", "error", "no such method or attribute"),
    ("TL026", "error", "a parameter is reassigned"),
    ("TL027", "error", "`max(a, b)` / `min(a, b)` of two values: these names reduce one tile"),
    ("TL028", "error", "a load's `padding=` is not one of the padding modes"),
    ("TL029", "error", "use of a `Mut` output after it was moved into another name"),
    # the Python subset
    ("TL030", "error", "unknown name, or a name that cannot be used in a kernel"),
    ("TL031", "error", "Python construct not supported in a kernel"),
    ("TL032", "error", "a kernel calls itself"),
    ("TL033", "warning", "`print` or f-string of a GPU value (slow; for debugging only)"),
    ("TL034", "error", "`cl.` prefix inside a kernel body"),
    ("TL035", "error", "the stored tile's shape cannot be proven to be the output's tile shape"),
    ("TL036", "error", "a store through a value the checker cannot tie to one tensor"),
    ("TL037", "error", "a call the checker cannot follow (no source, recursive, `*args`)"),
    ("TL038", "error", "a call whose callee the checker cannot tell"),
    # the grid
    ("TL040", "error", "a `Mut` output's tile has more than 3 dimensions"),
    ("TL041", "error", "`Mut` outputs with tiles of different ranks"),
    ("TL042", "warning", "a kernel with no `Mut` output"),
    ("TL043", "error", "`tile_id(axis)`: the axis is not a constant below the grid's rank"),
    # code the checker does not check
    ("TL050", "note", "unchecked: a `with unsafe():` block (or a helper running one)"),
    # plain cuTile Python kernels
    ("TL060", "warning", "possible data race: a store (or a read of a stored array) not "
                         "indexed by the block's own id"),
    ("TL061", "note", "atomic updates: race-free, in no fixed order"),
    ("TL062", "note", "an array is both read and written"),
    ("TL063", "warning", "a call the race analysis cannot follow: its writes are unchecked"),
    # internal
    ("TL099", "error", "a checker rule failed internally (a bug in cutile_lab)"),
    # launch level: aliasing
    ("TL100", "error", "the same memory is passed as a mutable output and a shared input"),
    ("TL101", "error", "the same memory is passed as two mutable outputs"),
    # launch level: ownership over time
    ("TL102", "error", "use of a tensor after it was moved into a partition"),
    ("TL103", "error", "host access to a tensor that in-flight GPU work is writing"),
    ("TL104", "error", "launch using a tensor that in-flight GPU work is writing"),
    ("TL105", "error", "write to a tensor that in-flight GPU work is reading"),
    # launch level: arguments against the signature
    ("TL110", "error", "an argument's shape or partition tile shape does not match the signature"),
    ("TL111", "error", "a const generic is bound to two different values"),
    ("TL112", "error", "an argument's dtype does not match the signature"),
    ("TL113", "error", "an argument's rank does not match the signature"),
    ("TL114", "note", "ragged partition: boundary tiles are masked"),
    ("TL115", "error", "a `Mut` parameter is given a tensor that is not partitioned"),
    ("TL116", "error", "a shared parameter is given a partition"),
    ("TL117", "error", "a parameter is missing, or an argument matches no parameter"),
    ("TL118", "error", "a tensor is passed for a scalar parameter, or a scalar for a tensor"),
    ("TL119", "error", "the `Mut` outputs' partitions have different numbers of tiles"),
    ("TL120", "warning", "a shared input read with `load_tile_like` is smaller than the output: "
                         "some tiles read padding"),
    ("TL121", "warning", "a plain cuTile kernel launched with several blocks along a grid axis "
                         "it never reads"),
    ("TL122", "error", "a tile kernel launched with a `grid=` other than its partitions' grid"),
    ("TL123", "error", "an output is a view whose elements overlap in memory"),
    # library calls (cutile_lab.kernels): the host function's arguments, before any launch
    ("TL150", "error", "a library function's argument is not a tensor of numbers"),
    ("TL151", "error", "a library function's argument has a rank the function does not take"),
    ("TL152", "error", "a library function's arguments have shapes that do not fit together"),
    ("TL153", "error", "a library function's argument has a dtype it does not take"),
    ("TL154", "error", "a library function's argument is on another device or backend"),
    ("TL155", "error", "a library function's option has a value it does not take"),
]

def _level(code: str) -> str:
    """TL0xx: the kernel's source; TL15x: a library function's arguments; other TL1xx: a
    launch."""
    if code.startswith("TL15"):
        return "library"
    return "launch" if code.startswith("TL1") else "kernel"


CODES: dict[str, Code] = {
    c: Code(c, sev, title, _level(c))
    for c, sev, title in _TABLE
}

