"""Explanations of diagnostic codes that travel with the package, like ``rustc --explain``.

Owns: finding the catalog of diagnostics (``docs/diagnostics.md``; a wheel carries it as
``cutile_lab/docs/diagnostics.md``, a checkout reads it from ``docs/``), cutting one code's entry
out of it, and giving that entry as Markdown, as terminal text and as an HTML fragment that
needs no stylesheet (``<details>`` and ``<pre>``). ``cutile-lab explain TL010``,
``%tile_explain TL010`` and the inline explanations of rendered diagnostics all read it here.

Reading the catalog's examples and running them through the pipeline is ``cutile_lab.catalog``'s
job; this module only reads text, so it stays cheap to import.
A code that cannot be explained raises ``CatalogLookupError`` (a ``LookupError`` with a help
line): this package sits below ``cutile_lab.errors``, so the command line and the notebook magic
turn it into their own error.
"""
from __future__ import annotations

import html
import re
from functools import lru_cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]
SHIPPED_CATALOG = _PACKAGE / "docs" / "diagnostics.md"
CHECKOUT_CATALOG = _PACKAGE.parent / "docs" / "diagnostics.md"

_ANCHOR = re.compile(r'^<a id="([a-z]+\d+)"></a>\s*$')
_HEADING = re.compile(r"^## ([A-Z]+\d+)\b")
_CODE = re.compile(r"^[A-Za-z]{2}\d{3}$")


class CatalogLookupError(LookupError):
    """A code that is not a code, not documented, or a catalog missing from the installation;
    ``message`` says which, ``help`` what to do."""

    def __init__(self, message: str, help: str):
        super().__init__(message)
        self.message = message
        self.help = help


def catalog_path() -> Path | None:
    """The catalog this installation reads: the one shipped in the package, else the
    checkout's ``docs/diagnostics.md``; None when neither exists."""
    for path in (SHIPPED_CATALOG, CHECKOUT_CATALOG):
        if path.is_file():
            return path
    return None


@lru_cache(maxsize=4)
def _entries(path: str, mtime_ns: int) -> dict[str, str]:
    """Every entry of the catalog at ``path``: code -> its Markdown (heading to the line before
    the next entry's anchor or heading)."""
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    out: dict[str, str] = {}
    code, start = None, 0

    def close(end: int) -> None:
        if code is not None:
            out[code] = "\n".join(lines[start:end]).strip() + "\n"

    in_fence = False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if _ANCHOR.match(line) or line.startswith(("# ", "## ")):
            close(i)       # an anchor, or any other section, ends the entry before it
            code = None
        m = _HEADING.match(line)
        if m:
            close(i)
            code, start = m.group(1), i
    close(len(lines))
    return out


def entries() -> dict[str, str]:
    """Every documented code's entry, as Markdown (empty when there is no catalog)."""
    path = catalog_path()
    if path is None:
        return {}
    return _entries(str(path), path.stat().st_mtime_ns)


def entry_markdown(code: str) -> str | None:
    """The catalog's entry for ``code`` (any case), as Markdown; None when it has none."""
    return entries().get(code.strip().upper())


def explain(code: str) -> str:
    """The entry for ``code`` as Markdown, or a ``CatalogLookupError`` that says what is
    known."""
    code = code.strip()
    if not _CODE.match(code):
        raise CatalogLookupError(f"`{code}` is not a diagnostic code",
                                 help="codes look like TL010: the part in brackets of "
                                      "`error[TL010]: ...`")
    text = entry_markdown(code)
    if text is not None:
        return text
    known = entries()
    if not known:
        raise CatalogLookupError("the catalog of diagnostics is missing from this installation "
                                 f"(looked for {SHIPPED_CATALOG} and {CHECKOUT_CATALOG})",
                                 help="reinstall cutile-lab from a wheel, or run from a checkout")
    near = sorted(c for c in known if c[:4] == code.upper()[:4]) or sorted(known)[:8]
    raise CatalogLookupError(f"no diagnostic code {code.upper()} is documented",
                             help=f"documented codes include {', '.join(near[:12])}; "
                                  "`cutile-lab explain --list` lists them all")


def explain_text(code: str) -> str:
    """The entry as terminal text: the Markdown as written (it reads as plain text), with the
    entry's heading underlined."""
    text = explain(code)
    head, _, rest = text.partition("\n")
    title = head.removeprefix("## ").strip()
    return f"{title}\n{'=' * min(len(title), 100)}\n{rest}"


def anchor(code: str) -> str:
    """The id of a code's inline explanation in HTML (``#cl-explain-tl010``)."""
    return f"cl-explain-{code.lower()}"


def explain_html(code: str) -> str:
    """A fold-out ``<details id="cl-explain-tl010">`` holding the entry as preformatted text;
    empty when the code has no entry. Readable without any stylesheet."""
    text = entry_markdown(code)
    if text is None:
        return ""
    return (f'<details id="{anchor(code)}" class="cl-explain">'
            f"<summary>what {html.escape(code.upper())} means and how to fix it</summary>"
            f"<pre>{html.escape(explain_text(code).rstrip())}</pre></details>")
