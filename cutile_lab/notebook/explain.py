"""``%tile_explain TL010``: a diagnostic code's catalog entry, inline in the notebook.

Owns only the line magic; the entry itself comes from ``cutile_lab.diagnostics.explain`` (the
catalog shipped in the package). Registered by ``%load_ext cutile_lab``.
"""
from __future__ import annotations


def tile_explain(line: str):
    """``%tile_explain TL010``: what a diagnostic code means, an example and its fix.
    ``%tile_explain`` alone lists the documented codes."""
    from IPython.core.error import UsageError
    from IPython.display import Markdown, display

    from cutile_lab.diagnostics import CODES
    from cutile_lab.diagnostics.explain import CatalogLookupError, entries, explain, explain_text
    code = line.strip()
    if not code:
        rows = [f"| `{c}` | {CODES[c].severity if c in CODES else ''} | "
                f"{CODES[c].title.replace('|', '/') if c in CODES else ''} |" for c in entries()]
        display(Markdown("| code | severity | title |\n|---|---|---|\n" + "\n".join(rows)))
        return None
    from cutile_lab.errors import error_code_text
    text = error_code_text(code)
    if text is not None:            # an error class's code (error[CL050]), not the catalog's
        display({"text/markdown": text, "text/plain": text}, raw=True)
        return None
    try:
        markdown = explain(code)
    except CatalogLookupError as e:
        raise UsageError(f"{e.message}; {e.help}") from None
    display({"text/markdown": markdown, "text/plain": explain_text(code)}, raw=True)
    return None


def register(ipython) -> None:
    ipython.register_magic_function(tile_explain, magic_kind="line", magic_name="tile_explain")
