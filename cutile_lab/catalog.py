"""The catalog of diagnostics (``docs/diagnostics.md``): reading its examples, running them
through the stage each belongs to, and regenerating the rendered output shown under each one.

It sits at the top of the package, beside the command line, because its examples drive every
stage: kernel examples the checker, launch examples the launch rules, library examples the kernel
library on the simulator. Reading one entry's text (``cutile-lab explain``) is
``cutile_lab.diagnostics.explain``'s job.

The catalog is Markdown with one section per code (``<a id="tl012"></a>`` then ``## TL012 ...``).
Code blocks are tagged by what they are:

- ```` ```python kernel ```` a kernel that produces exactly the section's code;
- ```` ```python fix ```` the same kernel fixed: no diagnostic at all;
- ```` ```python launch ```` a launch snippet that produces exactly the section's code;
- ```` ```python launch-fix ```` the launch fixed;
- ```` ```python library ```` a call of the kernel library (``cutile_lab.kernels``) on the
  simulator that is refused with exactly the section's code; ```` ```python library-fix ```` the
  call fixed (it runs);
- ```` ```text ```` right after an example: its rendered output (regenerated, never hand-written).

Launch snippets run against a small host model (``SimHost``): ``tensor(shape, dtype)`` makes a
tensor at a made-up address, ``t[...]`` takes views, ``t.partition(tile)`` moves a tensor into a
partition, ``t.numpy()`` / ``t.fill(v)`` access it from the host, calling a kernel defined in the
snippet checks and "launches" it (nothing runs: the launch stays in flight until ``.sync()``).
Everything goes through the real ``check_launch`` and ``BorrowState``.
"""
from __future__ import annotations

import ast
import importlib
import linecache
import re
import sys
from dataclasses import dataclass, field

from cutile_lab import lang
from cutile_lab.checking import check_source
from cutile_lab.checking.launch_rules import (ArgDesc, BorrowState, check_launch,
                                              check_plain_launch, check_tile_grid,
                                              padded_reads)
from cutile_lab.checking.read_only import read_only_parameters
from cutile_lab.diagnostics import CODES, Diagnostic, Span, render_text
from cutile_lab.errors import KernelDiagnosticsError
from cutile_lab.language.dtypes import DType, dtype_by_name
from cutile_lab.language.frontend import KernelSource, parse_kernels

FENCE = re.compile(r"^```(\w[\w-]*)?(?:[ \t]+([\w-]+))?[ \t]*$")
ANCHOR = re.compile(r'^<a id="(tl\d{3})"></a>\s*$')
HEADING = re.compile(r"^## (TL\d{3})\b")


KINDS = ("kernel", "fix", "launch", "launch-fix", "library", "library-fix")
BAD_KINDS = ("kernel", "launch", "library")


@dataclass
class Example:
    kind: str            # one of KINDS
    text: str
    start: int           # index of the opening fence line
    end: int             # index of the closing fence line


@dataclass
class Entry:
    code: str
    anchor: str | None
    line: int
    examples: list[Example] = field(default_factory=list)


def parse_catalog(text: str) -> list[Entry]:
    lines = text.split("\n")
    entries: list[Entry] = []
    anchor = None
    i = 0
    while i < len(lines):
        line = lines[i]
        m = ANCHOR.match(line)
        if m:
            anchor = m.group(1)
        m = HEADING.match(line)
        if m:
            entries.append(Entry(m.group(1), anchor, i + 1))
            anchor = None
        m = FENCE.match(line)
        if m and m.group(1):
            j = i + 1
            while j < len(lines) and lines[j].rstrip() != "```":
                j += 1
            if m.group(1) == "python" and m.group(2) in KINDS and entries:
                entries[-1].examples.append(
                    Example(m.group(2), "\n".join(lines[i + 1:j]) + "\n", i, j))
            i = j + 1
            continue
        i += 1
    return entries


# --- a host model for launch examples ---------------------------------------------------------

def _dtype(d) -> DType:
    if isinstance(d, DType):
        return d
    found = dtype_by_name(str(d))
    if found is None:
        raise ValueError(f"unknown dtype {d!r}")
    return found


class SimTensor:
    def __init__(self, host: "SimHost", ptr: int, shape, strides, dtype: DType, tensor_id: int,
                 origin: Span | None):
        self.host, self.ptr, self.shape, self.strides = host, ptr, tuple(shape), tuple(strides)
        self.dtype, self.tensor_id, self.origin = dtype, tensor_id, origin

    def __getitem__(self, key) -> "SimTensor":
        if not isinstance(key, tuple):
            key = (key,)
        ptr, shape, strides = self.ptr, [], []
        dims = list(zip(self.shape, self.strides))
        for axis, k in enumerate(key):
            n, st = dims[axis]
            if isinstance(k, int):
                ptr += (k % n) * st * self.dtype.itemsize
                continue
            start, stop, step = k.indices(n)
            count = len(range(start, stop, step))
            ptr += start * st * self.dtype.itemsize
            shape.append(count)
            strides.append(st * step)
        for n, st in dims[len(key):]:
            shape.append(n)
            strides.append(st)
        return SimTensor(self.host, ptr, shape, strides, self.dtype, self.host.new_id(),
                         self.host.site(1))

    def as_strided(self, shape, strides) -> "SimTensor":
        """A view of the same memory with the given shape and element strides (as NumPy's
        ``as_strided`` or PyTorch's, reached through DLPack)."""
        return SimTensor(self.host, self.ptr, tuple(shape), tuple(strides), self.dtype,
                         self.host.new_id(), self.host.site(1))

    @property
    def T(self) -> "SimTensor":
        return SimTensor(self.host, self.ptr, self.shape[::-1], self.strides[::-1], self.dtype,
                         self.host.new_id(), self.host.site(1))

    def partition(self, tile) -> "SimPartition":
        tile = tuple(tile) if isinstance(tile, (tuple, list)) else (tile,)
        where = self.host.site(1)
        self.host.borrows.moved(self.tensor_id, where)
        return SimPartition(self, tile, where)

    def partition_mut(self, tile) -> "SimPartition":
        """The borrowing form: the tensor stays usable, in-flight work borrows it mutably."""
        tile = tuple(tile) if isinstance(tile, (tuple, list)) else (tile,)
        return SimPartition(self, tile, self.host.site(1), moved=False)

    def copy(self) -> "SimTensor":
        return self.host.tensor(self.shape, self.dtype)

    def numpy(self):
        self.host.use(self, "read")
        return None

    def fill(self, value) -> None:
        self.host.use(self, "write")


class SimPartition:
    def __init__(self, tensor: SimTensor, tile: tuple, where: Span | None, moved: bool = True):
        self.tensor, self.tile, self.where, self.moved = tensor, tile, where, moved

    def unpartition(self) -> SimTensor:
        if self.moved:
            self.tensor.host.borrows.restored(self.tensor.tensor_id)
        return self.tensor


class SimOp:
    def __init__(self, host: "SimHost", description: str):
        self.host, self.description = host, description

    def sync(self):
        """The work completed: its borrows end (moved tensors stay in their partitions)."""
        self.host.borrows.release(self)
        return self


class SimKernel:
    def __init__(self, host: "SimHost", kdef):
        self.host, self.kdef = host, kdef

    def __call__(self, *args, grid=None, **kwargs):
        host = self.host
        site = host.site(1)
        params = self.kdef.params
        given = list(zip([p.name for p in params], args)) + list(kwargs.items())
        plain = self.kdef.kind == "cutile"      # a plain cuTile kernel: what it may write
        read_only = read_only_parameters(self.kdef) if plain else frozenset()
        descs: list[ArgDesc] = []
        for name, value in given:
            p = next((q for q in params if q.name == name), None)
            role = p.role if p is not None and p.role in ("mut", "shared") else "shared"
            if plain:
                role = "shared" if name in read_only else "mut"
            if isinstance(value, SimPartition):
                t = value.tensor
                descs.append(ArgDesc(name, role, t.ptr, t.shape, t.strides, t.dtype.itemsize,
                                     t.dtype.name, t.tensor_id, value.tile, value.where))
            elif isinstance(value, SimTensor):
                descs.append(ArgDesc(name, role, value.ptr,
                                     value.shape, value.strides, value.dtype.itemsize,
                                     value.dtype.name, value.tensor_id, None, value.origin))
            else:
                descs.append(ArgDesc(name, "scalar", value=value))
        if plain:
            diags = check_plain_launch(self.kdef, descs, site,
                                       grid=tuple(grid) if grid is not None else None)
        else:
            diags = check_launch(self.kdef, descs, site, host.borrows)
            part = next((v for v in list(args) + list(kwargs.values())
                         if isinstance(v, SimPartition)), None)
            if grid is not None and not any(d.is_error for d in diags):
                tiles = None if part is None else tuple(
                    -(-n // t) for n, t in zip(part.tensor.shape, part.tile))
                diags = diags + check_tile_grid(self.kdef, tuple(grid), tiles, site)
        if not plain and not any(d.is_error for d in diags):
            diags = diags + padded_reads(self.kdef, descs, site)
        host.diagnostics.extend(diags)
        if any(d.is_error for d in diags):
            return SimOp(host, self.kdef.name)
        op = SimOp(host, self.kdef.name)
        for d in descs:
            if d.tensor_id is None:
                continue
            if d.role == "mut":
                host.borrows.borrow_mut(d.tensor_id, op, site, op.description)
            elif d.role == "shared":
                host.borrows.borrow_shared(d.tensor_id, op, site, op.description)
        return op


class SimHost:
    """Runs a launch snippet's statements one by one; kernels it defines become launchers."""

    def __init__(self, filename: str):
        self.filename = filename
        self.borrows = BorrowState()
        self.diagnostics: list[Diagnostic] = []
        self._ptr = 0x7F3A_0000_0000
        self._id = 0

    def new_id(self) -> int:
        """Every tensor object, views included, has its own id (as in the runtime); overlap
        between views is found from their byte ranges."""
        self._id += 1
        return self._id

    def tensor(self, shape, dtype="f32") -> SimTensor:
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        dt = _dtype(dtype)
        strides, acc = [], 1
        for n in reversed(shape):
            strides.insert(0, acc)
            acc *= n
        t = SimTensor(self, self._ptr, shape, strides, dt, self.new_id(), self.site(1))
        self._ptr += ((acc * dt.itemsize + 0xFFFF) // 0x10000 + 1) * 0x10000
        return t

    def site(self, depth: int) -> Span | None:
        frame = sys._getframe(depth + 1)
        while frame is not None and frame.f_code.co_filename != self.filename:
            frame = frame.f_back
        if frame is None:
            return None
        try:
            import inspect
            pos = inspect.getframeinfo(frame).positions
        except Exception:
            pos = None
        if pos is not None and pos.lineno is not None:
            return Span(self.filename, pos.lineno, pos.col_offset or 0, pos.end_lineno,
                        pos.end_col_offset)
        return Span(self.filename, frame.f_lineno, 0)

    def use(self, t: SimTensor, how: str) -> None:
        site = self.site(2)
        name = self._name_at(site)
        d = self.borrows.check_use(t.tensor_id, how, site, name)
        if d is not None:
            self.diagnostics.append(d)

    def _name_at(self, site: Span | None) -> str | None:
        if site is None:
            return None
        text = linecache.getline(site.filename, site.line)
        m = re.match(r"\s*(?:\w+\s*=\s*)?([A-Za-z_]\w*)\.\w+\(", text[site.col:] if
                     site.col < len(text) else text)
        return m.group(1) if m else None

    def run(self, text: str) -> list[Diagnostic]:
        source = KernelSource(text, self.filename)
        source.register()
        kdefs = {k.name: k for k in parse_kernels(source, all_functions=True)}
        ns: dict = {name: getattr(lang, name) for name in lang.__all__}
        ns.update({"tensor": self.tensor, "__name__": "__catalog__"})
        tree = ast.parse(text, self.filename)
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name in kdefs:
                ns[stmt.name] = SimKernel(self, kdefs[stmt.name])
                continue
            code = compile(ast.Module([stmt], []), self.filename, "exec")
            exec(code, ns)
        return self.diagnostics


def run_example(kind: str, text: str, filename: str) -> list[Diagnostic]:
    """The diagnostics of one catalog example."""
    if kind in ("kernel", "fix"):
        return check_source(text, filename)
    if kind in ("library", "library-fix"):
        return run_library_call(text, filename)
    return SimHost(filename).run(text)


def run_library_call(text: str, filename: str) -> list[Diagnostic]:
    """Run a snippet that calls the kernel library on the simulator: the diagnostics of the
    error it raises (none if it runs)."""
    _backend = importlib.import_module("cutile_lab.runtime.backend")
    KernelSource(text, filename).register()
    before = _backend._explicit
    _backend.set_backend("sim")
    try:
        exec(compile(text, filename, "exec"), {"__name__": "__catalog__"})
    except KernelDiagnosticsError as e:
        return list(e.diagnostics)
    finally:
        _backend.set_backend(before)
    return []


def example_filename(code: str, kind: str) -> str:
    return f"{code.lower()}{'_fixed' if 'fix' in kind else ''}.py"


def render_example(code: str, ex: Example) -> str:
    diags = run_example(ex.kind, ex.text, example_filename(code, ex.kind))
    return render_text(diags).rstrip("\n") or "(no diagnostics)"


TABLE_MARK = "<!-- codes-table -->"


def codes_table_rows() -> list[str]:
    return [f"| [{c.code}](#{c.code.lower()}) | {c.level} | {c.severity} | "
            f"{c.title.replace('|', '/')} |" for c in CODES.values()]


def regenerate(text: str) -> str:
    """The catalog with the table of codes and every rendered block (```text after a bad
    example) brought up to date."""
    lines = text.split("\n")
    if TABLE_MARK in lines:
        k = lines.index(TABLE_MARK)
        start = k
        while start > 0 and lines[start - 1].startswith("| [TL"):
            start -= 1
        lines[start:k] = codes_table_rows()
        text = "\n".join(lines)
    entries = parse_catalog(text)
    edits: list[tuple[int, int, list[str]]] = []   # replace lines[a:b] with new lines
    for entry in entries:
        for ex in entry.examples:
            if ex.kind not in BAD_KINDS:
                continue
            rendered = render_example(entry.code, ex).split("\n")
            block = ["```text"] + rendered + ["```"]
            # an existing rendered block: the next non-blank line after the example is ```text
            k = ex.end + 1
            while k < len(lines) and not lines[k].strip():
                k += 1
            if k < len(lines) and lines[k].strip() == "```text":
                close = k + 1
                while close < len(lines) and lines[close].rstrip() != "```":
                    close += 1
                edits.append((k, close + 1, block))
            else:
                edits.append((ex.end + 1, ex.end + 1, [""] + block))
    for a, b, new in sorted(edits, reverse=True):
        lines[a:b] = new
    return "\n".join(lines)

