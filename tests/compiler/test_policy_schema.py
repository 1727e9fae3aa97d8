"""`loomc schema` describes what users write: every shipped policy validates with a real JSON
Schema validator, and what the loader refuses (a negative budget) the schema refuses too."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from deadline import deadline
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.cli.main import main
from loomc.policy.load import load_policy_text
from loomc.policy.values import AMOUNT_PATTERN, DURATION_PATTERN

ROOT = Path(__file__).resolve().parents[2]
POLICIES = sorted((ROOT / "policies").glob("*.yaml"))


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["schema"]) == 0
    schema = json.loads(out.getvalue())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _keywords(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = set(node)
        for key, value in node.items():
            if key not in ("properties", "$defs"):
                found |= _keywords(value)
            else:
                for sub in value.values():
                    found |= _keywords(sub)
        return found
    if isinstance(node, list):
        return set().union(*(_keywords(v) for v in node)) if node else set()
    return set()


def test_schema_uses_only_json_schema_keywords(validator: jsonschema.Draft202012Validator) -> None:
    """pydantic's `ge`/`le` are no JSON Schema keywords; a validator ignores them silently."""
    assert not _keywords(validator.schema) & {"ge", "le", "gt", "lt"}


@pytest.mark.parametrize("path", POLICIES, ids=lambda p: p.name)
def test_every_shipped_policy_validates(
    validator: jsonschema.Draft202012Validator, path: Path
) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(data)]
    assert not errors


def _policy(**tier: object) -> dict[str, object]:
    return {
        "version": 1,
        "providers": {"mock": {"type": "mock"}},
        "workers": {"w": {"model": "mock/m", "credits": "0.5", "timeout": "1.5min"}},
        "tiers": {"t": {"calls": 2, "latency": "20s", "cost": "$0.08", **tier}},
    }


@pytest.mark.parametrize(
    "tier",
    [
        {"credits": -5},
        {"credits": "-5"},
        {"cost": "$-1"},
        {"calls": -1},
        {"latency": "-20s"},
        {"latency": -1},
    ],
    ids=str,
)
def test_negative_budgets_are_refused_by_schema_and_loader(
    validator: jsonschema.Draft202012Validator, tier: dict[str, object]
) -> None:
    data = _policy(**tier)
    assert not validator.is_valid(data)
    source, diags = load_policy_text(yaml.safe_dump(data), "p.yaml")
    assert source is None or any(d.is_error for d in diags)


@pytest.mark.parametrize(
    "tier", [{"latency": "20 parsecs"}, {"cost": "five dollars"}, {"credits": "1e999"}], ids=str
)
def test_malformed_amounts_are_refused_by_schema(
    validator: jsonschema.Draft202012Validator, tier: dict[str, object]
) -> None:
    assert not validator.is_valid(_policy(**tier))


@pytest.mark.parametrize(
    "tier",
    [
        {"credits": 5},
        {"credits": "2.5"},
        {"credits": "1_000"},
        {"cost": 0.08},
        {"latency": 30000},
        {"latency": "1_500ms"},
        {"latency": "2min"},
    ],
    ids=str,
)
def test_written_forms_the_loader_accepts_validate(
    validator: jsonschema.Draft202012Validator, tier: dict[str, object]
) -> None:
    data = _policy(**tier)
    assert validator.is_valid(data), [e.message for e in validator.iter_errors(data)]
    source, diags = load_policy_text(yaml.safe_dump(data), "p.yaml")
    assert source is not None and not any(d.is_error for d in diags)


# The two string patterns as they were before 2026-12-06: two whitespace runs side by side, so
# a long run that ended in the wrong character was split between them every way (quadratic).
OLD_PATTERNS = {
    "duration": r"^\s*([0-9][0-9_]*(\.[0-9_]*)?|\.[0-9][0-9_]*)\s*(min|ms|s)?\s*$",
    "amount": r"^\s*\$?\s*([0-9][0-9_]*(\.[0-9_]*)?|\.[0-9][0-9_]*)\s*$",
}
NEW_PATTERNS = {"duration": DURATION_PATTERN, "amount": AMOUNT_PATTERN}
_WRITTEN = st.lists(
    st.sampled_from(
        ["1", "05", "_", ".", "$", "-", "m", "i", "n", "s", "ms", "min", "x", "e",
         " ", "  ", "\t", "\n", "\r", "\xa0", "\u2028", "\u0663"]
    ),
    max_size=14,
).map("".join)  # fmt: skip


def _found(pattern: str, text: str) -> tuple[object, ...]:
    """What the loader (`re.match`) and a JSON Schema validator (`re.search`) see."""
    return tuple(
        m and (m.span(), m.groups()) for m in (re.match(pattern, text), re.search(pattern, text))
    )


@settings(max_examples=1_000)
@given(_WRITTEN)
def test_the_string_patterns_match_as_before(text: str) -> None:
    for name, old in OLD_PATTERNS.items():
        assert _found(NEW_PATTERNS[name], text) == _found(old, text), name


@pytest.mark.parametrize(
    "tier",
    [
        {"credits": " " * 200_000 + "x"},  # before: ~23 s at 20,000 spaces
        {"cost": "$" + " " * 200_000 + "x"},
        {"latency": "1" + " " * 200_000 + "x"},
        {"latency": "1" + "_" * 200_000 + "x"},
    ],
    ids=lambda tier: f"{next(iter(tier))}: {next(iter(tier.values()))[:3]!r}...",
)
def test_hostile_strings_are_refused_by_schema_in_seconds(
    validator: jsonschema.Draft202012Validator, tier: dict[str, object]
) -> None:
    with deadline(30, "the schema's pattern"):
        assert not validator.is_valid(_policy(**tier))
