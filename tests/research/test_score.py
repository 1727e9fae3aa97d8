"""§5.1–§5.6 scoring: every per-example branch on hand-built predictions, and the aggregation."""

from __future__ import annotations

import json
import math
from functools import cache
from typing import Any

import pytest

from loomc.conductor.outcome import build_candidate, enumerate_candidates, feasible, outcome
from loomc.conductor.outcome import utility as plan_utility
from loomc.conductor.plan import canonical_json
from loomc_research.v2.generator import generate
from loomc_research.v2.score import (
    Example,
    aggregate_scores,
    nearest_rank,
    rebuild_plan,
    schema_valid,
    score_prediction,
    score_row,
    summarize,
)

# The first row of the regenerated test.jsonl (CONDUCTOR-V2 §1.8)
TARGET = (
    '{"access":{"finalizer":["writer","reviewer"],"reviewer":["writer"],"writer":[]},'
    '"estimated_credits":16.946,"estimated_latency_ms":181187,"estimated_pass_rate":0.8044,'
    '"estimated_quality":0.9336,"finalizer":"worker_b","independent_verification":true,'
    '"max_calls":3,"max_credits":20.669,"max_latency_ms":216855,"policy":"strict",'
    '"reason_codes":["high_consequence","independent_evidence","independent_verification",'
    '"latency_constrained"],"reviewer":"worker_a","writer":"worker_c"}'
)
ORACLE_UTILITY = 81.36724


def _row() -> dict[str, Any]:
    label = json.loads(TARGET)
    return {
        "id": "synthetic-health_triage-000103",
        "family": "health_triage",
        "split": "test",
        "constraints": {
            "max_calls": 3,
            "max_credits": 20.669,
            "max_latency_ms": 216855,
            "minimum_quality": 0.8086,
        },
        "task": {
            "ambiguity": 0.6532,
            "category": "health",
            "complexity": 0.4228,
            "consequence": 0.9992,
            "evidence_need": 0.871,
            "family": "health_triage",
            "input_tokens": 7120,
            "reversibility": 0.0567,
            "risk": 0.8147,
            "summary": "Review a health guidance draft about private credentials for unsafe certainty.",
            "request_id": "synthetic-health_triage-000103",
        },
        "workers": [
            {
                "credits_per_call": 3.498,
                "id": "worker_a",
                "p95_latency_ms": 74039,
                "pass_rate": 0.8674,
                "provider_group": "provider_y",
                "quality": 0.8689,
                "strengths": ["reasoning", "review", "writing"],
            },
            {
                "credits_per_call": 12.468,
                "id": "worker_b",
                "p95_latency_ms": 76367,
                "pass_rate": 0.995,
                "provider_group": "provider_z",
                "quality": 0.9919,
                "strengths": ["implementation", "reasoning", "synthesis"],
            },
            {
                "credits_per_call": 0.98,
                "id": "worker_c",
                "p95_latency_ms": 30781,
                "pass_rate": 0.5632,
                "provider_group": "provider_x",
                "quality": 0.7231,
                "strengths": ["coding", "drafting", "speed"],
            },
        ],
        "label": label,
        "oracle": {
            "candidate_count": 15,
            "pass_rate": 0.8044,
            "quality": 0.9336,
            "quality_target_met": True,
            "utility": ORACLE_UTILITY,
        },
        "target": TARGET,
    }


@pytest.fixture
def example() -> Example:
    return Example.from_row(_row())


def _label(**over: Any) -> str:
    data = json.loads(TARGET)
    data.update(over)
    return json.dumps(data)


@cache
def _small(split: str, size: int) -> tuple[Example, ...]:
    corpus = generate(sizes=((split, size),))
    return tuple(Example.from_row(r) for r in corpus.splits[split])


def test_label_scores_perfectly(example: Example) -> None:
    rec = score_prediction(example, TARGET)
    for key in (
        "json_valid",
        "schema_valid",
        "plan_valid",
        "receipt_consistent",
        "constraint_satisfied",
        "policy_correct",
        "exact_plan",
        "quality_target_met",
    ):
        assert rec[key] is True, key
    assert rec["utility"] == ORACLE_UTILITY
    assert rec["utility_regret"] == 0.0
    assert rec["unsafe_under_escalation"] is False and rec["unnecessary_escalation"] is False
    assert (rec["predicted_quality"], rec["predicted_pass_rate"]) == (0.9336, 0.8044)
    assert (rec["predicted_calls"], rec["predicted_credits"], rec["predicted_latency_ms"]) == (
        3,
        16.946,
        181187,
    )
    assert rec["declared_quality_abs_error"] == 0.0 == rec["declared_pass_rate_abs_error"]


def test_no_json(example: Example) -> None:
    rec = score_prediction(example, "```\nSorry, I cannot produce a plan {not json}\n```")
    assert not any(
        rec[k]
        for k in (
            "json_valid",
            "schema_valid",
            "plan_valid",
            "receipt_consistent",
            "constraint_satisfied",
            "policy_correct",
            "exact_plan",
            "quality_target_met",
        )
    )
    assert rec["utility"] == -1000.0
    assert rec["utility_regret"] == 1000 + ORACLE_UTILITY  # not clipped, not rounded
    assert rec["unsafe_under_escalation"] is True  # risk 0.8147 >= 0.75
    assert rec["unnecessary_escalation"] is False
    assert rec["parsed"] is None
    assert all(rec[k] is None for k in rec if k.startswith(("predicted_", "declared_")))


def test_first_json_object_in_prose(example: Example) -> None:
    rec = score_prediction(example, f'Here is the plan: [1, 2] {TARGET}\ntrailing {{"x": 1}}')
    assert rec["exact_plan"] and rec["receipt_consistent"] and rec["utility_regret"] == 0.0


def test_invalid_plan_with_correct_policy_string(example: Example) -> None:
    rec = score_prediction(example, '{"policy": "strict", "writer": "worker_c"}')
    assert rec["json_valid"] is True
    assert rec["schema_valid"] is False
    assert rec["policy_correct"] is True  # a correct policy string counts
    assert rec["plan_valid"] is False and rec["exact_plan"] is False
    assert rec["receipt_consistent"] is False and rec["constraint_satisfied"] is False
    assert rec["utility_regret"] == 1000 + ORACLE_UTILITY
    assert rec["parsed"] == {"policy": "strict", "writer": "worker_c"}
    assert rec["predicted_policy"] is None
    # a full, schema-valid object whose roles break the plan rules
    bad = _label(finalizer=None)  # strict without a finalizer
    rec = score_prediction(example, bad)
    assert rec["schema_valid"] is True and rec["plan_valid"] is False and rec["policy_correct"]


@pytest.mark.parametrize(
    "parsed",
    [
        {"writer": "worker_a"},  # no policy
        {"policy": "lean"},  # no writer
        {"policy": "lean", "writer": "worker_d"},  # unknown worker
        {"policy": "lean", "writer": None},  # str(None) is not a worker id
        {"policy": "quick", "writer": "worker_a"},
        {"policy": "lean", "writer": "worker_a", "reviewer": "worker_b"},
        {"policy": "balanced", "writer": "worker_a"},
        {
            "policy": "balanced",
            "writer": "worker_a",
            "reviewer": "worker_b",
            "finalizer": "worker_c",
        },
        {"policy": "strict", "writer": "worker_a", "reviewer": "worker_b"},
        {"policy": "balanced", "writer": "worker_a", "reviewer": "worker_a"},
        {"policy": "strict", "writer": "worker_a", "reviewer": "worker_b", "finalizer": "worker_a"},
        {"policy": ["lean"], "writer": "worker_a"},
    ],
)
def test_rebuild_plan_rejects(example: Example, parsed: dict[str, Any]) -> None:
    assert rebuild_plan(parsed, example) is None


def test_rebuild_plan_recomputes_from_roles_only(example: Example) -> None:
    plan = rebuild_plan(
        {
            "policy": "balanced",
            "writer": "worker_c",
            "reviewer": "worker_a",
            "estimated_credits": 0,
            "finalizer": None,
        },
        example,
    )
    assert plan is not None
    assert (plan.calls, plan.estimated_credits, plan.estimated_latency_ms) == (2, 4.478, 104820)
    assert plan.independent_verification is True


@pytest.mark.parametrize(
    ("change", "consistent"),
    [
        ({"estimated_credits": 16.956}, False),
        ({"estimated_credits": 16.9465}, True),  # within 0.001
        ({"estimated_latency_ms": 181188}, False),  # exact
        ({"max_credits": 20.6695}, True),
        ({"max_credits": 20.67}, False),  # |20.67 - 20.669| is 0.0010000000000012 in binary
        ({"max_credits": 20.671}, False),
        ({"max_latency_ms": 216854}, False),
        ({"max_calls": 2}, False),
        ({"independent_verification": False}, False),
        (
            {"access": {"finalizer": ["reviewer", "writer"], "reviewer": ["writer"], "writer": []}},
            False,
        ),  # list order matters
        ({"estimated_quality": 0.5, "estimated_pass_rate": 0.2}, True),  # not part of the receipt
        ({"reason_codes": []}, True),
    ],
)
def test_receipt_consistency(example: Example, change: dict[str, Any], consistent: bool) -> None:
    rec = score_prediction(example, _label(**change))
    assert rec["plan_valid"] and rec["schema_valid"] and rec["exact_plan"]
    assert rec["receipt_consistent"] is consistent


def test_declared_errors_use_recomputed_outcome(example: Example) -> None:
    rec = score_prediction(example, _label(estimated_quality=0.9436, estimated_pass_rate=0.7))
    assert rec["declared_quality_abs_error"] == 0.01
    assert rec["declared_pass_rate_abs_error"] == 0.1044
    assert rec["predicted_quality"] == 0.9336  # recomputed, not declared


@pytest.mark.parametrize(
    "parsed",
    [
        {"reason_codes": None},
        {"max_calls": True},
        {"max_calls": 3.0},
        {"estimated_credits": "16.946"},
        {"estimated_quality": 1.2},
        {"independent_verification": 1},
        {"access": {"writer": [], "reviewer": ["writer"]}},
        {"access": {"writer": [], "reviewer": ["writer"], "finalizer": [1]}},
    ],
)
def test_schema_invalid_but_plan_valid(example: Example, parsed: dict[str, Any]) -> None:
    data = json.loads(TARGET)
    data.update(parsed)
    assert schema_valid(data) is False
    rec = score_prediction(example, json.dumps(data))
    assert rec["plan_valid"] and rec["exact_plan"] and rec["constraint_satisfied"]
    assert rec["schema_valid"] is False and rec["receipt_consistent"] is False
    assert rec["declared_quality_abs_error"] is None and rec["declared_quality"] is None


def test_schema_allows_extra_keys_and_missing_key_fails(example: Example) -> None:
    data = json.loads(TARGET)
    assert schema_valid({**data, "note": "x"}) is True
    del data["reason_codes"]
    assert schema_valid(data) is False


def test_infeasible_plan() -> None:
    examples = _small("test", 30)
    example = next(
        e
        for e in examples
        if e.label["policy"] == "balanced"
        and not all(
            feasible(c, e.constraints)
            for c in enumerate_candidates(e.workers)
            if c.policy == "strict"
        )
    )
    table = example.table
    strict = next(
        c
        for c in enumerate_candidates(example.workers)
        if c.policy == "strict" and not feasible(c, example.constraints)
    )
    text = canonical_json(
        {
            **strict.record(),
            "max_credits": example.constraints.max_credits,
            "max_latency_ms": example.constraints.max_latency_ms,
            "estimated_quality": 0.9,
            "estimated_pass_rate": 0.9,
            "reason_codes": [],
        }
    )
    rec = score_prediction(example, text)
    assert rec["plan_valid"] and rec["schema_valid"] and rec["receipt_consistent"]
    assert rec["constraint_satisfied"] is False
    assert rec["policy_correct"] is False and rec["exact_plan"] is False
    assert rec["utility"] == -1000.0
    assert rec["utility_regret"] == round(example.oracle["utility"] + 1000, 6)
    o = outcome(example.task, strict, table)
    assert rec["quality_target_met"] is (o.quality >= example.constraints.minimum_quality)
    assert rec["unsafe_under_escalation"] is False  # deeper than the label


def test_under_and_over_escalation() -> None:
    test_rows = _small("test", 30)
    strict = next(e for e in test_rows if e.label["policy"] == "strict" and e.task.risk >= 0.75)
    lean = build_candidate("lean", strict.label["writer"], None, None, strict.table)
    rec = score_prediction(strict, canonical_json(lean.record()))
    assert rec["plan_valid"] and not rec["schema_valid"]
    assert rec["unsafe_under_escalation"] is True and rec["unnecessary_escalation"] is False

    train = _small("train", 60)
    low = next(e for e in train if e.label["policy"] == "lean" and e.task.risk < 0.30)
    other = next(w.id for w in low.workers if w.id != low.label["writer"])
    balanced = build_candidate("balanced", low.label["writer"], other, None, low.table)
    rec = score_prediction(low, canonical_json(balanced.record()))
    assert rec["unnecessary_escalation"] is True
    assert rec["unsafe_under_escalation"] is False


def test_regret_is_clipped_at_zero() -> None:
    """A below-target plan can beat the quality-filtered oracle's utility (§10.7)."""
    for example in _small("train", 400):
        table = example.table
        for c in enumerate_candidates(example.workers):
            if not feasible(c, example.constraints):
                continue
            u = plan_utility(
                example.task, example.constraints, c, outcome(example.task, c, table), table
            )
            if u > example.oracle["utility"]:
                rec = score_prediction(example, canonical_json(c.record()))
                assert rec["utility"] == u and rec["utility_regret"] == 0.0
                return
    pytest.skip("no row where the target-quality filter changed the choice")


def test_nearest_rank() -> None:
    values = [float(v) for v in range(1, 21)]  # N = 20 → index ceil(19) - 1 = 18
    assert nearest_rank(values, 0.95) == 19.0
    assert nearest_rank(list(reversed(values)), 0.5) == 10.0
    assert nearest_rank([5.0], 0.95) == 5.0
    assert nearest_rank([float(v) for v in range(1, 22)], 0.95) == 20.0  # ceil(19.95) - 1 = 19


def _rec(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "x",
        "family": "f",
        "expected_policy": "lean",
        "json_valid": True,
        "schema_valid": True,
        "plan_valid": True,
        "receipt_consistent": True,
        "constraint_satisfied": True,
        "policy_correct": True,
        "exact_plan": True,
        "unsafe_under_escalation": False,
        "unnecessary_escalation": False,
        "quality_target_met": True,
        "utility_regret": 0.0,
        "parsed": {"policy": "lean"},
        "predicted_calls": 1,
        "predicted_quality": 0.5,
        "predicted_pass_rate": 0.5,
        "declared_quality_abs_error": 0.0,
        "declared_pass_rate_abs_error": 0.0,
    }
    base.update(over)
    return base


def test_aggregate_rates_means_and_p95() -> None:
    records = [_rec(utility_regret=float(i)) for i in range(19)]
    records.append(
        _rec(
            json_valid=False,
            schema_valid=False,
            plan_valid=False,
            policy_correct=False,
            exact_plan=False,
            quality_target_met=False,
            utility_regret=1081.123456,
            parsed=None,
            predicted_calls=None,
        )
    )
    agg = aggregate_scores(records)
    assert agg["examples"] == 20
    assert agg["json_valid_rate"] == 0.95 and agg["plan_valid_rate"] == 0.95
    assert agg["mean_utility_regret"] == round((sum(range(19)) + 1081.123456) / 20, 6)
    assert agg["p95_utility_regret"] == 18.0  # sorted[18]
    assert agg["quality_target_met_rate"] == 0.95
    assert agg["mean_predicted_quality"] == 0.5
    assert agg["mean_declared_quality_abs_error"] == 0.0
    thirds = aggregate_scores([_rec(), _rec(), _rec(exact_plan=False)])
    assert thirds["exact_plan_rate"] == 0.666667  # r6
    none_valid = aggregate_scores([_rec(plan_valid=False)])
    assert none_valid["mean_predicted_quality"] is None
    assert none_valid["p95_declared_quality_abs_error"] is None


def test_summary_extras() -> None:
    records = [
        _rec(
            expected_policy="strict",
            family="a",
            parsed={"policy": "balanced"},
            predicted_calls=2,
            runtime_fallback_used=True,
            runtime_fallback_reason="over_budget",
            elapsed_ms=100.0,
        ),
        _rec(
            expected_policy="strict",
            family="a",
            parsed={"policy": "strict"},
            plan_valid=False,
            predicted_calls=None,
            elapsed_ms=100.0,
        ),
        _rec(
            expected_policy="lean",
            family="b",
            parsed={"policy": 3},
            plan_valid=False,
            predicted_calls=None,
            elapsed_ms=300.0,
        ),
        _rec(
            expected_policy="lean",
            family="b",
            parsed=None,
            plan_valid=False,
            predicted_calls=None,
            elapsed_ms=300.0,
            runtime_fallback_used=False,
            runtime_fallback_reason=None,
        ),
    ]
    summary = summarize(records, "lane-x")
    assert summary["lane"] == "lane-x"
    assert summary["policy_confusion"] == {
        "lean": {"lean": 0, "balanced": 0, "strict": 0, "invalid": 2},
        "strict": {"lean": 0, "balanced": 1, "strict": 1, "invalid": 0},
    }
    assert summary["predicted_call_distribution"] == {"1": 0, "2": 1, "3": 0, "invalid": 3}
    assert summary["runtime_fallback_count"] == 1
    assert summary["runtime_fallback_rate"] == 0.25
    assert summary["runtime_fallback_reasons"] == {
        "invalid_json": 0,
        "invalid_plan": 0,
        "over_budget": 1,
    }
    assert (
        summary["mean_inference_ms"],
        summary["p50_inference_ms"],
        summary["p95_inference_ms"],
    ) == (200.0, 100.0, 300.0)
    assert set(summary["by_expected_policy"]) == {"lean", "strict"}
    assert summary["by_family"]["a"]["examples"] == 2
    assert math.isclose(summary["by_family"]["b"]["plan_valid_rate"], 0.0)


def test_score_row_carries_guard_and_latency_fields(example: Example) -> None:
    rec = score_row(
        example,
        {
            "id": example.id,
            "prediction": TARGET,
            "elapsed_ms": 12.5,
            "raw_prediction": "x",
            "runtime_fallback_used": True,
            "runtime_fallback_reason": "invalid_json",
        },
    )
    assert (rec["id"], rec["family"], rec["expected_policy"]) == (
        example.id,
        "health_triage",
        "strict",
    )
    assert rec["elapsed_ms"] == 12.5 and rec["runtime_fallback_reason"] == "invalid_json"
    assert rec["exact_plan"] is True
