"""The catalog of diagnostics (docs/diagnostics.md) covers every code, its examples produce
exactly their code, its fixes produce nothing, and its rendered messages are current."""
from __future__ import annotations

from pathlib import Path

import pytest

from cutile_lab.catalog import example_filename, parse_catalog, regenerate, run_example
from cutile_lab.diagnostics import CODES

CATALOG = Path(__file__).resolve().parents[2] / "docs" / "diagnostics.md"
TEXT = CATALOG.read_text(encoding="utf-8")
ENTRIES = parse_catalog(TEXT)
EXAMPLES = [(e.code, ex) for e in ENTRIES for ex in e.examples]


def test_every_code_has_one_entry_with_its_anchor_in_order():
    codes = [e.code for e in ENTRIES]
    assert codes == list(CODES), "the catalog lists the codes of codes.py, in that order"
    for e in ENTRIES:
        assert e.anchor == e.code.lower(), f"{e.code}: put <a id=\"{e.code.lower()}\"></a> " \
                                           "right before its heading"


def test_every_entry_has_an_example_and_a_fix():
    for e in ENTRIES:
        if e.code == "TL099":      # internal errors have no example by nature
            continue
        kinds = {ex.kind for ex in e.examples}
        bad = CODES[e.code].level
        assert bad in kinds, f"{e.code} has no ```python {bad} example"
        assert ("fix" if bad == "kernel" else f"{bad}-fix") in kinds, f"{e.code} has no fix"


@pytest.mark.parametrize("code,example", EXAMPLES,
                         ids=[f"{c}-{ex.kind}" for c, ex in EXAMPLES])
def test_examples_produce_exactly_their_code(code, example):
    diags = run_example(example.kind, example.text, example_filename(code, example.kind))
    # an example with `with unsafe():` also gets its unchecked-block note (TL050)
    got = sorted({d.code for d in diags} - ({"TL050"} if code != "TL050" else set()))
    if example.kind in ("kernel", "launch", "library"):
        assert got == [code], [(d.code, d.message) for d in diags]
    else:
        assert got == [], [(d.code, d.message) for d in diags]


def test_rendered_messages_are_current():
    assert regenerate(TEXT) == TEXT, "run: python docs/gen_diagnostics.py"
