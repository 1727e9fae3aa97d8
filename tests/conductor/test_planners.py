"""Planners and the run mapping against the project's default (mock) policy."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from loomc.conductor.guard import Guard, GuardContext, context_for_run
from loomc.conductor.mapping import (
    DEFAULT_PASS_RATE,
    DEFAULT_QUALITY,
    hard_limits,
    task_profile,
    worker_profiles,
)
from loomc.conductor.plan import Constraints, Plan, TaskProfile, WorkerProfile
from loomc.conductor.planners import (
    LearnedProposer,
    PlannerError,
    RiskPlanner,
    make_planner,
)
from loomc.conductor.prompt_format import build_prompt
from loomc.conductor.search import SearchPlanner, select
from loomc.project import Project, load_project
from loomc.risk.base import RiskProfiler
from loomc.risk.factory import make_profiler
from loomc.units import Budget

ROOT = Path(__file__).resolve().parents[2]
LOW_PROMPT = "What is the capital of Poland? Return only the city."
HIGH_PROMPT = "Review this payment webhook handler for double-spend races and missing auth checks."
MEDIUM_PROMPT = (
    "Explain how a team should organise its weekly planning meeting, with an agenda, roles, "
    "timing, what to prepare beforehand and how to follow up afterwards, for a group of eight "
    "people in total."
)


@pytest.fixture(scope="module")
def project() -> Project:
    return load_project(ROOT)


def keywords(project: Project) -> RiskProfiler:
    """The policy's risk settings pinned to the keyword rules: levels, no probability, so the
    task's risk is the level's number (0.2 / 0.5 / 0.85) and these tests pin the planners'
    logic, not a trained model's output (the default ``auto`` is tested on its own below)."""
    return make_profiler(project.policy.risk.model_copy(update={"profiler": "keywords"}))


def context(
    project: Project,
    prompt: str,
    overrides: Budget | None = None,
    profiler: RiskProfiler | None = None,
) -> GuardContext:
    compiled, _ = project.pipelines(overrides)
    base = next(p for p in compiled if p.name == "general" and p.tier == "strict")
    risk = (profiler or keywords(project)).profile(prompt, base.kind)
    return context_for_run(project.policy_source, base, prompt, risk)


# --- mapping ------------------------------------------------------------------------------------


def test_worker_profiles_from_policy(project: Project) -> None:
    workers = worker_profiles(project.policy)
    assert [w.id for w in workers] == ["drafter", "critic", "finalizer"]  # router left out
    by_id = {w.id: w for w in workers}
    assert by_id["finalizer"].credits_per_call == 1.5
    assert by_id["critic"].p95_latency_ms == 10_000
    assert by_id["drafter"].provider_group == "mock-a"
    assert {w.quality for w in workers} == {DEFAULT_QUALITY}
    assert {w.pass_rate for w in workers} == {DEFAULT_PASS_RATE}
    assert "review" in by_id["critic"].strengths  # verification's v2 synonym
    assert "verification" in by_id["critic"].strengths
    primed = worker_profiles(project.policy, ["router", "critic"], {"critic": (0.9, 0.7)})
    assert [w.id for w in primed] == ["router", "critic"]
    assert (primed[1].quality, primed[1].pass_rate) == (0.9, 0.7)
    with pytest.raises(ValueError, match="unknown worker"):
        worker_profiles(project.policy, ["nobody"])


def test_task_profile_from_risk(project: Project) -> None:
    profiler = keywords(project)
    low = task_profile(LOW_PROMPT, profiler.profile(LOW_PROMPT, "general"))
    high = task_profile(HIGH_PROMPT, profiler.profile(HIGH_PROMPT, "general"))
    assert low.risk == 0.2 and low.category == "general" and low.consequence == 0.2
    assert high.risk == 0.85 and high.category == "security"
    assert high.consequence == 0.85 and high.reversibility == 0.25
    assert high.summary == HIGH_PROMPT and 120 <= high.input_tokens <= 8000
    assert high.input_tokens % 40 == 0


def test_hard_limits_from_tier_and_cli(project: Project) -> None:
    workers = worker_profiles(project.policy)
    ctx = context(project, HIGH_PROMPT)
    c = ctx.limits.constraints
    assert (c.max_calls, c.max_latency_ms) == (3, 120_000)  # strict tier ∩ pipeline
    assert c.max_credits == 4.5  # no credit ceiling: calls x the dearest worker (§7.1)
    assert ctx.limits.budget.tokens == 24_000  # the pipeline's token ceiling travels along
    tight = context(project, HIGH_PROMPT, Budget(calls=2, latency_ms=50_000))
    assert tight.limits.constraints.max_calls == 2
    assert tight.limits.constraints.max_latency_ms == 50_000
    assert tight.limits.constraints.max_credits == 3.0
    floored = hard_limits(Budget(credits=Decimal("2.0009")), workers)
    assert floored.constraints.max_credits == 2.0  # 3 dp, never rounded up
    assert floored.budget.credits == Decimal("2.0")


# --- risk planner ---------------------------------------------------------------------------------


def test_risk_planner_mirrors_adaptive_tiers(project: Project) -> None:
    planner = RiskPlanner()
    low = context(project, LOW_PROMPT)
    plan = planner.plan(low.task, low.workers, low.limits.constraints)
    assert (plan.policy, plan.roles) == ("lean", ("finalizer",))  # general: the finalizer drafts
    medium = context(project, MEDIUM_PROMPT)
    assert medium.task.risk == 0.5
    plan = planner.plan(medium.task, medium.workers, medium.limits.constraints)
    assert (plan.policy, plan.roles) == ("balanced", ("finalizer", "critic"))
    high = context(project, HIGH_PROMPT)
    plan = planner.plan(high.task, high.workers, high.limits.constraints)
    assert (plan.policy, plan.roles) == ("strict", ("drafter", "critic", "finalizer"))
    assert "risk_high" in plan.reason_codes and plan.independent_verification


def test_risk_planner_on_the_default_profiler(project: Project) -> None:
    """``auto`` (semantic where installed): its probability is the task's risk, and a clear
    low- and high-risk prompt still get the shallowest and the deepest plan."""
    default = make_profiler(project.policy.risk)
    low = context(project, LOW_PROMPT, profiler=default)
    high = context(project, HIGH_PROMPT, profiler=default)
    for ctx in (low, high):
        seen = default.profile(ctx.task.summary, "general")
        if seen.probability is not None:
            assert ctx.task.risk == round(seen.probability, 4)
    planner = RiskPlanner()
    assert planner.plan(low.task, low.workers, low.limits.constraints).policy == "lean"
    plan = planner.plan(high.task, high.workers, high.limits.constraints)
    assert plan.policy == "strict" and "risk_high" in plan.reason_codes


def test_risk_planner_respects_ceilings(project: Project) -> None:
    planner = RiskPlanner()
    high = context(project, HIGH_PROMPT, Budget(calls=2))
    plan = planner.plan(high.task, high.workers, high.limits.constraints)
    assert plan.policy == "balanced" and "call_ceiling" in plan.reason_codes
    cheap = context(project, HIGH_PROMPT, Budget(credits=Decimal("1.2")))
    plan = planner.plan(cheap.task, cheap.workers, cheap.limits.constraints)
    assert (plan.policy, plan.roles) == ("lean", ("drafter",))
    assert "budget_constrained" in plan.reason_codes
    with pytest.raises(PlannerError):
        planner.plan(cheap.task, cheap.workers, replace(cheap.limits.constraints, max_credits=0.5))


def test_risk_planner_research_is_at_least_balanced(project: Project) -> None:
    ctx = context(project, LOW_PROMPT)
    task = replace(ctx.task, category="research")
    plan = RiskPlanner().plan(task, ctx.workers, ctx.limits.constraints)
    assert plan.policy == "balanced" and "research_task" in plan.reason_codes


def test_risk_planner_admissible_predicate(project: Project) -> None:
    ctx = context(project, HIGH_PROMPT)
    plan = RiskPlanner().plan(
        ctx.task, ctx.workers, ctx.limits.constraints, admissible=lambda p: p.policy == "lean"
    )
    assert plan.policy == "lean"


@pytest.mark.parametrize("prompt", [LOW_PROMPT, MEDIUM_PROMPT, HIGH_PROMPT])
@pytest.mark.parametrize("planner", ["risk", "search"])
def test_deterministic_planners_pass_the_guard(project: Project, prompt: str, planner: str) -> None:
    ctx = context(project, prompt)
    decision = Guard(ctx).decide(planner, make_planner(planner))
    assert decision.accepted, decision.reasons


def test_search_planner_is_the_v2_oracle(project: Project) -> None:
    ctx = context(project, HIGH_PROMPT)
    c = ctx.limits.constraints
    plan = make_planner("search").plan(ctx.task, ctx.workers, c)
    assert plan == Plan.from_json(select(ctx.task, c, ctx.workers).label)
    assert isinstance(make_planner("search"), SearchPlanner)


# --- learned planner (a stand-in model object; the real one needs weights) ---------------------


class CannedModel:
    """Answers every prompt with a fixed text, recording what it was asked."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.prompts: list[str] = []

    def generate(self, prompts: list[str], batch_size: int = 8) -> list[str]:
        self.prompts.extend(prompts)
        return [self.answer(p) if callable(self.answer) else self.answer for p in prompts]


def _oracle_answer(prompt: str) -> str:
    """What a perfectly trained model says: the v2 label of the prompt's own INPUT."""
    payload = json.loads(prompt.split("\nINPUT=", 1)[1].split("\nOUTPUT_SCHEMA=", 1)[0])
    task = TaskProfile.from_dict(payload["task"])
    workers = [WorkerProfile.from_dict(w) for w in payload["workers"]]
    label = select(task, Constraints.from_dict(payload["constraints"]), workers).label
    return json.dumps(label, sort_keys=True, separators=(",", ":"))


def test_learned_prompt_uses_v2_format_with_aliases(project: Project) -> None:
    ctx = context(project, HIGH_PROMPT)
    model = CannedModel(_oracle_answer)
    learned = LearnedProposer(model=model)
    raw = learned.propose(ctx.task, ctx.workers, ctx.limits.constraints)
    shown = [
        replace(w, id=f"worker_{x}", provider_group=f"provider_{g}")
        for w, x, g in zip(ctx.workers, "abc", "xyz", strict=True)
    ]
    assert model.prompts == [build_prompt(ctx.task, ctx.limits.constraints, shown)]
    assert model.prompts[0].endswith("\nOUTPUT=")
    assert '"worker_' not in raw  # mapped back to the policy's worker ids
    decision = Guard(ctx).decide("learned", learned)
    assert decision.accepted
    assert decision.plan == make_planner("search").plan(
        ctx.task, ctx.workers, ctx.limits.constraints
    )


def test_learned_garbage_falls_back(project: Project) -> None:
    ctx = context(project, LOW_PROMPT)
    learned = LearnedProposer(model=CannedModel("I'd go with worker_q, probably."))
    decision = Guard(ctx).decide("learned", learned)
    assert decision.reasons == ["invalid_json"] and decision.fallback == "risk"
    assert decision.proposal == "I'd go with worker_q, probably."
    answer = json.loads(
        _oracle_answer(learned.prompt(ctx.task, ctx.workers, ctx.limits.constraints))
    )
    answer["writer"] = "worker_q"  # an alias that names no worker stays unmapped
    decision = Guard(ctx).decide("learned", LearnedProposer(model=CannedModel(json.dumps(answer))))
    assert decision.reasons == ["unknown_worker"] and decision.fallback == "risk"


def test_learned_needs_a_model() -> None:
    with pytest.raises(PlannerError, match="base model"):
        LearnedProposer().model()
    with pytest.raises(PlannerError, match="unavailable"):
        LearnedProposer("/nonexistent/base", "/nonexistent/adapter").model()
    with pytest.raises(ValueError, match="unknown planner"):
        make_planner("oracle")


def test_planner_modules_import_no_heavy_packages() -> None:
    code = (
        "import sys, loomc.conductor.planners, loomc.conductor.guard, loomc.cli.run;"
        "print([m for m in ('torch', 'transformers', 'peft', 'loomc_research') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
