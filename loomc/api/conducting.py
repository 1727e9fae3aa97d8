"""Plan the cases of `conductor:PLANNER` eval strategies before anything runs.

Each case is planned on its own pipeline's planning base (the pipeline at its widest tier, as
`loomc run --planner` does), its task profile estimated from its prompt by the strategy's
profiler; the guard checks each plan and the plan's pipeline is what the eval runs, so the
pre-flight worst case covers exactly the plans that will run. The learned planner sees every
case of a strategy in one batched call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from loomc.errors import LoomcError
from loomc.eval.dataset import Case
from loomc.eval.strategies import DEFAULT_PIPELINE, Strategy
from loomc.ir.model import Pipeline
from loomc.project import Project
from loomc.risk.base import RiskProfiler
from loomc.units import Budget


class PlanningFailed(LoomcError, RuntimeError):
    """A conductor strategy could not plan a case (no plan passed the checker, or the planner
    is unavailable and no fallback was allowed): nothing ran. One line for the user."""


def plan_conductor_cases(
    project: Project,
    cases: Sequence[Case],
    strategies: Sequence[Strategy],
    profilers: Mapping[bool, RiskProfiler],
    options: Mapping[str, Any] | None = None,
    *,
    allow_fallback: bool = False,
) -> tuple[dict[tuple[str, str], Pipeline], dict[tuple[str, str], dict[str, Any]]]:
    """(case id, strategy) → the checked plan's pipeline, and → the guard's decision (JSON)."""
    from loomc.api.running import planning_base, widest_tier
    from loomc.conductor.batch import plan_many
    from loomc.conductor.guard import GuardError
    from loomc.conductor.planners import PlannerUnavailable

    pipelines: dict[tuple[str, str], Pipeline] = {}
    decisions: dict[tuple[str, str], dict[str, Any]] = {}
    tier = widest_tier(project)
    bases: dict[str, Pipeline] = {}
    for strategy in strategies:
        if strategy.planner is None or not cases:
            continue
        names = [c.pipeline or DEFAULT_PIPELINE for c in cases]
        for name in names:
            if name not in bases:
                bases[name] = planning_base(project, name, tier, Budget())
        try:
            done = plan_many(
                project.policy_source,
                [bases[n] for n in names],
                [c.prompt for c in cases],
                profilers[strategy.semantic],
                strategy.planner,
                allow_fallback=allow_fallback,
                **dict(options or {}),
            )
        except PlannerUnavailable as exc:
            raise PlanningFailed(
                f"{strategy.name}: {exc} (allow the fallback to plan with the risk planner "
                "instead: --allow-planner-fallback)"
            ) from exc
        except GuardError as exc:
            raise PlanningFailed(f"{strategy.name}: {exc}") from exc
        except ValueError as exc:
            raise PlanningFailed(f"{strategy.name}: {exc}") from exc
        for case, decision in zip(cases, done, strict=True):
            plan = decision.plan
            # the roles in the tier: plans of one depth differ by worker, and the pre-flight
            # and the journal key pipelines by name@tier
            tier_name = f"{decision.pipeline.tier}:{'>'.join(plan.roles)}"
            pipelines[(case.id, strategy.name)] = replace(decision.pipeline, tier=tier_name)
            decisions[(case.id, strategy.name)] = decision.to_json()
    return pipelines, decisions
