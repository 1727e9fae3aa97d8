"""The reference runtime guard (§4): invalid_json / invalid_plan / over_budget are replaced by the
deterministic router's plan; anything else passes through as the unchanged raw text."""

from __future__ import annotations

import json
from functools import cache

from loomc.conductor.outcome import enumerate_candidates, feasible
from loomc.conductor.plan import canonical_json
from loomc_research.v2.generator import generate
from loomc_research.v2.guard import guard_prediction, guard_rows, guard_summary
from loomc_research.v2.router import route_json
from loomc_research.v2.score import Example, score_file, summarize


@cache
def _examples() -> dict[str, Example]:
    rows = generate(sizes=(("test", 30),)).splits["test"]
    return {r["id"]: Example.from_row(r) for r in rows}


def _router(e: Example) -> str:
    return route_json(e.task, e.constraints, list(e.workers))


def _infeasible(e: Example) -> str | None:
    for c in enumerate_candidates(e.workers):
        if not feasible(c, e.constraints):
            return canonical_json(c.record())
    return None


def test_valid_raw_text_passes_through_unchanged() -> None:
    e = next(iter(_examples().values()))
    raw = f"```json\n{e.row['target']}\n``` trailing prose"
    decision = guard_prediction(e, raw)
    assert decision.prediction == raw and decision.reason is None and not decision.fallback_used


def test_inconsistent_receipt_is_accepted() -> None:
    e = next(iter(_examples().values()))
    label = dict(e.label)
    label.update(
        estimated_credits=0.0,
        estimated_quality=0.01,
        reason_codes=["anything"],
        access={"writer": [], "reviewer": [], "finalizer": []},
    )
    raw = json.dumps(label)
    assert guard_prediction(e, raw).prediction == raw
    # so is an object that is not even schema-valid, if its roles form a feasible plan
    minimal = json.dumps({k: label[k] for k in ("policy", "writer", "reviewer", "finalizer")})
    assert guard_prediction(e, minimal).prediction == minimal


def test_replacements() -> None:
    e = next(x for x in _examples().values() if _infeasible(x) is not None)
    cases = {
        "I think the lean plan is best.": "invalid_json",
        "[1, 2, 3]": "invalid_json",
        '{"policy": "strict", "writer": "worker_a"}': "invalid_plan",
        '{"policy": "lean", "writer": "worker_z"}': "invalid_plan",
        str(_infeasible(e)): "over_budget",
    }
    for raw, reason in cases.items():
        decision = guard_prediction(e, raw)
        assert decision.reason == reason, raw
        assert decision.prediction == _router(e)


def test_guard_rows_and_summary() -> None:
    examples = _examples()
    items = list(examples.values())
    predictions = [{"id": e.id, "prediction": e.row["target"], "elapsed_ms": 5.0} for e in items]
    predictions[0]["prediction"] = "no json"
    predictions[1]["prediction"] = '{"policy": "lean"}'
    over = next(i for i, e in enumerate(items) if i > 1 and _infeasible(e) is not None)
    predictions[over]["prediction"] = str(_infeasible(items[over]))
    rows = guard_rows(examples, predictions)
    assert [r["runtime_fallback_reason"] for r in rows[:2]] == ["invalid_json", "invalid_plan"]
    assert rows[0]["raw_prediction"] == "no json" and rows[0]["elapsed_ms"] == 5.0
    assert rows[0]["prediction"] == _router(items[0])
    keep = next(i for i in range(2, len(items)) if i != over)
    assert rows[keep]["runtime_fallback_used"] is False
    assert rows[keep]["runtime_fallback_reason"] is None
    assert rows[keep]["prediction"] == rows[keep]["raw_prediction"] == items[keep].row["target"]
    summary = guard_summary(rows)
    assert summary == {
        "examples": 30,
        "accepted": 27,
        "fallback_count": 3,
        "fallback_rate": 0.1,
        "reasons": {"invalid_json": 1, "invalid_plan": 1, "over_budget": 1},
    }
    scored = summarize(score_file(examples, rows), "guarded")
    assert scored["runtime_fallback_count"] == 3
    assert scored["runtime_fallback_reasons"] == summary["reasons"]
    assert scored["constraint_satisfied_rate"] == 1.0  # every fallback is a feasible router plan
    assert scored["json_valid_rate"] == 1.0
