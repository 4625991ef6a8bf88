"""Regenerate the rendered messages in docs/diagnostics.md by running the checker on each example.

    python docs/gen_diagnostics.py          # rewrite the catalog in place
    python docs/gen_diagnostics.py --check  # exit 1 if the catalog is out of date
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cutile_lab.catalog import regenerate  # noqa: E402

CATALOG = ROOT / "docs" / "diagnostics.md"


def main(argv: list[str]) -> int:
    text = CATALOG.read_text(encoding="utf-8")
    new = regenerate(text)
    if "--check" in argv:
        if new != text:
            print(f"{CATALOG} is out of date: run python docs/gen_diagnostics.py")
            return 1
        print(f"{CATALOG} is up to date")
        return 0
    if new != text:
        CATALOG.write_text(new, encoding="utf-8")
        print(f"updated {CATALOG}")
    else:
        print(f"{CATALOG} was already up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
