"""The v2 plan space and closed-form outcome model (CONDUCTOR-V2 §2.7–§2.10).

Every expression keeps the reference's evaluation order: labels are rounded to 4–6 decimals,
so a reassociated sum can flip a digit and break byte equality with the published corpus.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import permutations
from typing import Any, Protocol

from loomc.conductor.plan import POLICY_CALLS, Constraints, Policy, TaskProfile, WorkerProfile

INFEASIBLE_UTILITY = -1000.0
_REVIEW_STRENGTHS = frozenset({"review", "reasoning"})
_FINAL_STRENGTHS = frozenset({"synthesis", "reasoning", "writing"})


def clip(x: float, lo: float, hi: float) -> float:
    return max(lo, min(hi, x))


def clip01(x: float) -> float:
    return max(0.0, min(1.0, x))


@dataclass(frozen=True)
class Candidate:
    """One role assignment with the costs recomputed from the worker table."""

    policy: Policy
    writer: str
    reviewer: str | None
    finalizer: str | None
    calls: int
    estimated_credits: float
    estimated_latency_ms: int
    independent_verification: bool

    @property
    def roles(self) -> tuple[str, str | None, str | None]:
        return (self.writer, self.reviewer, self.finalizer)

    def access(self) -> dict[str, list[str]]:
        return {
            "finalizer": ["writer", "reviewer"] if self.finalizer is not None else [],
            "reviewer": ["writer"] if self.reviewer is not None else [],
            "writer": [],
        }

    def record(self) -> dict[str, Any]:
        """The plan-record part of a v2 label (no budgets, estimates or reason codes)."""
        return {
            "access": self.access(),
            "estimated_credits": self.estimated_credits,
            "estimated_latency_ms": self.estimated_latency_ms,
            "finalizer": self.finalizer,
            "independent_verification": self.independent_verification,
            "max_calls": self.calls,
            "policy": self.policy,
            "reviewer": self.reviewer,
            "writer": self.writer,
        }


@dataclass(frozen=True)
class Outcome:
    quality: float
    pass_rate: float


def build_candidate(
    policy: Policy,
    writer: str,
    reviewer: str | None,
    finalizer: str | None,
    workers: Mapping[str, WorkerProfile],
) -> Candidate:
    """Recompute costs in role order (credits summed writer → reviewer → finalizer, then r3)."""
    used = [workers[w] for w in (writer, reviewer, finalizer) if w is not None]
    credits = 0.0
    latency = 0
    for worker in used:
        credits += worker.credits_per_call
        latency += worker.p95_latency_ms
    independent = reviewer is not None and (
        workers[reviewer].provider_group != workers[writer].provider_group
    )
    return Candidate(
        policy=policy,
        writer=writer,
        reviewer=reviewer,
        finalizer=finalizer,
        calls=POLICY_CALLS[policy],
        estimated_credits=round(credits, 3),
        estimated_latency_ms=latency,
        independent_verification=independent,
    )


def enumerate_candidates(workers: Sequence[WorkerProfile]) -> list[Candidate]:
    """The 15 v2 plans in the fixed order: lean a,b,c; balanced pairs; strict triples."""
    table = {w.id: w for w in workers}
    ids = [w.id for w in workers]
    out = [build_candidate("lean", a, None, None, table) for a in ids]
    out += [build_candidate("balanced", a, b, None, table) for a, b in permutations(ids, 2)]
    out += [build_candidate("strict", a, b, c, table) for a, b, c in permutations(ids, 3)]
    return out


def feasible(candidate: Candidate, constraints: Constraints) -> bool:
    return (
        candidate.calls <= constraints.max_calls
        and candidate.estimated_credits <= constraints.max_credits + 1e-9
        and candidate.estimated_latency_ms <= constraints.max_latency_ms
    )


def difficulty(task: TaskProfile) -> float:
    return 0.42 * task.complexity + 0.28 * task.ambiguity + 0.30 * task.risk


def outcome(
    task: TaskProfile, candidate: Candidate, workers: Mapping[str, WorkerProfile]
) -> Outcome:
    """Expected quality/pass rate of a plan (§2.8), rounded to 4 places at the end only."""
    d = difficulty(task)
    w = workers[candidate.writer]
    q = clip(w.quality - 0.24 * d + 0.08 * (1 - task.complexity), 0.05, 0.995)
    p = clip(w.pass_rate - 0.27 * d, 0.03, 0.995)
    if candidate.reviewer is not None:
        r = workers[candidate.reviewer]
        rel = r.quality * r.pass_rate
        power = rel * (0.28 + 0.34 * task.evidence_need + 0.18 * task.risk)
        if r.provider_group != w.provider_group:
            power *= 1.12
        regress = (1 - r.quality) * (1 - r.pass_rate) * (0.08 + 0.08 * task.ambiguity)
        q = clip01(q + (1 - q) * power - q * regress)
        p = clip01(p + (1 - p) * rel * (0.36 + 0.34 * task.risk) - 0.5 * p * regress)
    if candidate.finalizer is not None:
        f = workers[candidate.finalizer]
        fit = 0.035 if _FINAL_STRENGTHS.intersection(f.strengths) else -0.025
        fq = clip(f.quality - 0.10 * d + fit, 0.05, 0.995)
        spow = fq * f.pass_rate * (0.20 + 0.24 * task.complexity + 0.16 * task.ambiguity)
        ev = clip01(q + (1 - q) * spow)
        q = clip01(0.58 * ev + 0.42 * fq)
        p = clip01(0.62 * p + 0.38 * f.pass_rate)
    return Outcome(quality=round(q, 4), pass_rate=round(p, 4))


def role_fitness_penalty(
    candidate: Candidate, constraints: Constraints, workers: Mapping[str, WorkerProfile]
) -> float:
    """§2.9: penalise weak reviewers and finalizers weaker than the plan's best worker."""
    w = workers[candidate.writer]
    penalty = 0.0
    if candidate.reviewer is not None:
        r = workers[candidate.reviewer]
        floor = max(0.55, min(0.82, constraints.minimum_quality - 0.1))
        penalty += 22 * max(0, floor - r.quality)
        penalty += 12 * max(0, 0.58 - r.pass_rate)
        penalty += 9 * max(0, w.quality - r.quality - 0.18)
        if not _REVIEW_STRENGTHS.intersection(r.strengths):
            penalty += 2.5
    if candidate.finalizer is not None:
        f = workers[candidate.finalizer]
        used = [workers[x] for x in candidate.roles if x is not None]
        best_q = max(x.quality for x in used)
        best_p = max(x.pass_rate for x in used)
        penalty += 34 * max(0, best_q - f.quality)
        penalty += 14 * max(0, best_p - f.pass_rate - 0.08)
        if not _FINAL_STRENGTHS.intersection(f.strengths):
            penalty += 3.0
    return penalty


def verification_pressure(task: TaskProfile) -> float:
    return task.risk * task.consequence * (0.55 + 0.45 * task.evidence_need)


def utility(
    task: TaskProfile,
    constraints: Constraints,
    candidate: Candidate,
    result: Outcome,
    workers: Mapping[str, WorkerProfile],
) -> float:
    """§2.10 utility (r6); infeasible plans score a flat −1000."""
    if not feasible(candidate, constraints):
        return INFEASIBLE_UTILITY
    q, p, calls = result.quality, result.pass_rate, candidate.calls
    s = 62 * q + 23 * p
    s -= 7 * candidate.estimated_credits / max(constraints.max_credits, 0.1)
    s -= 4.5 * candidate.estimated_latency_ms / max(constraints.max_latency_ms, 1)
    s -= 1.5 * (calls - 1)
    s -= role_fitness_penalty(candidate, constraints, workers)
    s -= 42 * max(0, constraints.minimum_quality - q)
    vp = verification_pressure(task)
    if candidate.independent_verification:
        s += 12 * vp
    elif vp > 0.42:
        s -= 28 * vp
    if candidate.policy == "strict":
        sp = 0.4 * task.complexity + 0.25 * task.ambiguity + 0.2 * task.risk
        sp += 0.15 * task.evidence_need
        s += 30 * max(0, sp - 0.35)
    if task.risk < 0.28 and task.complexity < 0.42:
        s -= 4.8 * (calls - 1)
    if task.reversibility < 0.3 and candidate.policy == "lean":
        s -= 7.5
    return round(s, 6)


class OutcomeModel(Protocol):
    """What the search planner optimises; the v2 closed form is the default implementation."""

    def outcome(
        self, task: TaskProfile, candidate: Candidate, workers: Mapping[str, WorkerProfile]
    ) -> Outcome: ...

    def utility(
        self,
        task: TaskProfile,
        constraints: Constraints,
        candidate: Candidate,
        result: Outcome,
        workers: Mapping[str, WorkerProfile],
    ) -> float: ...


class V2OutcomeModel:
    """The published closed-form model (§2.8–§2.10)."""

    def outcome(
        self, task: TaskProfile, candidate: Candidate, workers: Mapping[str, WorkerProfile]
    ) -> Outcome:
        return outcome(task, candidate, workers)

    def utility(
        self,
        task: TaskProfile,
        constraints: Constraints,
        candidate: Candidate,
        result: Outcome,
        workers: Mapping[str, WorkerProfile],
    ) -> float:
        return utility(task, constraints, candidate, result, workers)
