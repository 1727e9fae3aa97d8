"""The values a policy is made of: durations, amounts, bounds, and the checks that read them.

Shared by the records (:mod:`loomc.policy.models`, whose checks are here) and their pydantic
twins (:mod:`loomc.policy.pydantic_models`, which call ``_duration``/``_decimal`` as before
validators), so the parsing of a duration or an amount is written once.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any, Literal

from loomc.policy.record import Check, Unsure
from loomc.units import parse_duration_ms

ENV_REF = re.compile(r"^env:[A-Za-z_][A-Za-z0-9_]*$")

ProviderType = Literal["mock", "openai-compatible", "openrouter", "lmstudio", "dot", "ollama"]
"""`openrouter`, `lmstudio` and `dot` are presets of the OpenAI-compatible wire protocol."""


MAX_AMOUNT = 10**15
"""The largest amount, duration (ms) or count a policy may give (docs/diagnostics.md)."""


def _duration(value: Any) -> Any:
    if isinstance(value, str):
        if len(value) > 40 or not re.match(DURATION_PATTERN, value):
            raise ValueError(f"not a duration: {value[:24]!r} (use e.g. 45s, 1500ms, 2min)")
        try:
            return parse_duration_ms(value)
        except ArithmeticError as exc:  # decimal.InvalidOperation is one
            raise ValueError(
                f"not a duration: {value[:24]!r} (use e.g. 45s, 1500ms, 2min)"
            ) from exc
    return value


def _decimal(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip().lstrip("$").replace("_", "")
        if len(text) > 40:
            raise ValueError("a number of more than 40 characters")
        try:
            value = Decimal(text)
        except ArithmeticError as exc:  # decimal.InvalidOperation is one
            raise ValueError(f"not a number: {value[:24]!r}") from exc
    elif isinstance(value, float):
        value = Decimal(repr(value))  # 0.1 stays 0.1, not 0.1000000000000000055...
    if isinstance(value, Decimal) and not value.is_finite():
        raise ValueError("a finite number is required")
    return value


# The JSON Schema (`loomc schema`) describes what users write, not the parsed type: a duration
# is milliseconds or a string with a unit, an amount a number or a string such as "$0.08".
# Validators and editors run these on whatever a policy holds, most with a backtracking engine
# (ECMAScript's, Python's: no possessive runs), so no two whitespace runs may be adjacent: in
# `\s*\$?\s*` and `\s*(min|ms|s)?\s*$`, a long run of spaces that ended in the wrong character
# was split between the two runs every way (" " * 20,000 + "x" took ~23 s as an amount). The
# optional part now carries its own trailing run; the strings matched, and the groups, are the
# same (tests/compiler/test_policy_schema.py).
DURATION_PATTERN = r"^\s*([0-9][0-9_]*(\.[0-9_]*)?|\.[0-9][0-9_]*)\s*(?:(min|ms|s)\s*)?$"
AMOUNT_PATTERN = r"^\s*(?:\$\s*)?([0-9][0-9_]*(\.[0-9_]*)?|\.[0-9][0-9_]*)\s*$"
_DURATION_SCHEMA = {
    "anyOf": [
        {"type": "integer", "minimum": 0},
        {"type": "string", "pattern": DURATION_PATTERN},
    ],
    "description": 'milliseconds, or a number with a unit: 1500, "1_500ms", "20s", "1.5min"',
}
_AMOUNT_SCHEMA = {
    "anyOf": [
        {"type": "number", "minimum": 0},
        {"type": "string", "pattern": AMOUNT_PATTERN},
    ],
    "description": 'a non-negative amount: 2, 0.08, "$0.08", "1_000"',
}


# --- checks of the numbers: sure only of in-range values of the exact type -------------------


def integer(ge: int | None = None) -> Check:
    """An ``int`` (not a bool) within bounds and within ``MAX_AMOUNT`` (the ``_bounded`` rule)."""

    def run(value: Any) -> Any:
        if type(value) is int and abs(value) <= MAX_AMOUNT and (ge is None or value >= ge):
            return value
        raise Unsure

    return run


def number(ge: float | None = None, le: float | None = None) -> Check:
    """A finite float (an int becomes one, as pydantic's lax mode does) within bounds."""

    def run(value: Any) -> Any:
        if type(value) is int and abs(value) <= 2**53:
            value = float(value)
        if type(value) is not float or not math.isfinite(value) or abs(value) > MAX_AMOUNT:
            raise Unsure
        if (ge is not None and value < ge) or (le is not None and value > le):
            raise Unsure
        return value

    return run


def duration(value: Any) -> Any:
    """``DurationMs``: milliseconds, or a string with a unit (``_duration``), 0..MAX_AMOUNT."""
    if type(value) is str:
        try:
            value = _duration(value)
        except ValueError:
            raise Unsure from None
    if type(value) is int and 0 <= value <= MAX_AMOUNT:
        return value
    raise Unsure


def amount(value: Any) -> Any:
    """``Amount``: a finite Decimal 0..MAX_AMOUNT from a string, float, int or Decimal."""
    if type(value) is str or type(value) is float:
        try:
            value = _decimal(value)
        except ValueError:
            raise Unsure from None
    elif type(value) is int:
        value = Decimal(value)
    if type(value) is Decimal and value.is_finite() and 0 <= value <= MAX_AMOUNT:
        return value
    raise Unsure


_SURELY_COMPILES = re.compile(r"(?:[^.^$*+?{}\[\]\\|()]|\\[!-/:-@\[-`{-~ ]|\(\?s:\.\*\)|\.\*?)*")
"""Patterns that always compile: text without a regular-expression metacharacter, ASCII
punctuation escaped with a backslash (a literal, as ``re.escape`` writes it), ``.``, ``.*`` and
``(?s:.*)``, in any order (what the scripted responses of a mock provider are made of)."""


def _compiles(value: str) -> bool:
    """Whether a mock rule's pattern is a valid regular expression. Nearly all are plain or
    escaped text with wildcards, which always are: compiling ~50 of them at every
    ``loomc check`` cost ~7 ms of a ~110 ms check."""
    if _SURELY_COMPILES.fullmatch(value):
        return True
    try:
        re.compile(value)
    except (re.error, RecursionError, OverflowError):
        return False
    return True


def _has_provider(value: str) -> bool:
    return "/" in value and not value.startswith("/") and not value.endswith("/")


_NAME = re.compile(r"[A-Za-z0-9_.-]+")
