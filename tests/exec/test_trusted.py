"""`trusted` builds the runtime's own result models without validating them: each instance must
be the one validation builds (equal, same fields set, same JSON, same private state), or a
receipt, a journal line or a hash would change."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.exec.result import (
    BudgetReport,
    LimitStop,
    ModelUsage,
    RunResult,
    StepRecord,
    StepStatus,
    StepUsage,
    StopReason,
    trusted,
)
from loomc.units import Budget, Dimension, Usage

money = st.decimals(min_value=0, max_value=10**6, places=4, allow_nan=False)
ints = st.integers(min_value=0, max_value=10**9)
text = st.text(max_size=20)
usage = st.builds(Usage, calls=ints, tokens=ints, credits=money, cost=money, latency_ms=ints)
budget = st.builds(
    Budget,
    calls=st.none() | ints,
    tokens=st.none() | ints,
    credits=st.none() | money,
    cost=st.none() | money,
    latency_ms=st.none() | ints,
)


def optional(values: dict[str, Any], draw: st.DrawFn, **extra: st.SearchStrategy[Any]) -> None:
    """Adds some of ``extra`` (left out, a field takes its default both ways)."""
    for name, strategy in extra.items():
        if draw(st.booleans()):
            values[name] = draw(strategy)


@st.composite
def step_records(draw: st.DrawFn) -> dict[str, Any]:
    values: dict[str, Any] = {
        "id": draw(text),
        "role": draw(text),
        "worker": draw(text),
        "model": draw(text),
        "status": draw(st.sampled_from(StepStatus)),
    }
    optional(
        values,
        draw,
        access=st.lists(text, max_size=3),
        reason=st.none() | text,
        elapsed_ms=ints,
        attempts=ints,
        usage=st.builds(
            StepUsage,
            prompt_tokens=ints,
            completion_tokens=ints,
            total_tokens=ints,
            estimated=st.booleans(),
        ),
        cost=st.none() | money,
        credits=st.none() | money,
        reserved=st.none() | usage,
        output=st.none() | text,
    )
    return values


@st.composite
def reports(draw: st.DrawFn) -> dict[str, Any]:
    values: dict[str, Any] = {"limits": draw(budget), "used": draw(usage)}
    optional(values, draw, reserved_peak=st.none() | usage, limited=st.booleans())
    return values


@st.composite
def limit_stops(draw: st.DrawFn) -> dict[str, Any]:
    values: dict[str, Any] = {
        "dimension": draw(st.sampled_from(Dimension)),
        "needed": draw(money),
        "left": draw(money),
        "ceiling": draw(money),
    }
    optional(values, draw, step=st.none() | text, source=text)
    return values


@st.composite
def model_usages(draw: st.DrawFn) -> dict[str, Any]:
    values: dict[str, Any] = {}
    optional(
        values,
        draw,
        calls=ints,
        prompt_tokens=ints,
        completion_tokens=ints,
        tokens=ints,
        tokens_estimated=st.booleans(),
        credits=st.none() | money,
        estimated_credits=money,
        cost=st.none() | money,
    )
    return values


@st.composite
def run_results(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """The same run twice: nested models built by validation, and by ``trusted``."""
    steps = draw(st.lists(step_records(), max_size=3))
    report = draw(reports())
    models = draw(st.dictionaries(text, model_usages(), max_size=2))
    stop = draw(st.none() | limit_stops())
    values: dict[str, Any] = {
        "answer": draw(text),
        "pipeline": draw(text),
        "tier": draw(st.none() | text),
        "calls": draw(ints),
        "escalated": draw(st.booleans()),
        "escalation_reason": draw(st.none() | text),
        "stop_reason": draw(st.sampled_from(StopReason)),
        "receipt_hash": draw(text),
    }
    optional(
        values,
        draw,
        risk=st.dictionaries(text, text, max_size=2),
        elapsed_ms=ints,
        cost=st.none() | money,
        missing_pricing=st.lists(text, max_size=2),
        credits=st.none() | money,
        estimated_credits=money,
        tokens=ints,
        error=st.none() | text,
        warnings=st.lists(st.dictionaries(text, text, max_size=2), max_size=2),
    )
    validated = {
        **values,
        "steps": [StepRecord(**s) for s in steps],
        "budget": BudgetReport(**report),
        "models": {k: ModelUsage(**m) for k, m in models.items()},
        "limited_by": None if stop is None else LimitStop(**stop),
    }
    fast = {
        **values,
        "steps": [trusted(StepRecord, **s) for s in steps],
        "budget": trusted(BudgetReport, **report),
        "models": {k: trusted(ModelUsage, **m) for k, m in models.items()},
        "limited_by": None if stop is None else trusted(LimitStop, **stop),
    }
    return validated, fast


def same(validated: Any, fast: Any) -> None:
    assert type(fast) is type(validated)
    assert fast == validated
    assert fast.model_fields_set == validated.model_fields_set
    assert fast.__pydantic_private__ == validated.__pydantic_private__
    assert fast.model_dump_json() == validated.model_dump_json()
    assert fast.model_dump() == validated.model_dump()


@settings(max_examples=150, deadline=None)
@given(step_records())
def test_step_record(values: dict[str, Any]) -> None:
    same(StepRecord(**values), trusted(StepRecord, **values))


@settings(max_examples=100, deadline=None)
@given(reports(), limit_stops(), model_usages())
def test_report_stop_and_model_usage(
    report: dict[str, Any], stop: dict[str, Any], model: dict[str, Any]
) -> None:
    same(BudgetReport(**report), trusted(BudgetReport, **report))
    same(LimitStop(**stop), trusted(LimitStop, **stop))
    same(ModelUsage(**model), trusted(ModelUsage, **model))


@settings(max_examples=100, deadline=None)
@given(run_results())
def test_run_result(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
    validated, fast = pair
    result = RunResult(**validated)
    built = trusted(RunResult, **fast)
    same(result, built)
    # what a journal reads back is the same model again
    assert RunResult.model_validate_json(built.model_dump_json()) == result


def test_instances_do_not_share_mutable_defaults() -> None:
    a = trusted(StepRecord, id="a", role="r", worker="w", model="m", status=StepStatus.OK)
    b = trusted(StepRecord, id="b", role="r", worker="w", model="m", status=StepStatus.OK)
    a.access.append("web")
    assert b.access == [] and a.usage is not b.usage
    r1 = trusted(BudgetReport, limits=Budget(), used=Usage())
    r2 = trusted(BudgetReport, limits=Budget(), used=Usage())
    assert r1._axes is not r2._axes


def test_unknown_or_missing_fields_are_refused() -> None:
    with pytest.raises(TypeError, match="unknown fields"):
        trusted(ModelUsage, calls=1, cals=2)
    with pytest.raises(TypeError, match="missing field 'id'"):
        trusted(StepRecord, role="r", worker="w", model="m", status=StepStatus.OK)
    assert trusted(ModelUsage).estimated_credits == Decimal(0)


@settings(max_examples=50, deadline=None)
@given(
    run_results(),
    st.none() | text,
    st.none() | st.booleans(),
    st.sampled_from(["ok", "budget-stopped"]),
)
def test_run_record(
    pair: tuple[dict[str, Any], dict[str, Any]],
    difficulty: str | None,
    expected: bool | None,
    status: str,
) -> None:
    """The eval's record of a run, as its runner builds it."""
    from loomc.eval.records import RunRecord

    validated, fast = pair
    values = {
        "case_id": "c1",
        "strategy": "lean",
        "iteration": 0,
        "difficulty": difficulty,
        "expected_escalation": expected,
        "status": status,
        "error": None,
        "answer": None,
    }
    same(
        RunRecord(**values, result=RunResult(**validated)),
        trusted(RunRecord, **values, result=trusted(RunResult, **fast)),
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(step_records(), max_size=4),
    st.text(),
    st.none() | st.text(),
    st.text(max_size=70),
)
def test_canonical_json_is_what_json_dumps_writes(
    steps: list[dict[str, Any]], pipeline: str, tier: str | None, answer_hash: str
) -> None:
    """The receipt hash is taken over these bytes: every receipt ever written depends on them."""
    import json

    from loomc.exec.receipt import canonical_json

    records = [StepRecord(**s) for s in steps]
    canonical = {
        "pipeline": pipeline,
        "tier": tier,
        "steps": [
            {
                "id": s.id,
                "worker": s.worker,
                "model": s.model,
                "access": s.access,
                "status": s.status,
                "attempts": s.attempts,
                "usage": s.usage.model_dump(),
            }
            for s in records
        ],
        "answer": answer_hash,
    }
    expected = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
    assert canonical_json(pipeline, tier, records, answer_hash) == expected
