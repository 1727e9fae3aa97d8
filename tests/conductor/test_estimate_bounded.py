"""Hostile prompt text: the task estimate's patterns stay linear in the prompt's length.

``loomc.conductor.estimate`` reads the whole prompt (no whitespace cut, unlike the risk
profilers). Two of its patterns were quadratic: ``LISTED`` and ``CODE`` began with a ``^\\s*``
that read across newlines (every line of a run of blank lines rescanned the rest of the run),
and ``CODE``'s ``\\bSELECT\\b.+\\bFROM\\b`` rescanned the rest of a line from each of its
SELECTs. The rewritten patterns must decide as before on ordinary text; the tests below hold
them to that and to finishing on the shapes that took minutes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from deadline import deadline
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.conductor.estimate import CODE, IRREVERSIBLE, LISTED, _hits, estimate
from loomc.risk.base import RiskProfile

EVALS = Path(__file__).resolve().parents[2] / "evals"

# As they were before 2026-12-06.
OLD_LISTED = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+\S", re.MULTILINE)
OLD_CODE = re.compile(
    r"```|^(?: {4}|\t)\S|\bdef \w+\(|\bclass \w+\s*[:({]|\bfunction\s*\w*\(|=>"
    r"|^\s*(?:import|from) [\w.]+|\bSELECT\b.+\bFROM\b|[{};]\s*$",
    re.MULTILINE,
)

_PROMPTISH = st.lists(
    st.sampled_from(
        [
            "SELECT", "FROM", "select", "import", "from", "a", "x.y", "1", "12", ".", ")", "-",
            "*", "•", "{", ";", ":", "(", "def", "class", "function", "=>", "`", "```",
            " ", "  ", "    ", "\t", "\n", "\n\n", "\r", "\r\n", "\x0b", "\u2028", "\xa0",
        ]
    ),
    max_size=40,
).map("".join)  # fmt: skip


def _ends(rx: re.Pattern[str], text: str) -> list[int]:
    return [m.end() for m in rx.finditer(text)]


@settings(max_examples=1_000)
@given(_PROMPTISH)
def test_the_rewritten_patterns_decide_as_the_old_ones(text: str) -> None:
    assert (CODE.search(text) is not None) == (OLD_CODE.search(text) is not None)
    # `estimate` counts LISTED's matches: the same ones, ending at the same places
    assert _ends(LISTED, text) == _ends(OLD_LISTED, text)


def test_every_prompt_of_evals_is_read_alike() -> None:
    paths = sorted(EVALS.rglob("*.jsonl"))
    assert paths
    for path in paths:
        for line in path.read_text("utf-8").splitlines():
            row = json.loads(line) if line.strip() else {}
            prompt = str(row.get("prompt") or "") if isinstance(row, dict) else ""
            assert (CODE.search(prompt) is None) == (OLD_CODE.search(prompt) is None), path
            assert _ends(LISTED, prompt) == _ends(OLD_LISTED, prompt), path


HOSTILE = {
    "newlines": "\n" * 200_000,  # before: ~50 s at 80,000 (CODE), ~40 s at 40,000 (LISTED)
    "indented blank lines": " \n" * 100_000,
    "select words": "SELECT " * 30_000,  # before: ~11 s at 80,000 characters
    "a bullet, then blank lines": "-" + "\n" * 200_000,
    "spaces": " " * 200_000,
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_prompts_are_estimated_in_seconds_not_hours(name: str) -> None:
    risk = RiskProfile(level="low")
    with deadline(30, name):  # a quadratic pattern raises here instead of running for hours
        estimate(HOSTILE[name], risk, 1_000)


def _old_hits(rx: re.Pattern[str], text: str) -> list[str]:
    seen: list[str] = []  # as it was before 2026-12-06: a list, searched once per match
    for m in rx.finditer(text):
        word = m.group(0).lower()
        if word not in seen:
            seen.append(word)
    return seen


@given(st.lists(st.sampled_from(["delete", "Deleted", "DELETE", "wipe", "wiped", "x", " "])))
def test_hits_are_the_distinct_words_in_first_order(words: list[str]) -> None:
    text = " ".join(words)
    assert _hits(IRREVERSIBLE, text) == _old_hits(IRREVERSIBLE, text)


def test_a_prompt_of_distinct_cue_words_is_estimated_in_seconds() -> None:
    """Before: each match was looked for in a list of the words seen so far; 91,000 distinct
    words (1,000,000 characters) take ~80 s (0.52 s at 80,000 characters, quadratic)."""
    prompt = " ".join(f"delet{i:05d}" for i in range(91_000))
    with deadline(30, "distinct words"):
        estimate(prompt, RiskProfile(level="low"), 1_000)
