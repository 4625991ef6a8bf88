"""Launch-level rules for a CUDA C++ kernel: the arguments of one launch against the ownership its
signature declares (``language.cuda_signature``), over plain ``ArgDesc``s like a tile kernel's.

The same rules as ``launch_rules.check_launch``, with the C++ signature as the declaration:
memory a written pointer (``T*``) reaches must not be reachable through any other argument
(TL100 with a ``const T*``, TL101 with another ``T*``); moved tensors and memory in-flight work
borrows are refused (TL102, TL104, TL105); arguments are matched to parameters (TL117), tensors
to pointers and numbers to values (TL118), dtypes to element types (TL112). A pointer indexes
memory linearly, so it needs a contiguous tensor (TL110). Partitions (``out.partition(256)``,
one tile per block) go only to written pointers, and all of one launch split into the same
number of tiles (TL119).

What a CUDA C++ kernel does with its pointers is not checked here (no checker reads the body):
that it stays inside each tensor, and that a block writes only its own tile of a partition, is
the user's claim, reported as unchecked.
"""
from __future__ import annotations

from typing import Sequence

from cutile_lab.checking.borrows import BorrowView
from cutile_lab.checking.launch_args import ArgDesc, dtype_name
from cutile_lab.checking.launch_report import LaunchReporter, argument_spans
from cutile_lab.checking.launch_rules import alias_problems, borrow_problems
from cutile_lab.diagnostics import Diagnostic, Label, Span


def check_cuda_launch(sig, args: Sequence[ArgDesc], call_site: Span | None = None,
                      borrows: BorrowView | None = None, *, given: Sequence[str] = (),
                      extra_positional: int = 0, contiguous: dict | None = None,
                      source_lookup=None) -> list[Diagnostic]:
    """Every launch-level diagnostic for launching the CUDA C++ kernel ``sig`` (a
    ``CudaSignature``) with ``args``, errors first. ``given``: the parameter names the call
    bound (for TL117); ``contiguous``: parameter name -> whether the tensor passed is
    contiguous."""
    problems: list[tuple] = []
    by_name: dict[str, ArgDesc] = {}
    params = {p.name: p for p in sig.params}
    if extra_positional:
        problems.append(("extra", extra_positional))
    for a in args:
        if a.name in params and a.name not in by_name:
            by_name[a.name] = a
        else:
            problems.append(("unexpected", a))
    for name in given:
        if name not in params:
            problems.append(("unexpected", ArgDesc(name, "scalar")))
    for p in sig.params:
        if p.name not in by_name:
            problems.append(("missing", p.name))
    arrays: list[ArgDesc] = []
    grids = None
    cast = {name for name, _ in sig.casts_away_const}
    for p in sig.params:
        a = by_name.get(p.name)
        if a is None:
            continue
        if p.is_array != a.is_array:
            problems.append(("kind", p, a))
            continue
        if not p.is_array:
            continue
        if a.dtype and dtype_name(a.dtype) != p.dtype:
            problems.append(("dtype", p, a))
        if contiguous is not None and not contiguous.get(p.name, True):
            problems.append(("strided", p, a))
        if a.partition_tile is not None:
            if p.role != "mut":
                problems.append(("partitioned", p, a))
            else:
                grid = tuple(-(-s // t) if t else 0 for s, t in zip(a.shape, a.partition_tile))
                if grids is None:
                    grids = (a, grid)
                elif grids[1] != grid:
                    problems.append(("grid", grids, (a, grid)))
        # the role the signature gives it, whatever the argument is; a const pointer whose
        # constness the body casts away is checked as written
        role = "mut" if p.name in cast else p.role
        arrays.append(ArgDesc(a.name, role, a.ptr, a.shape, a.strides, a.itemsize, a.dtype,
                              a.tensor_id, a.partition_tile, a.origin))
    problems.extend(alias_problems(arrays))
    problems.extend(borrow_problems(arrays, borrows, call_site))
    if not problems:
        return []
    return _CudaReporter(sig, call_site, source_lookup, by_name, {}).report(problems)


class _CudaReporter(LaunchReporter):
    """The tile reporter's wording where it fits (aliasing, borrows, argument names); the
    messages that speak of ``Mut`` tiles say it in C++ terms here."""

    def arg_spans(self):
        if self._spans is None:
            # the launch keywords are parameters of the call too (as const ones: optional)
            launch_kw = [_LaunchKeyword(k) for k in ("grid", "block", "shared_mem")]
            shim = _Shim(self.kdef.name, list(self.kdef.params) + launch_kw)
            try:
                self._spans = argument_spans(shim, self.call_site, self.lookup)
            except Exception:   # reading the user's line is a nicety, never a failure
                self._spans = {}
        return self._spans

    def _kind(self, p, a: ArgDesc):
        if p.is_array:
            msg = f"`{p.name}` is a pointer (`{p.ctype}`), but the argument is a number"
            help = f"pass a tensor for `{p.name}`"
        else:
            msg = f"`{p.name}` is a value parameter (`{p.ctype}`), but the argument is a tensor"
            help = f"pass a number for `{p.name}`"
        return self.diag("TL118", msg, self.arg_label(a, "this argument") +
                         [Label(p.span, f"`{p.name}` is declared here")], help=help)

    def _dtype(self, p, a: ArgDesc):
        got = dtype_name(a.dtype)
        return self.diag(
            "TL112", f"`{p.name}` points to {p.dtype} (`{p.ctype}`), but the argument holds "
                     f"{got}",
            self.arg_label(a, f"this is {got}", True) +
            [Label(p.span, f"`{p.name}` is declared here")],
            help=f"convert the tensor to {p.dtype} before the launch, or change the pointer's "
                 "element type")

    def _partitioned(self, p, a: ArgDesc):
        return self.diag(
            "TL116", f"`{p.name}` is `{p.ctype}`, a shared input, but the argument is a "
                     "partition",
            self.arg_label(a, "this is a partition") +
            [Label(p.span, f"`{p.name}` is declared const here")],
            help="pass the tensor itself; partitions (one tile per block) are for the pointers "
                 "a kernel writes")

    def _strided(self, p, a: ArgDesc):
        return self.diag(
            "TL110", f"`{p.name}` is a pointer to contiguous elements, but the argument is a "
                     f"strided view (strides {tuple(a.strides)} for shape {tuple(a.shape)})",
            self.arg_label(a, "not contiguous", True) +
            [Label(p.span, f"`{p.name}` is declared here")],
            help="pass a contiguous tensor (copy the view first), or pass the strides to the "
                 "kernel and the whole tensor as the pointer",
            notes=("a pointer parameter indexes memory linearly from its first element: a "
                   "strided view would let the kernel reach elements outside the view, which "
                   "the ownership checks could not see",))


class _LaunchKeyword:
    def __init__(self, name):
        self.name = name
        self.role = "const"


class _Shim:
    def __init__(self, name, params):
        self.name = name
        self.params = params


def cuda_launch_notes(sig) -> list[str]:
    """What a report of a CUDA C++ launch says is unchecked."""
    notes = ["unchecked: a CUDA C++ kernel's indexing is not checked; each pointer is trusted "
             "to stay inside the tensor passed for it, and each block inside its own tile of a "
             "partition"]
    for name, span in sig.casts_away_const:
        notes.append(f"unchecked: `{sig.name}` casts the constness of `{name}` away at line "
                     f"{span.line}: it may write memory its signature calls shared (the "
                     "user's claim, not checked; the launch checks treat it as written)")
    return notes


__all__ = ["check_cuda_launch", "cuda_launch_notes"]
