"""The checker's corpus: the kernels under ``tests/checking/corpus/``, one per file.

``good/NAME.py`` holds a kernel (with any module-level helpers and constants it uses) that must
check without an error or a warning; ``bad/NAME.py`` one that must produce exactly the codes its
header lists. A header line ``# expect: CODE LINE:COL`` names a diagnostic the file must produce,
with the line and 1-based column of its primary span in the file itself; every bad file has at
least one, and the first is the one the case is about. A good file may list notes it must
produce (``TL050``: an unchecked block). Adding a case is adding a file.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent / "corpus"
_EXPECT = re.compile(r"^#\s*expect:\s*(TL\d{3})\s+(\d+):(\d+)\s*$")


@dataclass(frozen=True)
class Bad:
    name: str
    code: str           # the first expected code: what the case is about
    line: int           # of its primary span, 1-based, in the file
    col: int            # 1-based
    text: str
    expect: tuple = ()  # every (code, line, col) the file must produce
    level: str = "kernel"


def expectations(text: str) -> tuple:
    out = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        m = _EXPECT.match(line)
        if m:
            out.append((m.group(1), int(m.group(2)), int(m.group(3))))
    return tuple(out)


def _load():
    good: dict[str, str] = {}
    good_expect: dict[str, tuple] = {}
    for path in sorted((HERE / "good").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        good[path.stem] = text
        good_expect[path.stem] = expectations(text)
    bad: list[Bad] = []
    for path in sorted((HERE / "bad").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        expect = expectations(text)
        if not expect:
            raise ValueError(f"{path}: a bad kernel needs a `# expect: CODE LINE:COL` header")
        code, line, col = expect[0]
        bad.append(Bad(path.stem, code, line, col, text, expect))
    return good, good_expect, bad


GOOD, GOOD_EXPECT, BAD = _load()
