"""CUDA C++ kernel signatures -> parameter ownership, read from the source text without a compiler.

Owns ``CudaSignature`` / ``CudaParam`` and ``parse_cuda_kernels``: finding each
``__global__ void name(...)`` in a CUDA C++ cell or string and reading what its signature says
about ownership. The rule is the one of the tile language, read off C++ types:

* ``const T*`` (or ``T const*``) is a **shared** input: the launch may pass it memory that other
  arguments read too;
* a pointer that is not const is **written** (``mut``): the launch must pass it memory no other
  argument touches;
* a value parameter (``int n``, ``float alpha``) is a **scalar**.

It is a small, honest parser, not a C++ front end: comments and string literals are blanked
(positions kept), the parameter list is split at top-level commas, and each parameter is one of
the forms above with a known element type. What it cannot read is an error saying so, with the
line: a template kernel (the launch could not know which instantiation to take), a parameter
it cannot classify (references, structs passed by value, pointers to pointers, arrays). A body
that casts a const parameter's constness away (``const_cast``, ``(float*)x``) is recorded in
``casts_away_const``: the kernel may write memory its signature calls shared, which is the
user's claim and is reported as unchecked.

Knows nothing of NVRTC, devices or launches (``compiling.nvrtc`` compiles, ``runtime.foreign``
launches).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from cutile_lab.diagnostics import Span
from cutile_lab.errors import LanguageError

Role = Literal["mut", "shared", "scalar"]

#: C++ element types the lab has a dtype for (spelling -> lab dtype name)
CTYPES = {
    "float": "f32", "double": "f64", "__half": "f16", "half": "f16",
    "__nv_bfloat16": "bf16", "nv_bfloat16": "bf16",
    "int": "i32", "signed int": "i32", "int32_t": "i32", "signed": "i32",
    "unsigned": "u32", "unsigned int": "u32", "uint32_t": "u32",
    "long long": "i64", "long long int": "i64", "int64_t": "i64", "long": "i64",
    "unsigned long long": "u64", "unsigned long": "u64", "uint64_t": "u64", "size_t": "u64",
    "short": "i16", "int16_t": "i16", "unsigned short": "u16", "uint16_t": "u16",
    "char": "i8", "signed char": "i8", "int8_t": "i8", "unsigned char": "u8", "uint8_t": "u8",
    "bool": "bool",
}
_QUALIFIERS = {"__restrict__", "__restrict", "restrict", "volatile", "__grid_constant__"}


@dataclass
class CudaParam:
    """One parameter: ``role`` from its type; ``dtype`` the lab name of the element (pointers)
    or of the value (scalars); ``span`` its text in the user's source."""

    name: str
    role: Role
    dtype: str
    ctype: str                   # the type as written, e.g. "const float* __restrict__"
    span: Span | None = None
    restrict: bool = False
    # what frontend.Param has, so the launch-level diagnostics can name and point at it
    shape: tuple = (None,)
    default: object = None

    @property
    def is_array(self) -> bool:
        return self.role in ("mut", "shared")


@dataclass
class CudaSignature:
    """A ``__global__`` function: its name, parameters, whether it is ``extern "C"`` (its symbol
    is its name; otherwise NVRTC is asked for the mangled name) and where it is."""

    name: str
    params: list[CudaParam]
    extern_c: bool
    span: Span | None = None
    casts_away_const: list[tuple[str, Span]] = field(default_factory=list)

    @property
    def outputs(self) -> list[CudaParam]:
        return [p for p in self.params if p.role == "mut"]

    def param(self, name: str) -> CudaParam | None:
        return next((p for p in self.params if p.name == name), None)

    def describe(self) -> str:
        """``y: written f32*, x: shared f32*, n: i32`` — the ownership the launch checks."""
        words = {"mut": "written", "shared": "shared"}
        return ", ".join(f"{p.name}: {words[p.role]} {p.dtype}*" if p.is_array else
                         f"{p.name}: {p.dtype}" for p in self.params)


def blank_comments(text: str) -> str:
    """``text`` with comments and string/char literals replaced by spaces (newlines kept), so
    that offsets still point at the user's text."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out[i:j] = " " * (j - i)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out[i:j] = [ch if ch == "\n" else " " for ch in text[i:j]]
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            # keep the quotes of "C" (extern "C" is read from the blanked text)
            if text[i:j] != '"C"':
                out[i + 1:j - 1] = " " * max(0, j - i - 2)
            i = j
        else:
            i += 1
    return "".join(out)


_GLOBAL = re.compile(r"\b__global__\b")
_IDENT = re.compile(r"[A-Za-z_]\w*")


class _Text:
    """Offsets of ``text`` as (line, col) of the user's file (``line_offset`` lines before)."""

    def __init__(self, text: str, filename: str, line_offset: int):
        self.filename = filename
        self.line_offset = line_offset
        self.starts = [0]
        for m in re.finditer("\n", text):
            self.starts.append(m.end())

    def pos(self, offset: int) -> tuple[int, int]:
        import bisect
        i = bisect.bisect_right(self.starts, offset) - 1
        return i + 1 + self.line_offset, offset - self.starts[i]

    def span(self, start: int, end: int) -> Span:
        line, col = self.pos(start)
        end_line, end_col = self.pos(end)
        return Span(self.filename, line, col, end_line, end_col)


def parse_cuda_kernels(text: str, filename: str = "<cuda>", line_offset: int = 0
                       ) -> list[CudaSignature]:
    """Every ``__global__`` function defined in ``text``, in order. Raises ``LanguageError`` at
    the line of a signature it cannot read (a template kernel, an unknown parameter type)."""
    clean = blank_comments(text)
    where = _Text(text, filename, line_offset)
    out = []
    for m in _GLOBAL.finditer(clean):
        sig = _signature_at(clean, m, where)
        if sig is not None:
            out.append(sig)
    return out


def _statement_start(clean: str, at: int) -> int:
    """Where the declaration holding offset ``at`` starts (after the previous ``;``, ``}`` or
    ``{``, or a preprocessor line)."""
    i = at
    while i > 0 and clean[i - 1] not in ";{}":
        i -= 1
    # a preprocessor line in between ends there
    k = clean.rfind("#", i, at)
    if k >= 0:
        nl = clean.find("\n", k)
        if nl >= 0 and nl < at:
            i = nl + 1
    return i


def _signature_at(clean: str, m: re.Match, where: _Text) -> CudaSignature | None:
    start = _statement_start(clean, m.start())
    head = clean[start:m.start()]
    paren = clean.find("(", m.end())
    if paren < 0:
        return None
    decl = clean[m.end():paren]
    names = _IDENT.findall(decl)
    while names and names[-1] == "__launch_bounds__":     # __launch_bounds__(256) before the name
        end = _matching(clean, paren)
        paren = clean.find("(", end + 1) if end > 0 else -1
        if paren < 0:
            return None
        decl = clean[m.end():paren]
        names = _IDENT.findall(decl)
    if not names:
        return None
    name = names[-1]
    name_at = m.end() + decl.rfind(name)
    close = _matching(clean, paren)
    if close < 0:
        raise LanguageError(f"the parameter list of `{name}` is not closed",
                            span=where.span(name_at, name_at + len(name)),
                            help="close the parenthesis of the signature")
    body_at = close + 1
    while body_at < len(clean) and clean[body_at] in " \t\r\n":
        body_at += 1
    # skip __launch_bounds__(...) and similar attributes between ) and {
    rest = clean[body_at:]
    attr = re.match(r"__launch_bounds__\s*\(", rest)
    if attr:
        end = _matching(clean, body_at + attr.end() - 1)
        body_at = end + 1 if end > 0 else body_at
        while body_at < len(clean) and clean[body_at] in " \t\r\n":
            body_at += 1
    if body_at >= len(clean) or clean[body_at] != "{":
        return None        # a declaration, not a definition
    span = where.span(name_at, name_at + len(name))
    everything = head + clean[m.start():paren]
    if re.search(r"\btemplate\b", head) or "<" in decl:
        raise LanguageError(
            f"`{name}` is a template kernel: the lab launches one concrete kernel",
            span=span,
            help="write the instantiation you want as a kernel of its own, e.g. "
                 f"`extern \"C\" __global__ void {name}_f32(const float* x, ...)`, and call the "
                 "template from it")
    if "void" not in _IDENT.findall(decl):
        raise LanguageError(f"`{name}` is `__global__` but does not return `void`", span=span,
                            help="a kernel returns nothing: write its results through pointers")
    extern_c = bool(re.search(r'\bextern\s+"C"', everything)) or _in_extern_c_block(clean, start)
    params = _params(clean, paren, close, where, name)
    body_end = _matching(clean, body_at, "{", "}")
    body = clean[body_at:body_end if body_end > 0 else len(clean)]
    casts = _const_casts(body, body_at, params, where)
    return CudaSignature(name, params, extern_c, span, casts)


def _in_extern_c_block(clean: str, at: int) -> bool:
    """Whether ``at`` is inside an ``extern "C" { ... }`` block."""
    for m in re.finditer(r'\bextern\s+"C"\s*\{', clean[:at]):
        end = _matching(clean, m.end() - 1, "{", "}")
        if end < 0 or end > at:
            return True
    return False


def _matching(text: str, at: int, open_: str = "(", close: str = ")") -> int:
    depth = 0
    for i in range(at, len(text)):
        c = text[i]
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i
    return -1


def _params(clean: str, paren: int, close: int, where: _Text, kname: str) -> list[CudaParam]:
    inner = clean[paren + 1:close]
    if not inner.strip() or inner.strip() == "void":
        return []
    out: list[CudaParam] = []
    pos = paren + 1
    depth = 0
    pieces = []
    last = 0
    for i, c in enumerate(inner):
        if c in "(<[":
            depth += 1
        elif c in ")>]":
            depth -= 1
        elif c == "," and depth == 0:
            pieces.append((last, i))
            last = i + 1
    pieces.append((last, len(inner)))
    for a, b in pieces:
        raw = inner[a:b]
        lead = len(raw) - len(raw.lstrip())
        s, e = pos + a + lead, pos + a + len(raw.rstrip())
        out.append(_param(raw.strip(), where.span(s, e), kname))
    seen = set()
    for p in out:
        if p.name in seen:
            raise LanguageError(f"`{kname}` has two parameters named `{p.name}`", span=p.span)
        seen.add(p.name)
    return out


def _param(text: str, span: Span, kname: str) -> CudaParam:
    if "=" in text:
        raise LanguageError(f"a default value in the signature of `{kname}`", span=span,
                            help="kernel parameters have no defaults: pass every argument")
    if "&" in text or "[" in text:
        raise LanguageError(
            f"cannot read the parameter `{text}` of `{kname}`: references and arrays are not "
            "kernel parameters the lab can check", span=span,
            help="pass memory as a pointer (`const float* x` to read, `float* y` to write)")
    stars = text.count("*")
    tokens = _IDENT.findall(text.replace("*", " * "))
    if not tokens:
        raise LanguageError(f"cannot read the parameter `{text}` of `{kname}`", span=span)
    name = tokens[-1]
    body = text[:text.rfind(name)]
    if not re.search(r"[\s*]$", body) and body:
        raise LanguageError(f"cannot read the parameter `{text}` of `{kname}`", span=span)
    restrict = any(q in ("__restrict__", "__restrict", "restrict") for q in _IDENT.findall(body))
    if stars > 1:
        raise LanguageError(
            f"`{name}` is a pointer to a pointer: the lab cannot know what memory it reaches",
            span=span, help="pass each array as a pointer parameter of its own")
    # const of the pointee: a const before the '*' (const T* / T const*); const after it is the
    # pointer's own constness and does not make the memory read-only
    before, _, after = body.partition("*") if stars else (body, "", "")
    words = [w for w in _IDENT.findall(before) if w not in _QUALIFIERS]
    const = "const" in words
    words = [w for w in words if w != "const"]
    base = " ".join(words)
    dtype = CTYPES.get(base)
    if dtype is None:
        known = ", ".join(sorted({k for k in CTYPES if " " not in k}))
        raise LanguageError(
            f"`{name}` has the type `{base or text}`, which the lab has no dtype for",
            span=span,
            help=f"use one of: {known} (pointers to them for arrays)")
    if stars:
        return CudaParam(name, "shared" if const else "mut", dtype, text[:text.rfind(name)]
                         .strip(), span, restrict)
    return CudaParam(name, "scalar", dtype, text[:text.rfind(name)].strip(), span)


def _const_casts(body: str, offset: int, params: list[CudaParam], where: _Text
                 ) -> list[tuple[str, Span]]:
    """Places where the body takes the constness of a shared parameter away."""
    shared = {p.name for p in params if p.role == "shared"}
    hits = []
    for m in re.finditer(r"\bconst_cast\s*<[^>]*>\s*\(\s*([A-Za-z_]\w*)", body):
        if m.group(1) in shared or not shared:
            hits.append((m.group(1), where.span(offset + m.start(), offset + m.end())))
    for m in re.finditer(r"\(\s*(?!const\b)[A-Za-z_][\w\s]*\*\s*\)\s*\(?\s*([A-Za-z_]\w*)", body):
        if m.group(1) in shared:
            hits.append((m.group(1), where.span(offset + m.start(), offset + m.end())))
    return hits


__all__ = ["CudaParam", "CudaSignature", "parse_cuda_kernels", "blank_comments", "CTYPES"]
