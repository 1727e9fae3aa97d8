"""The `search` planner: exhaustive search of the 15 plans under a pluggable outcome model.

Under the default v2 model it is the corpus oracle itself, so on v2 data it scores 100% exact
plan and zero regret; other models (e.g. a risk-aware one) keep the v2 target-quality rule.
"""

from __future__ import annotations

from collections.abc import Sequence

from loomc.conductor.plan import Constraints, Plan, TaskProfile, WorkerProfile
from loomc.conductor.v2.oracle import select
from loomc.conductor.v2.outcome import OutcomeModel, V2OutcomeModel


class SearchPlanner:
    def __init__(self, model: OutcomeModel | None = None) -> None:
        self.model: OutcomeModel = model or V2OutcomeModel()

    def plan(
        self, task: TaskProfile, workers: Sequence[WorkerProfile], constraints: Constraints
    ) -> Plan:
        """Raises `oracle.NoFeasiblePlan` when no plan fits the hard limits."""
        return Plan.from_json(select(task, constraints, workers, self.model).label)
