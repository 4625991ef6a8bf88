"""The browser tests' session-wide JupyterLab server and the end-of-run note when they were
skipped (both in ``browser.py``)."""
from tests.extension.browser import lab, pytest_terminal_summary  # noqa: F401
