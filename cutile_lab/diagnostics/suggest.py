""""Did you mean ...?": the known name a misspelt one most likely stood for, for the help line
of an unknown-name diagnostic (the checker's, the notebook's, the options').
"""
from __future__ import annotations

import difflib
from typing import Iterable


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate ``name`` was most likely meant to be: one edit away (a typo, a swapped
    pair: ``lgo`` -> ``log``), two for longer names, else a close ``difflib`` match."""
    pool = sorted({c for c in candidates if c and c != name and not c.startswith("_")})
    limit = 1 if len(name) <= 4 else 2
    near = [(d, c) for c in pool if abs(len(c) - len(name)) <= limit
            for d in (edit_distance(name.lower(), c.lower()),) if d <= limit]
    if near:
        return min(near)[1]
    close = difflib.get_close_matches(name, pool, n=1, cutoff=0.72)
    if not close:
        lower = {c.lower(): c for c in pool}
        close = difflib.get_close_matches(name.lower(), list(lower), n=1, cutoff=0.72)
        close = [lower[c] for c in close]
    return close[0] if close else None


def edit_distance(a: str, b: str) -> int:
    """Damerau-Levenshtein distance (insert, delete, substitute, swap two neighbours)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[len(b)]
