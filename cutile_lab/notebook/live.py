"""Live diagnostics: the kernel side of checking a ``%%tilekernel`` cell as the user types.

Owns: the Jupyter comm target ``cutile_lab.live`` that ``%load_ext cutile_lab`` registers. The
JupyterLab extension opens one comm per notebook and sends ``{"id", "code"}`` (the cell's whole
text) a moment after the user stops typing; the reply is ``{"id", "diagnostics": [...]}``,
each with ``code``, ``severity``, ``message``, ``help`` and a span in the cell's own numbering
(lines 1-based counting the ``%%tilekernel`` line, columns 0-based, ``end_col`` exclusive).

Checking only parses and type-checks: it never runs the cell's code, defines nothing and does
not compile, so it is safe to do on every pause in typing (a few milliseconds per kernel).
"""
from __future__ import annotations

from typing import Any

TARGET = "cutile_lab.live"
MAGIC = "%%tilekernel"


def check_cell(code: str, namespace: dict | None = None) -> list[dict[str, Any]]:
    """The diagnostics of a ``%%tilekernel`` cell, in the cell's numbering; [] for a cell of
    anything else."""
    from cutile_lab.checking import check_kernel
    from cutile_lab.errors import CutileLabError
    from cutile_lab.kernel import kernels_from_source
    from cutile_lab.notebook.diagnostics import error_to_diagnostic
    first, _, body = code.partition("\n")
    if not first.strip().startswith(MAGIC):
        return []
    filename = "<tilekernel-live>"
    namespace = namespace if namespace is not None else {}
    try:
        kernels = kernels_from_source(body, filename, globals_=namespace)
    except CutileLabError as e:
        return [_json(error_to_diagnostic(e))]
    except Exception:              # half-typed text the front end cannot make sense of
        return []
    out = []
    for kernel in kernels.values():
        try:
            diags = check_kernel(kernel.definition, namespace)
        except CutileLabError as e:
            diags = [error_to_diagnostic(e, kernel.definition.span)]
        except Exception:
            continue
        out.extend(_json(d) for d in diags)
    return out


def _json(d) -> dict[str, Any]:
    span = None
    if d.span is not None and d.span.line:
        line = d.span.line + 1                         # the %%tilekernel line comes first
        end_line = (d.span.end_line + 1) if d.span.end_line else line
        span = {"line": line, "col": d.span.col, "end_line": end_line,
                "end_col": d.span.end_col}
    return {"code": d.code, "severity": d.severity, "message": d.message, "help": d.help,
            "span": span}


def _on_open(shell):
    def opened(comm, open_msg) -> None:
        def on_msg(msg) -> None:
            data = (msg.get("content") or {}).get("data") or {}
            code = data.get("code")
            if not isinstance(code, str):
                return
            try:
                diags = check_cell(code, shell.user_ns)
            except Exception:        # never an error in the user's notebook from typing
                diags = []
            comm.send({"id": data.get("id"), "diagnostics": diags})
        comm.on_msg(on_msg)
    return opened


def register(shell) -> bool:
    """Register the comm target in a running ipykernel; False elsewhere (terminal IPython)."""
    if getattr(shell, "kernel", None) is None:
        return False
    try:
        from comm import get_comm_manager
        get_comm_manager().register_target(TARGET, _on_open(shell))
    except Exception:
        return False
    return True
