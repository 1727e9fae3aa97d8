"""Plan many prompts at once: one guard decision per prompt, one batched call for a model.

`loomc eval`'s `conductor:PLANNER` strategies plan every case before anything runs (so the
pre-flight worst case is the worst case of the plans that will run). For the deterministic
planners that is a loop over `Guard.decide`; a planner with `propose_batch` (the learned one,
in-process or served) gets every prompt in one call and decodes them in batches, and each raw
proposal then goes through the same guard as a single run's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loomc.conductor.guard import Decision, Guard, GuardContext, Review, context_for_run
from loomc.conductor.planners import PlannerError, PlannerUnavailable, make_planner
from loomc.ir.model import Pipeline
from loomc.policy.load import PolicySource
from loomc.risk.base import RiskProfiler


def plan_many(
    policy: PolicySource,
    bases: Sequence[Pipeline],
    prompts: Sequence[str],
    profiler: RiskProfiler,
    planner: str,
    *,
    workers: Sequence[str] | None = None,
    priors: Mapping[str, tuple[float, float]] | None = None,
    proposer: Any = None,
    allow_fallback: bool = False,
    **options: Any,
) -> list[Decision]:
    """One decision per (base, prompt); raises `GuardError` (nothing passed for a prompt),
    `PlannerUnavailable` (unless `allow_fallback`) or `ValueError` (unusable roster)."""
    contexts: list[GuardContext] = [
        context_for_run(policy, base, prompt, profiler.profile(prompt, base.kind), workers, priors)
        for base, prompt in zip(bases, prompts, strict=True)
    ]
    chosen = proposer if proposer is not None else make_planner(planner, **options)
    guards = [Guard(ctx, allow_fallback=allow_fallback) for ctx in contexts]
    batch = getattr(chosen, "propose_batch", None)
    if batch is None or not contexts:
        return [guard.decide(planner, chosen) for guard in guards]
    try:
        texts = batch([(c.task, c.workers, c.limits.constraints) for c in contexts])
    except PlannerUnavailable as exc:
        if not allow_fallback:
            raise
        why = f"{exc}; the risk planner planned this run instead"
        return [
            g.decide_review(planner, Review(None, None, ["planner_unavailable"], [why]))
            for g in guards
        ]
    except PlannerError as exc:
        why = f"{type(exc).__name__}: {exc}"
        return [
            g.decide_review(planner, Review(None, None, ["planner_failed"], [why])) for g in guards
        ]
    return [guard.decide_proposal(planner, text) for guard, text in zip(guards, texts, strict=True)]
