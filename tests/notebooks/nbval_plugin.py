"""A pytest plugin for the nbval run of the tutorial notebooks (``-p tests.notebooks.nbval_plugin``).

nbval compares every MIME type of every output except images. The lab's compile reports come
as three renderings of the same content: JSON for the JupyterLab extension, HTML, and plain
text. The JSON and HTML carry per-process details (element ids, compile times inside a dict,
which nbval's sanitizer cannot reach), so only the plain text is compared: it holds the
diagnostics, rustc-style, and the summary line. pandas tables are compared as text too.
"""
from __future__ import annotations

NOT_COMPARED = ("application/vnd.cutile-lab.report+json", "text/html")


def pytest_collection_modifyitems(session, config, items):
    for item in items:
        notebook = item.parent
        skip = getattr(notebook, "skip_compare", None)
        if skip is not None and NOT_COMPARED[0] not in skip:
            notebook.skip_compare = tuple(skip) + NOT_COMPARED
