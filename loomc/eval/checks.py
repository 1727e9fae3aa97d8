"""Deterministic answer checks. String checks are case-insensitive, as in the reference
runtime's suites (their expected values are lower-case while answers are free prose)."""

from __future__ import annotations

import json
import re
from typing import Any

from loomc import userregex
from loomc.errors import LoomcError
from loomc.eval.records import CheckResult
from loomc.userregex import UserPatternError


class CheckError(LoomcError, ValueError):
    """A check definition is malformed."""


_VALUE = {"contains", "icontains", "not-contains", "regex", "equals"}
_VALUES = {"contains-any"}
_NONE = {"json-valid"}
CHECK_TYPES = sorted(_VALUE | _VALUES | _NONE)


def validate_check(chk: Any) -> None:
    if not isinstance(chk, dict):
        raise CheckError("a check must be an object")
    kind = chk.get("type")
    if kind not in CHECK_TYPES:
        raise CheckError(f"unknown check type {kind!r} (valid: {', '.join(CHECK_TYPES)})")
    if kind in _VALUE and not isinstance(chk.get("value"), str):
        raise CheckError(f"'{kind}' needs a string 'value'")
    if kind in _VALUES:
        vals = chk.get("values")
        if not isinstance(vals, list) or not vals or not all(isinstance(v, str) for v in vals):
            raise CheckError(f"'{kind}' needs a non-empty list of strings 'values'")
    if kind == "regex":
        try:
            re.compile(chk["value"])
        except re.error as exc:
            raise CheckError(f"invalid regex: {exc}") from None


def run_check(
    chk: dict[str, Any], answer: str, budget: userregex.MatchBudget | None = None
) -> CheckResult:
    """One check's result; a ``regex`` check's time comes from ``budget`` (its own 1 s when
    None)."""
    kind = str(chk["type"])
    low = answer.lower()
    passed: bool
    detail = ""
    if kind in ("contains", "icontains"):
        passed = str(chk["value"]).lower() in low
        detail = f"contains {chk['value']!r}"
    elif kind == "not-contains":
        passed = str(chk["value"]).lower() not in low
        detail = f"does not contain {chk['value']!r}"
    elif kind == "contains-any":
        hits = [v for v in chk["values"] if str(v).lower() in low]
        passed = bool(hits)
        detail = f"matched {hits[0]!r}" if hits else "none of the values found"
    elif kind == "regex":
        detail = f"regex {chk['value']!r}"
        ignorecase = bool(chk.get("ignoreCase", True))
        try:
            passed = (
                userregex.compile(str(chk["value"]), ignorecase=ignorecase).search(answer, budget)
                is not None
            )
        except UserPatternError as exc:  # the check fails; the eval goes on
            passed, detail = False, f"{detail}: {exc}"
    elif kind == "equals":
        passed = answer.strip().lower() == str(chk["value"]).strip().lower()
        detail = f"equals {chk['value']!r}"
    elif kind == "json-valid":
        try:
            json.loads(answer)
            passed = True
        except ValueError as exc:
            passed, detail = False, f"invalid JSON: {exc}"
    else:  # pragma: no cover - validate_check rejects these
        raise CheckError(f"unknown check type {kind!r}")
    return CheckResult(type=kind, passed=passed, detail=detail)


def run_checks(
    checks: list[dict[str, Any]] | tuple[dict[str, Any], ...], answer: str
) -> list[CheckResult]:
    """Every check of one answer; its ``regex`` checks share one time bound (1 s for the row,
    not 1 s each), and a check whose pattern finds the bound spent fails with that reason."""
    budget = userregex.MatchBudget()
    return [run_check(c, answer, budget) for c in checks]
