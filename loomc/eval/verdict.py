"""The judge's reply read as a verdict: the first JSON object that carries a score.

Model replies are hostile input: code fences, prose around the object, a score written as a
string, a float or ``8/10`` are all read; out-of-range scores are clamped, and anything else is
a ``VerdictParseError`` (the run then records a judge error, never a made-up score). Kept apart
from the judge's call (``judge.py``) so that parsing stays a pure function the fuzz tests reach.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from loomc.text import json_objects

PASS_SCORE = 70.0  # used only when the reply carries no usable "passed"


class VerdictParseError(ValueError):
    pass


@dataclass(frozen=True)
class Parsed:
    score: float
    passed: bool
    reason: str


# A judge's reply is model output, so both patterns are linear in it (2026-12-06): their
# whitespace runs are possessive (`\s*+`). A run that the rest of the pattern cannot follow
# was given back one character at a time, each retrying the rest: "```" and 80,000 newlines
# (or spaces) took ~110 s (~53 s), a score of "1", 80,000 spaces and an "x" ~34 s. Nothing
# the rest of a pattern can match starts inside such a run (a fence's text was its first
# non-space onward, or nothing; the `\n?` after the run never matched anything the run had
# not taken, so it is gone), so every reply matches exactly as before, spans and groups
# included (tests/eval/test_verdict_bounded.py).
_FENCE = re.compile(r"```(?:json|JSON)?\s*+(.*?)```", re.DOTALL)
_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*+(?:(%)|/\s*+(\d+(?:\.\d+)?))?\s*$")
_TRUE = {"true", "yes", "pass", "passed", "y", "1"}
_FALSE = {"false", "no", "fail", "failed", "n", "0"}


def _objects(text: str) -> list[dict[str, Any]]:
    """JSON objects in reading order: fenced blocks first, then any '{' that starts one."""
    sources = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    return [obj for src in sources for obj in json_objects(src)]


def _score(value: Any) -> float:
    if isinstance(value, bool) or value is None:
        raise VerdictParseError(f"score {value!r} is not a number")
    if isinstance(value, int | float):
        score = float(value)
    elif isinstance(value, str):
        m = _NUMBER.match(value)
        if m is None:
            raise VerdictParseError(f"score {value!r} is not a number")
        score = float(m.group(1))
        if m.group(3) is not None:
            denom = float(m.group(3))
            if denom <= 0:
                raise VerdictParseError(f"score {value!r} has a zero scale")
            score = score / denom * 100
    else:
        raise VerdictParseError(f"score {value!r} is not a number")
    if not math.isfinite(score):
        raise VerdictParseError(f"score {value!r} is not finite")
    return min(100.0, max(0.0, score))


def _passed(value: Any, score: float) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        low = value.strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
    return score >= PASS_SCORE


def parse_verdict(text: str) -> Parsed:
    """The first JSON object that carries a score; raises VerdictParseError otherwise."""
    objects = _objects(text)
    if not objects:
        raise VerdictParseError("no JSON object in the reply")
    obj = next((o for o in objects if "score" in o), None)
    if obj is None:
        raise VerdictParseError("the reply's JSON object has no 'score'")
    score = _score(obj["score"])
    reason = obj.get("reason", "")
    return Parsed(score, _passed(obj.get("passed"), score), str(reason or "")[:500])
