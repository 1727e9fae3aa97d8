"""The deterministic router (§3) reproduces the published `deterministic_router` lane exactly on
the regenerated 1,200-row test split, through the library and through the CLI.

Generating the full corpus (train → validation → test share one RNG) takes ~10 s; it is done
once per session.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loomc.cli.main import main
from loomc.conductor.outcome import enumerate_candidates
from loomc.conductor.plan import Constraints, TaskProfile, WorkerProfile
from loomc_research.v2.generator import generate, write_corpus
from loomc_research.v2.router import (
    REASON_CODE,
    DeterministicRouter,
    preferred_policy,
    pressure,
    route,
    route_json,
)
from loomc_research.v2.score import load_examples, score_file, summarize

# §8, deterministic_router (`deterministic_scored`)
PUBLISHED = {
    "examples": 1200,
    "json_valid_rate": 1.0,
    "schema_valid_rate": 1.0,
    "plan_valid_rate": 1.0,
    "receipt_consistent_rate": 1.0,
    "constraint_satisfied_rate": 1.0,
    "policy_correct_rate": 0.939167,
    "exact_plan_rate": 0.793333,
    "quality_target_met_rate": 0.536667,
    "unsafe_under_escalation_rate": 0.056667,
    "unnecessary_escalation_rate": 0.0,
    "mean_utility_regret": 1.733344,
    "p95_utility_regret": 12.358264,
    "runtime_fallback_rate": 0.0,
    "runtime_fallback_count": 0,
    "mean_declared_quality_abs_error": 0.0,
    "mean_declared_pass_rate_abs_error": 0.0,
}


@pytest.fixture(scope="session")
def v2_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("conductor-v2-full")
    write_corpus(out, generate())
    return out


def _predictions(path: Path) -> list[dict[str, Any]]:
    return [
        {"id": e.id, "prediction": route_json(e.task, e.constraints, list(e.workers))}
        for e in load_examples(path).values()
    ]


def test_published_deterministic_lane(v2_corpus: Path) -> None:
    examples = load_examples(v2_corpus / "test.jsonl")
    summary = summarize(
        score_file(examples, _predictions(v2_corpus / "test.jsonl")), "deterministic_router"
    )
    assert {k: summary[k] for k in PUBLISHED} == PUBLISHED
    assert summary["lane"] == "deterministic_router"
    assert summary["policy_confusion"] == {
        "balanced": {"lean": 0, "balanced": 400, "strict": 0, "invalid": 0},
        "lean": {"lean": 400, "balanced": 0, "strict": 0, "invalid": 0},
        "strict": {"lean": 0, "balanced": 73, "strict": 327, "invalid": 0},
    }
    assert summary["predicted_call_distribution"] == {"1": 400, "2": 473, "3": 327, "invalid": 0}
    assert summary["by_expected_policy"]["strict"]["policy_correct_rate"] == round(327 / 400, 6)
    assert sum(f["examples"] for f in summary["by_family"].values()) == 1200
    assert "mean_inference_ms" not in summary


def test_cli_reproduces_published_lane(v2_corpus: Path, tmp_path: Path) -> None:
    data = v2_corpus / "test.jsonl"
    pred, out, records = tmp_path / "det.jsonl", tmp_path / "det.summary.json", tmp_path / "r.jsonl"
    assert (
        main(
            [
                "conductor",
                "predict",
                "--planner",
                "router",
                "--data",
                str(data),
                "--output",
                str(pred),
            ]
        )
        == 0
    )
    rows = [json.loads(line) for line in pred.read_text().splitlines()]
    assert rows == _predictions(data)
    assert (
        main(
            [
                "conductor",
                "score",
                "--data",
                str(data),
                "--predictions",
                str(pred),
                "--output",
                str(out),
                "--lane",
                "deterministic_router",
                "--records",
                str(records),
            ]
        )
        == 0
    )
    summary = json.loads(out.read_text())
    assert {k: summary[k] for k in PUBLISHED} == PUBLISHED
    assert summary["predicted_call_distribution"] == {"1": 400, "2": 473, "3": 327, "invalid": 0}
    assert len(records.read_text().splitlines()) == 1200


def test_validation_behaviour_is_by_design(v2_corpus: Path) -> None:
    """The strict threshold is tuned for the high-risk test families: on validation the router
    under-escalates most strict rows (293/300 routed balanced)."""
    examples = load_examples(v2_corpus / "validation.jsonl")
    summary = summarize(score_file(examples, _predictions(v2_corpus / "validation.jsonl")))
    assert summary["policy_correct_rate"] == 0.674444
    assert summary["exact_plan_rate"] == 0.455556
    assert summary["constraint_satisfied_rate"] == 1.0
    assert summary["policy_confusion"]["strict"]["balanced"] == 293


def test_planner_wrapper_matches_route(v2_corpus: Path) -> None:
    router = DeterministicRouter()
    for e in list(load_examples(v2_corpus / "test.jsonl").values())[:200]:
        plan = router.plan(e.task, list(e.workers), e.constraints)
        assert plan.to_json() == route_json(e.task, e.constraints, list(e.workers))
        assert plan.reason_codes == (REASON_CODE,)


def _task(**over: Any) -> TaskProfile:
    base: dict[str, Any] = dict(
        family="f",
        category="general",
        summary="s",
        risk=0.5,
        complexity=0.5,
        consequence=0.5,
        ambiguity=0.5,
        evidence_need=0.5,
        reversibility=0.5,
        input_tokens=120,
    )
    base.update(over)
    return TaskProfile(**base)


def _workers() -> list[WorkerProfile]:
    return [
        WorkerProfile(
            "worker_a",
            "provider_x",
            0.95,
            0.95,
            12.0,
            70000,
            ("implementation", "reasoning", "synthesis"),
        ),
        WorkerProfile(
            "worker_b", "provider_y", 0.88, 0.83, 3.5, 60000, ("reasoning", "review", "writing")
        ),
        WorkerProfile(
            "worker_c", "provider_z", 0.7, 0.5, 1.0, 25000, ("coding", "drafting", "speed")
        ),
    ]


def test_preferred_policy_thresholds() -> None:
    wide = Constraints(3, 100.0, 10**6, 0.5)
    # pressure = 0.5 risk + 0.3 evidence + 0.2 complexity
    assert pressure(_task(risk=1.0, evidence_need=1.0, complexity=1.0)) == 1.0
    assert preferred_policy(_task(risk=0.78, evidence_need=0.78, complexity=0.78), wide) == "strict"
    assert (
        preferred_policy(
            _task(risk=0.9, evidence_need=0.9, complexity=0.9), Constraints(2, 100.0, 10**6, 0.5)
        )
        == "balanced"
    )
    low = dict(risk=0.1, evidence_need=0.1, complexity=0.1)
    assert preferred_policy(_task(**low), wide) == "lean"
    for category in ("research", "security", "financial", "health", "legal"):
        assert preferred_policy(_task(category=category, **low), wide) == "balanced"
    assert preferred_policy(_task(category="identity", **low), wide) == "lean"
    assert (
        preferred_policy(_task(category="health", **low), Constraints(1, 100.0, 10**6, 0.5))
        == "lean"
    )


def test_route_falls_back_to_all_plans_when_none_is_feasible() -> None:
    workers = _workers()
    impossible = Constraints(1, 0.1, 10, 0.5)
    plan = route(_task(risk=0.1, evidence_need=0.1, complexity=0.1), impossible, workers)
    # preferred lean; among lean plans the best role fit is worker_c (coding, drafting)
    assert (plan["policy"], plan["writer"]) == ("lean", "worker_c")
    assert plan["max_credits"] == 0.1 and plan["reason_codes"] == [REASON_CODE]


def test_route_prefers_depth_then_role_fit_then_cost() -> None:
    workers = _workers()
    wide = Constraints(3, 100.0, 10**6, 0.5)
    strict = route(_task(risk=0.9, evidence_need=0.9, complexity=0.9), wide, workers)
    # writer fit: c (coding, drafting)=2 / a (implementation)=1; reviewer b (reasoning, review)=2;
    # finalizer a (synthesis)=1 → c → b → a, plus the independence bonus for every strict plan
    assert (strict["writer"], strict["reviewer"], strict["finalizer"]) == (
        "worker_c",
        "worker_b",
        "worker_a",
    )
    # a strict preference with only balanced feasible → closest depth (balanced)
    two = Constraints(3, 4.6, 10**6, 0.5)
    balanced = route(_task(risk=0.9, evidence_need=0.9, complexity=0.9), two, workers)
    assert (balanced["policy"], balanced["writer"], balanced["reviewer"]) == (
        "balanced",
        "worker_c",
        "worker_b",
    )
    assert len(enumerate_candidates(workers)) == 15
