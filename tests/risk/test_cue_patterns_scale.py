"""Hostile prompts cost time linear in their length in the cue patterns (loomc/risk/cues.py).

``code:present`` once held ``\\w+\\(\\w*\\)`` without a word boundary: on a prompt of one long
word every position started a scan to the word's end, quadratic in the length (a 10 KB prompt
of "a" took 5 s of profiling, a 3 MB one would have taken hours), and ``[^)]*`` after a call's
name, ``[^`]{4,}`` and the ``where`` look-ahead scanned to the end of the prompt from every
occurrence. Each shape below is a worst case for one of them; at 200 KB a quadratic pattern
takes minutes, a linear one about a second.
"""

from __future__ import annotations

import pytest

from loomc.risk.cues import CUE_NAMES, FLOOR_NAMES, cues_of, floors_of

SIZE = 200_000
SHAPES = {
    "one long word": "a" * SIZE,
    "many short words": "a " * (SIZE // 2),
    "open calls": "word(" * (SIZE // 5),
    "dotted calls": "a.b(" * (SIZE // 4),
    "indented lines": ("x" * 50 + "\n  ") * (SIZE // 53),
    "backticks": "`aaaa " * (SIZE // 6),
    "subprocess calls": "subprocess.run(" * (SIZE // 15),
    "templates": "Template(" * (SIZE // 9),
    "seeded randoms": "random.seed(" * (SIZE // 12),
    "deletes on one line": "delete from t " * (SIZE // 14),
    "updates on one line": "update t set " * (SIZE // 13),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("shape", SHAPES)
def test_cue_patterns_do_not_backtrack_on_long_prompts(shape: str) -> None:
    """The bound is the timeout: a quadratic pattern takes minutes here."""
    prompt = SHAPES[shape]
    assert set(cues_of(prompt)) <= set(CUE_NAMES)
    assert set(floors_of(prompt)) <= set(FLOOR_NAMES)
