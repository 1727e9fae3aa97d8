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

from loomc.conductor.guard import (
    Decision,
    Guard,
    Review,
    context_for_run,
    planner_usage,
)
from loomc.conductor.planners import PlannerError, PlannerUnavailable, make_planner
from loomc.conductor.served import Served
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
    known: Sequence[tuple[str, Mapping[str, Any] | None] | None] | None = None,
    **options: Any,
) -> list[Decision]:
    """One decision per (base, prompt); raises `GuardError` (nothing passed for a prompt),
    `PlannerUnavailable` (unless `allow_fallback`) or `ValueError` (unusable roster).

    ``known`` (one per prompt, or None) holds a proposal the planner already made for that
    prompt, with what it cost: it goes through the guard again, and the planner is not asked
    (a resumed eval pays no planner call twice)."""
    guards = guards_for(
        policy,
        bases,
        prompts,
        profiler,
        workers=workers,
        priors=priors,
        allow_fallback=allow_fallback,
    )
    contexts = [g.context for g in guards]
    replay = list(known) if known is not None else [None] * len(contexts)
    if len(replay) != len(contexts):
        raise ValueError("known proposals must match the prompts one to one")
    fresh = [i for i, k in enumerate(replay) if k is None]
    decided: dict[int, Decision] = {}
    for i, k in enumerate(replay):
        if k is not None:
            decided[i] = guards[i].decide_proposal(planner, k[0], k[1])
    if fresh:
        chosen = proposer if proposer is not None else make_planner(planner, **options)
        new = _plan_fresh(planner, chosen, [guards[i] for i in fresh], allow_fallback)
        decided.update(zip(fresh, new, strict=True))
    return [decided[i] for i in range(len(contexts))]


def guards_for(
    policy: PolicySource,
    bases: Sequence[Pipeline],
    prompts: Sequence[str],
    profiler: RiskProfiler,
    *,
    workers: Sequence[str] | None = None,
    priors: Mapping[str, tuple[float, float]] | None = None,
    allow_fallback: bool = False,
) -> list[Guard]:
    """One guard per (base, prompt): the prompt profiled locally, nothing asked of a planner."""
    return [
        Guard(
            context_for_run(
                policy, base, prompt, profiler.profile(prompt, base.kind), workers, priors
            ),
            allow_fallback=allow_fallback,
        )
        for base, prompt in zip(bases, prompts, strict=True)
    ]


def decide_served(guard: Guard, planner: str, outcome: Served) -> Decision | None:
    """The decision for one prompt of `LearnedProposer.apropose_batch`: its text through the
    guard; a failed call is the planner unavailable for that prompt (`PlannerUnavailable`
    unless the guard allows the fallback); None when the budget refused the call."""
    usage = outcome.usage or None
    if outcome.text is not None:
        return guard.decide_proposal(planner, outcome.text, usage)
    if outcome.refused is not None:
        return None
    why = f"the learned planner is unavailable: {outcome.error}"
    if not guard.allow_fallback:
        raise PlannerUnavailable(why)
    review = Review(
        None, None, ["planner_unavailable"], [f"{why}; the risk planner planned this run instead"]
    )
    return guard.decide_review(planner, review, usage)


def _plan_fresh(
    planner: str, chosen: Any, guards: Sequence[Guard], allow_fallback: bool
) -> list[Decision]:
    contexts = [g.context for g in guards]
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
            g.decide_review(
                planner,
                Review(None, None, ["planner_unavailable"], [why]),
                planner_usage(chosen, i),
            )
            for i, g in enumerate(guards)
        ]
    except PlannerError as exc:
        why = f"{type(exc).__name__}: {exc}"
        return [
            g.decide_review(
                planner, Review(None, None, ["planner_failed"], [why]), planner_usage(chosen, i)
            )
            for i, g in enumerate(guards)
        ]
    return [
        guard.decide_proposal(planner, text, planner_usage(chosen, i))
        for i, (guard, text) in enumerate(zip(guards, texts, strict=True))
    ]
