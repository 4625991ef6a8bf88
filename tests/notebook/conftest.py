"""A real IPython ``InteractiveShell`` with ``%load_ext cutile_lab``, whose display output is
captured as MIME bundles, and a private compile cache per test."""
from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from cutile_lab.notebook.report import REPORT_MIME


class Cell:
    """What running one cell produced: the ExecutionResult, display bundles, stdout/stderr."""

    def __init__(self, result, captured):
        self.result = result
        self.bundles = [o.data for o in captured.outputs]
        self.stdout = captured.stdout
        self.stderr = captured.stderr

    @property
    def ok(self) -> bool:
        return self.result.success

    @property
    def error(self):
        return self.result.error_in_exec or self.result.error_before_exec

    @property
    def reports(self) -> list[dict]:
        return [b[REPORT_MIME] for b in self.bundles if REPORT_MIME in b]

    @property
    def report(self) -> dict:
        [r] = self.reports
        return r

    @property
    def html(self) -> str:
        return "\n".join(b.get("text/html", "") for b in self.bundles)

    @property
    def text(self) -> str:
        return "\n".join(b.get("text/plain", "") for b in self.bundles)


class Shell:
    def __init__(self, ip):
        self.ip = ip

    def run(self, code: str) -> Cell:
        with capture_output() as captured:
            result = self.ip.run_cell(code, store_history=True)
        return Cell(result, captured)

    @property
    def ns(self) -> dict:
        return self.ip.user_ns


@pytest.fixture(scope="session")
def _ipython():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "cutile_lab")
    return ip


@pytest.fixture
def shell(_ipython, tmp_path, monkeypatch):
    monkeypatch.setenv("CUTILE_LAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUTILE_LAB_NO_CACHE", raising=False)
    from cutile_lab.compiling import cache
    cache.default_cache().forget_memory()
    _ipython.reset(new_session=False)
    # %load_ext is idempotent; reset() cleared the namespace, so inject the names again
    from cutile_lab import _inject_names
    _inject_names(_ipython)
    yield Shell(_ipython)
    cache.default_cache().forget_memory()
