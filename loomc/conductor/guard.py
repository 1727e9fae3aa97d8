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
from dataclasses import dataclass, field
from typing import Any

from loomc.checker.rules import check_pipeline
from loomc.conductor.mapping import limits_for, task_estimate, worker_profiles
from loomc.conductor.plan import ROLES, Plan, Planner, PlanParseError
from loomc.conductor.plan_ir import (
    CEILING_REASONS,
    DEFAULT_INSTRUCTION,
    GuardContext,
    _p95,
    compile_plan,
    plan_source,
    receipts,
)
from loomc.conductor.planners import PlannerError, PlannerUnavailable, RiskPlanner, TextPlanner
from loomc.conductor.prompt_format import extract_first_json
from loomc.errors import LoomcError
from loomc.ir.model import Pipeline
from loomc.policy.load import PolicySource
from loomc.risk.base import RiskProfile, RiskProfiler

__all__ = [
    "Decision",
    "Guard",
    "GuardContext",
    "GuardError",
    "Review",
    "compile_plan",
    "conduct",
    "context_for_run",
    "plan_source",
    "receipts",
]


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
    task: dict[str, Any] | None = None  # the task profile the planner read
    drivers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # what the planner's own model calls cost (a served planner's endpoint): calls, tokens
    usage: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "planner": self.planner,
            "accepted": self.accepted,
            "reasons": list(self.reasons),
            "details": list(self.details),
            "fallback": self.fallback,
            "proposal": self.proposal,
            "plan": self.plan.to_dict(),
            "steps": self.pipeline.graph.topological_order(),
        }
        if self.task is not None:
            out["task"] = self.task
            out["drivers"] = {k: list(v) for k, v in self.drivers.items()}
        if self.usage is not None:
            out["usage"] = dict(self.usage)
        return out


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


class Guard:
    """Checks proposals against one context and falls back to a checked plan."""

    def __init__(
        self,
        context: GuardContext,
        fallback: Planner | None = None,
        fallback_name: str = "risk",
        *,
        allow_fallback: bool = False,
    ) -> None:
        """`allow_fallback`: a planner that cannot run at all (`PlannerUnavailable`: model
        missing, pinned base mismatch, endpoint down) is replaced by the fallback instead of
        raising; the decision says so (`planner_unavailable`). A proposal the checker rejects
        always falls back: that is the guard's job, not a misconfiguration."""
        self.context = context
        self.fallback: Planner = fallback or RiskPlanner()
        self.fallback_name = fallback_name
        self.allow_fallback = allow_fallback

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

    def decide_proposal(
        self,
        planner: str,
        proposal: str | Plan | Mapping[str, Any],
        usage: Mapping[str, Any] | None = None,
    ) -> Decision:
        """The decision for one proposal: it runs if accepted, else the checked fallback;
        ``usage`` is what the planner's model calls for it cost (kept on the decision)."""
        text: str
        if isinstance(proposal, Plan):
            text = proposal.to_json()
        elif isinstance(proposal, str):
            text = proposal
        else:
            text = json.dumps(proposal, sort_keys=True, default=str)
        return self._decide(planner, text, self.review(proposal), usage)

    def decide_review(
        self, planner: str, first: Review, usage: Mapping[str, Any] | None = None
    ) -> Decision:
        """The decision when the planner produced no proposal (`first` says why)."""
        return self._decide(planner, None, first, usage)

    def _decide(
        self, planner: str, text: str | None, first: Review, usage: Mapping[str, Any] | None = None
    ) -> Decision:
        ctx = self.context
        seen: dict[str, Any] = {
            "task": ctx.task.to_dict(include_request_id=False),
            "drivers": ctx.drivers,
            "usage": None if usage is None else dict(usage),
        }
        if first.accepted:
            assert first.plan is not None and first.pipeline is not None
            return Decision(planner, True, first.plan, first.pipeline, [], [], None, text, **seen)
        record: dict[str, Any] = {
            "planner": planner,
            "accepted": False,
            "reasons": first.reasons,
            "details": first.details,
            "fallback": self.fallback_name,
            "proposal": text,
        }
        if usage is not None:
            record["usage"] = dict(usage)
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
            **seen,
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
        except PlannerUnavailable as exc:
            if not self.allow_fallback:
                raise
            detail = f"{exc}; the {self.fallback_name} planner planned this run instead"
            return self._decide(
                planner_name,
                None,
                Review(None, None, ["planner_unavailable"], [detail]),
                planner_usage(planner),
            )
        except PlanParseError as exc:  # a planner that parsed its own output
            review = Review(None, None, [exc.reason], [str(exc)])
            return self._decide(planner_name, None, review, planner_usage(planner))
        except (PlannerError, ValueError) as exc:  # NoFeasiblePlan is a ValueError
            detail = f"{type(exc).__name__}: {exc}"
            return self._decide(
                planner_name,
                None,
                Review(None, None, ["planner_failed"], [detail]),
                planner_usage(planner),
            )
        return self.decide_proposal(planner_name, proposal, planner_usage(planner))


def planner_usage(planner: Any, index: int = 0) -> dict[str, Any] | None:
    """What ``planner``'s model calls cost for prompt ``index`` of its latest call (a served
    planner's ``last_usage``); None for a planner that calls no model."""
    used = getattr(planner, "last_usage", None)
    if isinstance(used, list) and index < len(used) and isinstance(used[index], dict):
        return dict(used[index])
    return None


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
    task, drivers = task_estimate(prompt, risk)
    return GuardContext(
        policy=policy,
        workers=workers,
        task=task,
        drivers=drivers,
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
    allow_fallback: bool = False,
    **options: Any,
) -> Decision:
    """Plan one run: profile the prompt, ask the named planner (or `proposer`), guard the
    proposal; the decision's pipeline is what `loomc.exec.executor.execute` runs.

    Raises `ValueError` for an unusable roster, `GuardError` when no plan passes and
    `PlannerUnavailable` when the planner cannot run (unless `allow_fallback`)."""
    from loomc.conductor.planners import make_planner

    risk = profiler.profile(prompt, base.kind)
    context = context_for_run(policy, base, prompt, risk, workers, priors)
    chosen = proposer if proposer is not None else make_planner(planner, **options)
    return Guard(context, allow_fallback=allow_fallback).decide(planner, chosen)
