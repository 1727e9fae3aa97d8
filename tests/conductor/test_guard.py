"""The guard against the real compiler, checker, executor and mock provider of the project."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loomc.checker.rules import check_pipeline
from loomc.checker.worstcase import worst_case
from loomc.conductor.guard import Decision, Guard, GuardContext, GuardError, compile_plan
from loomc.conductor.mapping import hard_limits, worker_profiles
from loomc.conductor.outcome import enumerate_candidates, outcome
from loomc.conductor.plan import Plan, TaskProfile
from loomc.conductor.planners import RiskPlanner
from loomc.conductor.prompt_format import extract_first_json
from loomc.conductor.search import Scored, SearchPlanner, label_for, reason_codes
from loomc.exec.executor import execute
from loomc.project import Project, load_project
from loomc.providers.registry import ProviderPool
from loomc.units import Budget

ROOT = Path(__file__).resolve().parents[2]
HIGH = TaskProfile(
    family="runtime_code_review",
    category="security",
    summary="Review this payment webhook handler for double-spend races.",
    risk=0.85,
    complexity=0.8,
    consequence=0.85,
    ambiguity=0.3,
    evidence_need=0.6,
    reversibility=0.25,
    input_tokens=120,
)
LOW = TaskProfile(
    family="runtime_general",
    category="general",
    summary="What is the capital of Poland?",
    risk=0.2,
    complexity=0.25,
    consequence=0.2,
    ambiguity=0.3,
    evidence_need=0.35,
    reversibility=0.6,
    input_tokens=120,
)


@pytest.fixture(scope="module")
def project() -> Project:
    return load_project(ROOT)


def make_context(
    project: Project,
    *,
    task: TaskProfile = HIGH,
    calls: int = 3,
    credits: str | None = "10",
    latency_ms: int = 120_000,
) -> GuardContext:
    workers = tuple(worker_profiles(project.policy))
    budget = Budget(
        calls=calls,
        tokens=24_000,
        credits=None if credits is None else Decimal(credits),
        latency_ms=latency_ms,
    )
    return GuardContext(
        policy=project.policy_source,
        workers=workers,
        task=task,
        limits=hard_limits(budget, workers, "high"),
        name="general",
    )


def strict_plan(ctx: GuardContext) -> dict[str, Any]:
    """A receipt-consistent strict plan (the search planner's choice at generous limits)."""
    loose = make_context_like(ctx, calls=3, credits="10", latency_ms=120_000)
    label = SearchPlanner().plan(ctx.task, ctx.workers, loose.limits.constraints).to_dict()
    assert label["policy"] == "strict"
    label["max_credits"] = ctx.limits.constraints.max_credits
    label["max_latency_ms"] = ctx.limits.constraints.max_latency_ms
    return label


def make_context_like(ctx: GuardContext, **kw: Any) -> GuardContext:
    budget = Budget(
        calls=kw["calls"],
        tokens=24_000,
        credits=Decimal(kw["credits"]),
        latency_ms=kw["latency_ms"],
    )
    return GuardContext(
        ctx.policy, ctx.workers, ctx.task, hard_limits(budget, ctx.workers), ctx.name
    )


def run_decision(project: Project, decision: Decision) -> Any:
    async def go() -> Any:
        async with ProviderPool(project.policy) as pool:
            return await execute(decision.pipeline, "Review this webhook.", pool=pool, stream=False)

    return anyio.run(go)


def assert_runs_checked(project: Project, ctx: GuardContext, decision: Decision) -> None:
    """What executes passes the checker under the constraints, and is what the plan says."""
    guard = Guard(ctx)
    assert guard.review(decision.plan).accepted
    assert not [d for d in check_pipeline(decision.pipeline) if d.is_error]
    wc = worst_case(decision.pipeline)
    c = ctx.limits.constraints
    assert wc.calls <= c.max_calls
    assert wc.credits <= Decimal(repr(c.max_credits))
    assert wc.latency_ms <= c.max_latency_ms
    result = run_decision(project, decision)
    assert result.calls == decision.plan.max_calls
    assert [s.worker for s in result.steps if s.attempts] == list(decision.plan.roles)


def _set(key: str, value: Any) -> Any:
    def mutate(label: dict[str, Any]) -> Any:
        label[key] = value
        return label

    return mutate


def _access(label: dict[str, Any]) -> Any:
    label["access"] = {**label["access"], "finalizer": ["writer"]}
    return label


def _bump(key: str, delta: float) -> Any:
    def mutate(label: dict[str, Any]) -> Any:
        label[key] = label[key] + delta
        return label

    return mutate


def _duplicate(label: dict[str, Any]) -> Any:
    label["reviewer"] = label["writer"]
    return label


def _garbage(label: dict[str, Any]) -> Any:
    return "I would run the strict plan with the critic reviewing."


def _truncated(label: dict[str, Any]) -> Any:
    return json.dumps(label)[:-5]


def _missing(label: dict[str, Any]) -> Any:
    del label["access"]
    return label


MALFORMED = [
    ("no_json", _garbage, {}, "invalid_json"),
    # first-JSON-object extraction (CONDUCTOR-V2 §5.1) finds the inner `access` object
    ("truncated_json", _truncated, {}, "missing_key"),
    ("json_array", lambda x: json.dumps([1, 2]), {}, "invalid_json"),
    ("missing_key", _missing, {}, "missing_key"),
    ("wrong_type_calls", _set("max_calls", "3"), {}, "wrong_type"),
    ("wrong_type_credits", _set("estimated_credits", True), {}, "wrong_type"),
    (
        "wrong_type_access",
        _set("access", {"writer": "x", "reviewer": [], "finalizer": []}),
        {},
        "wrong_type",
    ),
    ("wrong_type_writer", _set("writer", 7), {}, "wrong_type"),
    ("out_of_range", _set("estimated_quality", 1.5), {}, "out_of_range"),
    ("invalid_policy", _set("policy", "paranoid"), {}, "invalid_policy"),
    ("role_count", _set("finalizer", None), {}, "role_count"),
    ("unknown_worker", _set("writer", "worker_z"), {}, "unknown_worker"),
    ("router_not_in_roster", _set("writer", "router"), {}, "unknown_worker"),
    ("duplicate_roles", _duplicate, {}, "duplicate_role"),
    (
        "access_names_non_role",
        _set("access", {"writer": [], "reviewer": ["writer"], "finalizer": ["writer", "boss"]}),
        {},
        "invalid_access",
    ),
    ("over_call_budget", lambda x: x, {"calls": 2}, "over_budget:calls"),
    ("over_credits", lambda x: x, {"credits": "3"}, "over_budget:credits"),
    ("over_latency", lambda x: x, {"latency_ms": 50_000}, "over_budget:latency"),
    ("receipt_max_calls", _set("max_calls", 2), {}, "inconsistent_receipt:max_calls"),
    (
        "receipt_credits",
        _bump("estimated_credits", 0.5),
        {},
        "inconsistent_receipt:estimated_credits",
    ),
    (
        "receipt_credits_tolerance",
        _bump("estimated_credits", 0.0011),
        {},
        "inconsistent_receipt:estimated_credits",
    ),
    (
        "receipt_latency",
        _bump("estimated_latency_ms", 1),
        {},
        "inconsistent_receipt:estimated_latency_ms",
    ),
    (
        "receipt_independent",
        _set("independent_verification", False),
        {},
        "inconsistent_receipt:independent_verification",
    ),
    ("receipt_access", _access, {}, "inconsistent_receipt:access"),
    ("receipt_max_credits", _bump("max_credits", 1.0), {}, "inconsistent_receipt:max_credits"),
    ("receipt_max_latency", _bump("max_latency_ms", -1), {}, "inconsistent_receipt:max_latency_ms"),
    (
        "cyclic_access",
        _set("access", {"writer": ["reviewer"], "reviewer": ["writer"], "finalizer": []}),
        {},
        "check:LOOM206",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "limits", "reason"),
    [pytest.param(m, lim, r, id=name) for name, m, lim, r in MALFORMED],
)
def test_malformed_proposal_never_reaches_execution(
    project: Project, mutate: Any, limits: dict[str, Any], reason: str
) -> None:
    ctx = make_context(project, **limits)
    proposal = mutate(strict_plan(ctx))
    text = proposal if isinstance(proposal, str) else json.dumps(proposal)
    decision = Guard(ctx).decide_proposal("learned", text)
    assert not decision.accepted
    assert reason in decision.reasons
    assert decision.fallback == "risk"
    assert decision.proposal == text
    record = decision.to_json()
    assert record["accepted"] is False and reason in record["reasons"]
    assert_runs_checked(project, ctx, decision)
    if reason == "inconsistent_receipt:estimated_credits":
        # the same plan with honest receipts would have been accepted: the receipt alone failed
        assert decision.reasons == [reason]


def test_credit_tolerance_accepts_rounding(project: Project) -> None:
    ctx = make_context(project)
    label = strict_plan(ctx)
    label["estimated_credits"] += 0.0009
    decision = Guard(ctx).decide_proposal("learned", json.dumps(label))
    assert decision.accepted and decision.reasons == []


def test_valid_search_plan_is_accepted_unchanged(project: Project) -> None:
    ctx = make_context(project)
    proposal = SearchPlanner().plan(ctx.task, ctx.workers, ctx.limits.constraints)
    decision = Guard(ctx).decide("search", SearchPlanner())
    assert decision.accepted
    assert decision.plan == proposal
    assert decision.reasons == [] and decision.fallback is None
    assert decision.proposal == proposal.to_json()
    assert_runs_checked(project, ctx, decision)
    # the same plan as raw text (with prose around it, as a model may emit) is accepted too
    text = "Plan: " + proposal.to_json() + " done"
    again = Guard(ctx).decide_proposal("learned", text)
    assert again.accepted and again.plan == proposal


def test_plan_object_is_revalidated(project: Project) -> None:
    ctx = make_context(project)
    good = SearchPlanner().plan(ctx.task, ctx.workers, ctx.limits.constraints)
    bad = Plan(**{**good.__dict__, "reviewer": good.writer})
    decision = Guard(ctx).decide_proposal("search", bad)
    assert decision.reasons == ["duplicate_role"]
    assert decision.plan != bad


def test_compiled_plan_matches_access_and_workers(project: Project) -> None:
    ctx = make_context(project)
    plan = Plan.from_json(strict_plan(ctx))
    pipeline, diags = compile_plan(plan, ctx)
    assert pipeline is not None and not [d for d in diags if d.is_error]
    assert pipeline.graph.topological_order() == ["writer", "reviewer", "finalizer"]
    assert pipeline.graph.step("reviewer").sees == ("writer",)
    assert pipeline.graph.step("finalizer").sees == ("writer", "reviewer")
    assert [pipeline.graph.step(r).worker for r in ("writer", "reviewer", "finalizer")] == list(
        plan.roles
    )
    assert pipeline.budget.calls == 3 and pipeline.budget.tokens == 24_000
    assert pipeline.answer == ("finalizer", "reviewer", "writer")


def test_planner_failure_falls_back(project: Project) -> None:
    class Broken:
        def plan(self, *args: Any) -> Plan:
            raise ValueError("no plan for you")

    ctx = make_context(project, task=LOW)
    decision = Guard(ctx).decide("search", Broken())
    assert decision.reasons == ["planner_failed"] and decision.fallback == "risk"
    assert decision.plan.policy == "lean"


def test_nothing_runs_when_no_plan_fits(project: Project) -> None:
    ctx = make_context(project, latency_ms=10_000)  # every step may take 20 s
    with pytest.raises(GuardError) as info:
        Guard(ctx).decide_proposal("learned", json.dumps(strict_plan(ctx)))
    record = info.value.record
    assert "over_budget:latency" in record["reasons"]
    assert record["fallback"] == "risk"
    assert record["fallback_reasons"] == ["planner_failed"]


# --- property: whatever is proposed, what runs passes the checker ------------------------------

_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 200_000),
    st.floats(-1, 20, allow_nan=False),
    st.sampled_from(["drafter", "critic", "finalizer", "router", "worker_a", "lean", "strict"]),
    st.lists(st.sampled_from(["writer", "reviewer", "finalizer", "x"]), max_size=3),
)
_KEYS = sorted(
    Plan.from_json(
        {
            "access": {"writer": [], "reviewer": [], "finalizer": []},
            "estimated_credits": 1.0,
            "estimated_latency_ms": 1,
            "estimated_pass_rate": 0.5,
            "estimated_quality": 0.5,
            "finalizer": None,
            "independent_verification": False,
            "max_calls": 1,
            "max_credits": 1.0,
            "max_latency_ms": 1,
            "policy": "lean",
            "reason_codes": [],
            "reviewer": None,
            "writer": "w",
        }
    ).to_dict()
)


def _labels(ctx: GuardContext) -> list[dict[str, Any]]:
    """Every one of the plans of the roster as an honest label under these limits."""
    table = {w.id: w for w in ctx.workers}
    c = ctx.limits.constraints
    out = []
    for cand in enumerate_candidates(ctx.workers):
        result = outcome(ctx.task, cand, table)
        out.append(label_for(c, Scored(cand, result, 0.0), reason_codes(ctx.task, c, cand, result)))
    return out


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.data(),
    calls=st.integers(1, 3),
    credits=st.sampled_from(["0.5", "1", "1.5", "2", "2.5", "3", "3.5", "10"]),
    latency_ms=st.sampled_from([10_000, 20_000, 39_999, 40_000, 60_000, 120_000]),
    high=st.booleans(),
)
def test_property_what_runs_always_passes_the_checker(
    project: Project, data: st.DataObject, calls: int, credits: str, latency_ms: int, high: bool
) -> None:
    ctx = make_context(
        project, task=HIGH if high else LOW, calls=calls, credits=credits, latency_ms=latency_ms
    )
    labels = _labels(ctx)
    label = dict(data.draw(st.sampled_from(labels)))
    for _ in range(data.draw(st.integers(0, 2))):
        label[data.draw(st.sampled_from(_KEYS))] = data.draw(_VALUES)
    text = data.draw(
        st.sampled_from([json.dumps(label), "no plan", json.dumps(label)[:-3], json.dumps([label])])
    )
    guard = Guard(ctx)
    try:
        decision = guard.decide_proposal("learned", text)
    except GuardError:
        # nothing runs only when no plan at all passes the checker under these limits
        assert not any(guard.review(json.dumps(x)).accepted for x in labels)
        return
    assert guard.review(decision.plan).accepted
    assert not [d for d in check_pipeline(decision.pipeline) if d.is_error]
    wc = worst_case(decision.pipeline)
    assert wc.calls <= calls and wc.latency_ms <= latency_ms
    assert wc.credits <= Decimal(credits)
    if decision.accepted:
        assert decision.plan == Plan.from_json(extract_first_json(text) or {})
    # the risk fallback never declines a plan the guard would accept
    assert RiskPlanner().plan(
        ctx.task, ctx.workers, ctx.limits.constraints, admissible=guard.admits
    )
