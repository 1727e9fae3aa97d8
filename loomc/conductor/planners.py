"""The planners: (task profile, worker profiles, hard constraints) → a proposed `Plan`.

* `risk` (`RiskPlanner`) — the deterministic local default, mirroring the adaptive tiers: the
  risk level (read back from `task.risk` with the thresholds of `loomc.conductor.mapping`) picks
  lean / balanced / strict (research tasks get at least balanced, like the reference's balanced
  escalation), clipped to the call ceiling; workers are picked per role by capability, then
  credits, then latency, like the reference `pick(prefs)` (CONDUCTOR-V2 §7.3) but with distinct
  workers, as the plan schema requires. When the preferred plan does not fit the limits it tries
  the other assignments of that depth, then shallower depths; an optional `admissible` predicate
  (the guard passes its own checker) lets it return only plans the checker accepts.
* `search` (`loomc.conductor.search.SearchPlanner`) — exhaustive under the v2 outcome model.
* `learned` (`LearnedProposer`) — the v2 prompt (`build_prompt`) fed to a causal LM + adapter
  (`loomc.conductor.learned.LearnedPlanner`, imported lazily); it returns the model's raw text,
  which only the guard turns into a plan.

Every planner's output is a proposal: `loomc.conductor.guard` decides whether it runs.
`make_planner` is the one registry: `loomc run --planner` and `loomc conductor predict` both use
it (the research `router` baseline is `loomc_research.v2.router`, outside the product).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import permutations
from typing import Any, Protocol, runtime_checkable

from loomc.conductor import PLANNER_NAMES
from loomc.conductor.errors import PlannerError, PlannerUnavailable
from loomc.conductor.outcome import Candidate, build_candidate, feasible, outcome
from loomc.conductor.plan import (
    Constraints,
    Plan,
    Policy,
    TaskProfile,
    WorkerProfile,
)
from loomc.conductor.proposer import LearnedProposer
from loomc.conductor.search import SearchPlanner, label_record

__all__ = [
    "PLANNER_NAMES",
    "LearnedProposer",
    "PlannerError",
    "PlannerUnavailable",
    "RiskPlanner",
    "make_planner",
]

DEPTH: tuple[Policy, ...] = ("lean", "balanced", "strict")
LEVEL_POLICY: dict[str, Policy] = {"low": "lean", "medium": "balanced", "high": "strict"}
HIGH_RISK = 0.7  # estimate.LEVEL_RISK: low 0.2, medium 0.5, high 0.85
MEDIUM_RISK = 0.4
RISK_REASON = "local_risk_policy"

WRITE = frozenset({"drafting", "writing", "coding", "implementation", "analysis"})
REVIEW = frozenset({"verification", "review", "critique", "audit"})
FINAL = frozenset({"synthesis", "final-answer", "writing"})
# pick(prefs) of §7.3 by capability: general tasks draft with the finalizer-like worker.
ROLE_PREFS: dict[str, tuple[frozenset[str], ...]] = {
    "writer_general": (FINAL, WRITE, REVIEW),
    "writer": (WRITE, FINAL, REVIEW),
    "reviewer": (REVIEW, FINAL, WRITE),
    "finalizer": (FINAL, WRITE, REVIEW),
}

Admissible = Callable[[Plan], bool]


@runtime_checkable
class TextPlanner(Protocol):
    """A planner whose proposal is raw text (a model's output), parsed only by the guard."""

    def propose(
        self, task: TaskProfile, workers: Sequence[WorkerProfile], constraints: Constraints
    ) -> str: ...


def risk_level(task: TaskProfile) -> str:
    if task.risk >= HIGH_RISK:
        return "high"
    if task.risk >= MEDIUM_RISK:
        return "medium"
    return "low"


def preferred_policy(task: TaskProfile, constraints: Constraints, workers: int) -> Policy:
    """Risk level → tier, research at least balanced, within the call ceiling and the roster."""
    depth = DEPTH.index(LEVEL_POLICY[risk_level(task)])
    if task.category == "research":
        depth = max(depth, 1)
    depth = min(depth, max(constraints.max_calls, 1) - 1, max(workers, 1) - 1)
    return DEPTH[depth]


def _role_score(worker: WorkerProfile, prefs: tuple[frozenset[str], ...]) -> int:
    strengths = set(worker.strengths)
    return next((i for i, caps in enumerate(prefs) if caps & strengths), len(prefs))


def _label(
    task: TaskProfile,
    constraints: Constraints,
    candidate: Candidate,
    table: Mapping[str, WorkerProfile],
    codes: Sequence[str],
) -> dict[str, Any]:
    return label_record(
        constraints, candidate, outcome(task, candidate, table), sorted(set(codes))[:4]
    )


class RiskPlanner:
    """The deterministic default; see the module docstring."""

    name = "risk"

    def _assignments(
        self, policy: Policy, task: TaskProfile, workers: Sequence[WorkerProfile]
    ) -> list[Candidate]:
        """Every distinct assignment of this depth, best first (the §7.3 pick is first)."""
        table = {w.id: w for w in workers}
        order = {w.id: i for i, w in enumerate(workers)}
        writer_prefs = ROLE_PREFS["writer_general" if task.category == "general" else "writer"]
        n = {"lean": 1, "balanced": 2, "strict": 3}[policy]

        def key(roles: tuple[str, ...]) -> tuple[int, int, int, float, int, list[int]]:
            prefs = [writer_prefs, ROLE_PREFS["reviewer"], ROLE_PREFS["finalizer"]]
            # Scarce roles first: the finalizer, then the reviewer, then the writer.
            scores = [_role_score(table[w], p) for w, p in zip(roles, prefs, strict=False)]
            dependent = 0
            if len(roles) > 1 and table[roles[0]].provider_group == table[roles[1]].provider_group:
                dependent = 1
            credits = sum(table[w].credits_per_call for w in roles)
            latency = sum(table[w].p95_latency_ms for w in roles)
            return (
                sum(scores[1:]),
                scores[0],
                dependent,
                credits,
                latency,
                [order[w] for w in reversed(roles)],
            )

        combos = sorted(permutations([w.id for w in workers], n), key=key)
        return [
            build_candidate(
                policy,
                roles[0],
                roles[1] if n > 1 else None,
                roles[2] if n > 2 else None,
                table,
            )
            for roles in combos
        ]

    def plan(
        self,
        task: TaskProfile,
        workers: Sequence[WorkerProfile],
        constraints: Constraints,
        *,
        admissible: Admissible | None = None,
    ) -> Plan:
        if not workers:
            raise PlannerError("no workers to plan with")
        table = {w.id: w for w in workers}
        level = risk_level(task)
        preferred = preferred_policy(task, constraints, len(workers))
        wanted = LEVEL_POLICY[level]
        for depth in range(DEPTH.index(preferred), -1, -1):
            policy = DEPTH[depth]
            for candidate in self._assignments(policy, task, workers):
                if not feasible(candidate, constraints):
                    continue
                codes = [RISK_REASON, f"risk_{level}"]
                if depth > DEPTH.index(wanted):
                    codes.append("research_task")
                elif depth < DEPTH.index(wanted):
                    codes.append(
                        "call_ceiling" if depth == DEPTH.index(preferred) else "budget_constrained"
                    )
                plan = Plan.from_json(_label(task, constraints, candidate, table, codes))
                if admissible is None or admissible(plan):
                    return plan
        raise PlannerError("no plan of any depth fits the call, credit and latency limits")


def make_planner(name: str, **options: Any) -> Any:
    """`risk`, `search` or `learned` (options are `LearnedProposer`'s)."""
    if name == "risk":
        return RiskPlanner()
    if name == "search":
        return SearchPlanner()
    if name == "learned":
        return LearnedProposer(**options)
    raise ValueError(f"unknown planner {name!r}; planners are {', '.join(PLANNER_NAMES)}")
