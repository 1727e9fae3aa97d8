"""Hostile judge replies: the verdict's patterns stay linear in the reply's length.

A judge's reply is model output. ``loomc.eval.verdict`` reads it with two patterns whose
whitespace runs gave back one character at a time, each retrying the rest, when what followed
could not match: "```" and a long run of newlines, or a score "1" with a long run of spaces
and an "x", took minutes. The runs are possessive now; the tests below hold the patterns to
matching exactly as before and to finishing on those shapes.
"""

from __future__ import annotations

import json
import re

import pytest
from deadline import deadline
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.eval.verdict import _FENCE, _NUMBER, VerdictParseError, parse_verdict

# As they were before 2026-12-06.
OLD_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
OLD_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(?:(%)|/\s*(\d+(?:\.\d+)?))?\s*$")

_REPLY = st.lists(
    st.sampled_from(
        ["`", "```", "json", "JSON", "js", " ", "\n", "\r\n", "\t", "\u2028", "{", "}", "a", '"']
    ),
    max_size=30,
).map("".join)
_SCORE = st.lists(
    st.sampled_from(["1", "07", "-", ".", "5", "%", "/", " ", "\n", "\t", "\xa0", "x", "\u0663"]),
    max_size=16,
).map("".join)


def _fences(rx: re.Pattern[str], text: str) -> list[tuple[tuple[int, int], str]]:
    return [(m.span(), m.group(1)) for m in rx.finditer(text)]


def _number(rx: re.Pattern[str], text: str) -> tuple[object, ...] | None:
    m = rx.match(text)
    return None if m is None else (m.span(), m.groups())


@settings(max_examples=1_000)
@given(_REPLY)
def test_the_fence_matches_as_before(text: str) -> None:
    assert _fences(_FENCE, text) == _fences(OLD_FENCE, text)


@settings(max_examples=1_000)
@given(_SCORE)
def test_the_score_number_matches_as_before(text: str) -> None:
    assert _number(_NUMBER, text) == _number(OLD_NUMBER, text)


HOSTILE = {
    "a fence, then newlines": "```" + "\n" * 200_000,  # before: ~110 s at 80,000
    "a fence, then spaces": "```json" + " " * 200_000,  # before: ~53 s at 80,000
    "fences": "``` " * 50_000,
    "a score, then spaces": json.dumps({"score": "1" + " " * 200_000 + "x"}),  # ~34 s at 80k
    "a score, a slash, then spaces": json.dumps({"score": "1/" + " " * 200_000 + "x"}),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_replies_are_read_in_seconds_not_hours(name: str) -> None:
    # a quadratic pattern raises here instead of running for hours
    with deadline(30, name), pytest.raises(VerdictParseError):
        parse_verdict(HOSTILE[name])
