"""The `search` planner: exhaustive search of the 15 plans under a pluggable outcome model.

Label selection (CONDUCTOR-V2 §2.11) with the target-quality filter, plus reason codes. The same
routine is the corpus oracle (`loomc_research.v2.generator`) and the `search` planner; only the
outcome model is pluggable, so a planner under a different model keeps the v2 selection rule.
Under the default v2 model it is the oracle itself, so on v2 data it scores 100% exact plan and
zero regret. `label_record` is the one v2 label builder (planners, router, ranker, generators).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loomc.conductor.outcome import (
    Candidate,
    Outcome,
    OutcomeModel,
    V2OutcomeModel,
    enumerate_candidates,
    feasible,
)
from loomc.conductor.plan import Constraints, Plan, TaskProfile, WorkerProfile

MAX_REASON_CODES = 4


class NoFeasiblePlan(ValueError):
    """Raised when the constraints admit none of the 15 plans."""


@dataclass(frozen=True)
class Scored:
    candidate: Candidate
    outcome: Outcome
    utility: float


@dataclass(frozen=True)
class Selection:
    chosen: Scored
    candidate_count: int
    label: dict[str, Any]
    oracle: dict[str, Any]


def reason_codes(
    task: TaskProfile, constraints: Constraints, candidate: Candidate, result: Outcome
) -> list[str]:
    """Every firing code, sorted, truncated to the first four (the reference's behaviour)."""
    codes: set[str] = set()
    if task.risk >= 0.72 or task.consequence >= 0.78:
        codes.add("high_consequence")
    if task.evidence_need >= 0.65:
        codes.add("independent_evidence")
    if task.complexity >= 0.72 or task.ambiguity >= 0.72:
        codes.add("complex_task")
    if candidate.estimated_credits >= 0.82 * constraints.max_credits:
        codes.add("credit_constrained")
    if candidate.estimated_latency_ms >= 0.82 * constraints.max_latency_ms:
        codes.add("latency_constrained")
    if result.quality < constraints.minimum_quality:
        codes.add("best_feasible_below_target")
    if candidate.policy == "lean" and not codes:
        codes.add("single_call_sufficient")
    if candidate.independent_verification:
        codes.add("independent_verification")
    return sorted(codes)[:MAX_REASON_CODES]


def label_record(
    constraints: Constraints, candidate: Candidate, result: Outcome, codes: Sequence[str]
) -> dict[str, Any]:
    """A v2 label: the plan record, the echoed limits, the estimates, the reason codes."""
    label = candidate.record()
    label["max_credits"] = constraints.max_credits
    label["max_latency_ms"] = constraints.max_latency_ms
    label["estimated_quality"] = result.quality
    label["estimated_pass_rate"] = result.pass_rate
    label["reason_codes"] = list(codes)
    return label


def label_for(constraints: Constraints, scored: Scored, codes: Sequence[str]) -> dict[str, Any]:
    return label_record(constraints, scored.candidate, scored.outcome, codes)


def _rank(s: Scored) -> tuple[float, float, float, float, int]:
    c = s.candidate
    return (
        s.utility,
        s.outcome.quality,
        s.outcome.pass_rate,
        -c.estimated_credits,
        -c.estimated_latency_ms,
    )


def select(
    task: TaskProfile,
    constraints: Constraints,
    workers: Sequence[WorkerProfile],
    model: OutcomeModel | None = None,
) -> Selection:
    """Best feasible plan; below-target plans are dropped when any plan meets the target."""
    model = model or V2OutcomeModel()
    table: Mapping[str, WorkerProfile] = {w.id: w for w in workers}
    scored: list[Scored] = []
    for candidate in enumerate_candidates(workers):
        if not feasible(candidate, constraints):
            continue
        result = model.outcome(task, candidate, table)
        scored.append(
            Scored(candidate, result, model.utility(task, constraints, candidate, result, table))
        )
    if not scored:
        raise NoFeasiblePlan("no plan satisfies max_calls, max_credits and max_latency_ms")
    on_target = [s for s in scored if s.outcome.quality >= constraints.minimum_quality]
    pool = on_target or scored
    best = max(pool, key=_rank)  # max keeps the first maximal element: enumeration order
    codes = reason_codes(task, constraints, best.candidate, best.outcome)
    oracle = {
        "candidate_count": len(scored),
        "pass_rate": best.outcome.pass_rate,
        "quality": best.outcome.quality,
        "quality_target_met": best.outcome.quality >= constraints.minimum_quality,
        "utility": best.utility,
    }
    return Selection(best, len(scored), label_for(constraints, best, codes), oracle)


class SearchPlanner:
    """`select` as a planner. Under the v2 model (the default) it takes the equivalent fast path
    of `loomc.conductor.fastsearch` (same plan, bit for bit; about 4x faster); under any other
    outcome model it runs `select` itself."""

    name = "search"

    def __init__(self, model: OutcomeModel | None = None) -> None:
        self.model: OutcomeModel = model or V2OutcomeModel()
        self._fast: Callable[[TaskProfile, Sequence[WorkerProfile], Constraints], Plan] | None
        self._fast = None
        if type(self.model) is V2OutcomeModel:
            from loomc.conductor.fastsearch import fast_plan

            self._fast = fast_plan

    def plan(
        self, task: TaskProfile, workers: Sequence[WorkerProfile], constraints: Constraints
    ) -> Plan:
        """Raises `NoFeasiblePlan` when no plan fits the hard limits."""
        if self._fast is not None:
            return self._fast(task, workers, constraints)
        return Plan.from_json(select(task, constraints, workers, self.model).label)
