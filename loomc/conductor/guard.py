"""The guard: a proposed plan runs only if the checker proves it, receipts included.

Every proposal — a planner's raw text or a `Plan` — goes through the same four gates, and the
first failing gate (or every failing check of gates 3–4) is recorded as reason codes:

1. **parse** (strict): the first JSON object of the text (`invalid_json` when there is none),
   then `Plan.from_json` with the worker roster: `not_object`, `missing_key`, `wrong_type`,
   `out_of_range`, `invalid_policy`, `role_count`, `unknown_worker`, `duplicate_role`; access
   lists may only name roles (`invalid_access`).
2. **compile**: the plan becomes `.loom` source — steps `writer` → `reviewer` → `finalizer`, each
   `sees` exactly the plan's access list, on the plan's policy workers — compiled by
   `loomc.ir.compile` against the policy with the hard limits as the pipeline's ceilings
   (`compile:LOOMnnn` for a compiler error).
3. **check**: `loomc.checker.rules.check_pipeline` on the compiled IR — worst-case calls, credits,
   latency (longest path), tokens and money where priced — plus the p95 estimate of the latency
   against its ceiling: `over_budget:calls|credits|latency|tokens|cost`, `check:LOOMnnn`.
4. **receipts**, stricter than the reference guard (which let inconsistent receipts through):
   the declared `max_calls`, `estimated_credits` (±0.001), `estimated_latency_ms`,
   `independent_verification`, `access` (the v2 lists) and the echoed `max_credits` (±0.001) /
   `max_latency_ms` must equal what the IR recomputes: `inconsistent_receipt:<field>`.

A rejected proposal is replaced by the fallback planner's plan (the `risk` planner, asked for a
plan the guard accepts); the fallback is checked the same way, and if it fails too nothing runs
(`GuardError`). `max_calls` is recomputed as the plan's call count (its steps); retries, when the
policy has any, count only in the checker's worst case.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from loomc.checker.rules import check_pipeline
from loomc.conductor.mapping import HardLimits, limits_for, task_profile, worker_profiles
from loomc.conductor.plan import (
    ROLES,
    Plan,
    Planner,
    PlanParseError,
    TaskProfile,
    WorkerProfile,
    default_access,
)
from loomc.conductor.planners import PlannerError, RiskPlanner, TextPlanner
from loomc.conductor.prompt_format import extract_first_json
from loomc.diagnostics import Diagnostic
from loomc.errors import LoomcError
from loomc.ir.compile import compile_modules
from loomc.ir.model import Pipeline
from loomc.policy.load import PolicySource
from loomc.risk.base import RiskProfile, RiskProfiler
from loomc.syntax.parser import parse_text

CREDIT_TOLERANCE = Decimal("0.001")
SOURCE_NAME = "<conductor-plan>"
CEILING_REASONS = {
    "LOOM401": "over_budget:calls",
    "LOOM402": "over_budget:tokens",
    "LOOM403": "over_budget:credits",
    "LOOM404": "over_budget:cost",
    "LOOM405": "over_budget:latency",
}
STEP_ROLES = {"writer": "writer", "finalizer": "finalizer"}  # reviewer: editor or critic
STEP_TASKS = {
    "writer": "Answer the task directly and completely.",
    "editor": "Audit the draft for errors and omissions, then return the complete corrected "
    "answer.",
    "critic": "Audit the draft adversarially: list every error, risk and missing case.",
    "finalizer": "Write the final answer, fixing every issue the critique raised.",
}
DEFAULT_INSTRUCTION = "Answer the user's task accurately and concisely. Say what you are unsure of."


class GuardError(LoomcError, RuntimeError):
    """Neither the proposal nor the fallback plan passed the checker: nothing may run."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record
        super().__init__(
            "no plan passed the checker: "
            + ", ".join(record.get("reasons", []))
            + "; fallback: "
            + ", ".join(record.get("fallback_reasons", []))
        )


@dataclass(frozen=True)
class GuardContext:
    """What a plan is checked against: the policy, the roster, the task and the hard limits."""

    policy: PolicySource
    workers: tuple[WorkerProfile, ...]
    task: TaskProfile
    limits: HardLimits
    name: str = "conductor"
    instruction: str = DEFAULT_INSTRUCTION
    kind: str = "general"
    input_tokens: int | None = None  # None: the policy default

    @property
    def worker_ids(self) -> list[str]:
        return [w.id for w in self.workers]


@dataclass
class Review:
    """One proposal through the gates; `reasons` is empty exactly when it may run."""

    plan: Plan | None
    pipeline: Pipeline | None
    reasons: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)

    @property
    def accepted(self) -> bool:
        return not self.reasons and self.plan is not None and self.pipeline is not None


@dataclass
class Decision:
    """What runs, and why: the proposal's verdict and, when rejected, the fallback used."""

    planner: str
    accepted: bool
    plan: Plan
    pipeline: Pipeline
    reasons: list[str]
    details: list[str]
    fallback: str | None
    proposal: str | None  # the raw proposal text (or the proposed plan's JSON)

    def to_json(self) -> dict[str, Any]:
        return {
            "planner": self.planner,
            "accepted": self.accepted,
            "reasons": list(self.reasons),
            "details": list(self.details),
            "fallback": self.fallback,
            "proposal": self.proposal,
            "plan": self.plan.to_dict(),
            "steps": self.pipeline.graph.topological_order(),
        }


# --- plan → IR --------------------------------------------------------------------------------


def _quote(text: str) -> str:
    body = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", " ")
    return f'"{body}"'


def plan_source(plan: Plan, context: GuardContext) -> str:
    """The plan as a `.loom` pipeline (no budget block: the ceilings come as overrides)."""
    access = plan.access or default_access(plan.reviewer, plan.finalizer)
    lines = [f"pipeline {context.name} {{", f"  instruction {_quote(context.instruction)}"]
    lines.append(f"  kind {context.kind}")
    if context.input_tokens is not None:
        lines.append(f"  input_tokens {int(context.input_tokens)}")
    present = []
    for role, worker in zip(ROLES, (plan.writer, plan.reviewer, plan.finalizer), strict=True):
        if worker is None:
            continue
        present.append(role)
        step_role = STEP_ROLES.get(role) or ("critic" if plan.finalizer is not None else "editor")
        sees = ", ".join(access.get(role, ()))
        clause = f" sees {sees}" if sees else ""
        lines.append(f"  step {role} : {step_role}({worker}){clause} {{")
        lines.append(f"    task {_quote(STEP_TASKS[step_role])}")
        lines.append("  }")
    lines.append("  answer " + " | ".join(reversed(present)))
    lines.append("}")
    return "\n".join(lines) + "\n"


def compile_plan(plan: Plan, context: GuardContext) -> tuple[Pipeline | None, list[Diagnostic]]:
    """Compile a plan with the real parser and compiler; the hard limits are its ceilings."""
    module, diags = parse_text(plan_source(plan, context), SOURCE_NAME)
    if module is None:
        return None, diags
    pipelines, comp = compile_modules([module], context.policy, context.limits.budget)
    diags = [*diags, *comp]
    if not pipelines or any(d.is_error for d in diags):
        return None, diags
    return replace(pipelines[0], tier=f"conductor-{plan.policy}"), diags


# --- the guard --------------------------------------------------------------------------------


def _parse(proposal: str | Plan | Mapping[str, Any], worker_ids: Sequence[str]) -> Plan:
    data: Any
    if isinstance(proposal, Plan):
        data = proposal.to_dict()  # re-validated: a Plan built in code is untrusted too
    elif isinstance(proposal, str):
        data = extract_first_json(proposal)
        if data is None:
            raise PlanParseError("invalid_json", "no JSON object in the proposal")
    else:
        data = proposal
    plan = Plan.from_json(data, worker_ids=worker_ids)
    for role in ROLES:
        bad = [x for x in plan.access.get(role, ()) if x not in ROLES]
        if bad:
            raise PlanParseError("invalid_access", f"access.{role} names {', '.join(bad)}")
    return plan


def _declared(value: float) -> Decimal:
    return Decimal(repr(float(value)))


def receipts(plan: Plan, pipeline: Pipeline, context: GuardContext) -> list[tuple[str, Any, Any]]:
    """(field, declared, recomputed) for each declared receipt the IR contradicts."""
    graph = pipeline.graph
    steps = {s.id: s for s in graph.steps()}
    credits = sum((s.credits for s in steps.values()), Decimal(0))
    latency, _ = graph.longest_path(_p95(pipeline))
    independent = "reviewer" in steps and steps["reviewer"].group != steps["writer"].group
    constraints = context.limits.constraints
    canonical = default_access(plan.reviewer, plan.finalizer)
    declared_access = {r: tuple(plan.access.get(r, ())) for r in ROLES}
    bad: list[tuple[str, Any, Any]] = []
    if plan.max_calls != len(steps):
        bad.append(("max_calls", plan.max_calls, len(steps)))
    if abs(_declared(plan.estimated_credits) - credits) > CREDIT_TOLERANCE:
        bad.append(("estimated_credits", plan.estimated_credits, str(credits)))
    if plan.estimated_latency_ms != latency:
        bad.append(("estimated_latency_ms", plan.estimated_latency_ms, latency))
    if plan.independent_verification != independent:
        bad.append(("independent_verification", plan.independent_verification, independent))
    if declared_access != canonical:
        bad.append(("access", declared_access, canonical))
    if abs(_declared(plan.max_credits) - _declared(constraints.max_credits)) > CREDIT_TOLERANCE:
        bad.append(("max_credits", plan.max_credits, constraints.max_credits))
    if plan.max_latency_ms != constraints.max_latency_ms:
        bad.append(("max_latency_ms", plan.max_latency_ms, constraints.max_latency_ms))
    return bad


def _p95(pipeline: Pipeline) -> dict[str, int]:
    """Per-step p95 latency (the timeout where the policy gives no p95, as the mapping does)."""
    return {
        s.id: s.p95_ms if s.p95_ms is not None else s.timeout_ms for s in pipeline.graph.steps()
    }


class Guard:
    """Checks proposals against one context and falls back to a checked plan."""

    def __init__(
        self, context: GuardContext, fallback: Planner | None = None, fallback_name: str = "risk"
    ) -> None:
        self.context = context
        self.fallback: Planner = fallback or RiskPlanner()
        self.fallback_name = fallback_name

    def review(self, proposal: str | Plan | Mapping[str, Any]) -> Review:
        ctx = self.context
        try:
            plan = _parse(proposal, ctx.worker_ids)
        except PlanParseError as exc:
            return Review(None, None, [exc.reason], [str(exc)])
        pipeline, diags = compile_plan(plan, ctx)
        if pipeline is None:
            errors = [d for d in diags if d.is_error]
            return Review(
                plan,
                None,
                sorted({f"compile:{d.code}" for d in errors}) or ["compile_failed"],
                [d.message for d in errors],
            )
        reasons: list[str] = []
        details: list[str] = []
        for d in check_pipeline(pipeline):
            if d.is_error:
                reason = CEILING_REASONS.get(d.code, f"check:{d.code}")
                if reason not in reasons:
                    reasons.append(reason)
                details.append(d.message)
        if not pipeline.graph.is_acyclic():  # access lists that read each other
            return Review(plan, pipeline, reasons, details)
        expected, _ = pipeline.graph.longest_path(_p95(pipeline))
        ceiling = pipeline.budget.latency_ms
        if ceiling is not None and expected > ceiling and "over_budget:latency" not in reasons:
            reasons.append("over_budget:latency")
            details.append(f"p95 latency {expected} ms exceeds the ceiling {ceiling} ms")
        for name, declared, recomputed in receipts(plan, pipeline, ctx):
            reasons.append(f"inconsistent_receipt:{name}")
            details.append(f"declared {name} {declared!r}, recomputed {recomputed!r}")
        return Review(plan, pipeline, reasons, details)

    def admits(self, plan: Plan) -> bool:
        return self.review(plan).accepted

    def _fallback_plan(self) -> Plan:
        ctx = self.context
        constraints = ctx.limits.constraints
        if isinstance(self.fallback, RiskPlanner):
            return self.fallback.plan(ctx.task, ctx.workers, constraints, admissible=self.admits)
        return self.fallback.plan(ctx.task, ctx.workers, constraints)

    def decide_proposal(self, planner: str, proposal: str | Plan | Mapping[str, Any]) -> Decision:
        """The decision for one proposal: it runs if accepted, else the checked fallback."""
        text: str
        if isinstance(proposal, Plan):
            text = proposal.to_json()
        elif isinstance(proposal, str):
            text = proposal
        else:
            text = json.dumps(proposal, sort_keys=True, default=str)
        return self._decide(planner, text, self.review(proposal))

    def _decide(self, planner: str, text: str | None, first: Review) -> Decision:
        if first.accepted:
            assert first.plan is not None and first.pipeline is not None
            return Decision(planner, True, first.plan, first.pipeline, [], [], None, text)
        record: dict[str, Any] = {
            "planner": planner,
            "accepted": False,
            "reasons": first.reasons,
            "details": first.details,
            "fallback": self.fallback_name,
            "proposal": text,
        }
        try:
            fallback = self._fallback_plan()
        except (PlannerError, PlanParseError, ValueError) as exc:
            record["fallback_reasons"] = ["planner_failed"]
            record["fallback_details"] = [str(exc)]
            raise GuardError(record) from None
        second = self.review(fallback)
        if not second.accepted:
            record["fallback_reasons"] = second.reasons
            record["fallback_details"] = second.details
            raise GuardError(record)
        assert second.plan is not None and second.pipeline is not None
        return Decision(
            planner,
            False,
            second.plan,
            second.pipeline,
            first.reasons,
            first.details,
            self.fallback_name,
            text,
        )

    def decide(self, planner_name: str, planner: Planner | TextPlanner) -> Decision:
        """Ask `planner` for a proposal and decide what runs; a planner failure falls back."""
        ctx = self.context
        constraints = ctx.limits.constraints
        proposal: str | Plan
        try:
            if isinstance(planner, TextPlanner):
                proposal = planner.propose(ctx.task, ctx.workers, constraints)
            else:
                proposal = planner.plan(ctx.task, ctx.workers, constraints)
        except PlanParseError as exc:  # a planner that parsed its own output
            return self._decide(planner_name, None, Review(None, None, [exc.reason], [str(exc)]))
        except (PlannerError, ValueError) as exc:  # NoFeasiblePlan is a ValueError
            detail = f"{type(exc).__name__}: {exc}"
            return self._decide(
                planner_name, None, Review(None, None, ["planner_failed"], [detail])
            )
        return self.decide_proposal(planner_name, proposal)


def context_for_run(
    policy: PolicySource,
    base: Pipeline,
    prompt: str,
    risk: RiskProfile,
    worker_ids: Sequence[str] | None = None,
    priors: Mapping[str, tuple[float, float]] | None = None,
) -> GuardContext:
    """The guard context of one run: roster from the policy, task from the prompt's risk,
    limits from the compiled pipeline x tier (its budget already holds the CLI ceilings)."""
    workers = tuple(worker_profiles(policy.policy, worker_ids, priors))
    return GuardContext(
        policy=policy,
        workers=workers,
        task=task_profile(prompt, risk),
        limits=limits_for(base, workers, risk),
        name=base.name,
        instruction=base.instruction or DEFAULT_INSTRUCTION,
        kind=base.kind,
        input_tokens=base.input_tokens,
    )


def conduct(
    policy: PolicySource,
    base: Pipeline,
    prompt: str,
    profiler: RiskProfiler,
    planner: str,
    *,
    workers: Sequence[str] | None = None,
    priors: Mapping[str, tuple[float, float]] | None = None,
    proposer: Planner | TextPlanner | None = None,
    **options: Any,
) -> Decision:
    """Plan one run: profile the prompt, ask the named planner (or `proposer`), guard the
    proposal; the decision's pipeline is what `loomc.exec.executor.execute` runs.

    Raises `ValueError` for an unusable roster and `GuardError` when no plan passes."""
    from loomc.conductor.planners import make_planner

    risk = profiler.profile(prompt, base.kind)
    context = context_for_run(policy, base, prompt, risk, workers, priors)
    chosen = proposer if proposer is not None else make_planner(planner, **options)
    return Guard(context).decide(planner, chosen)
