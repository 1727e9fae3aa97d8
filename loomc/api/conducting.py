"""Plan the cases of `conductor:PLANNER` eval strategies before anything runs.

Each case is planned on its own pipeline's planning base (the pipeline at its widest tier, as
`loomc run --planner` does), its task profile estimated from its prompt by the strategy's
profiler; the guard checks each plan and the plan's pipeline is what the eval runs, so the
pre-flight worst case covers exactly the plans that will run. The learned planner sees every
case of a strategy in one batched call. A resumed eval decides the cells its journal planned
from their journaled proposals (``Planned.replayed``): no planner call is paid twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
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
    journaled: Mapping[tuple[str, str], tuple[str, Mapping[str, Any]]] | None = None,
) -> Planned:
    """(case id, strategy) → the checked plan's pipeline, the guard's decision (JSON) and the
    plan's hash. ``journaled`` (``loomc.eval.journal.journaled_plans`` of a resumed eval's
    journal) holds decisions made before: a cell whose hash matches is decided again from its
    journaled proposal by the guard, without a planner call, and is listed in ``replayed``."""
    from loomc.api.running import planning_base, widest_tier
    from loomc.conductor.batch import plan_many
    from loomc.conductor.guard import GuardError
    from loomc.conductor.planners import PlannerUnavailable
    from loomc.eval.journal import plan_hash

    out = Planned()
    opts = dict(options or {})
    tier = widest_tier(project)
    bases: dict[str, Pipeline] = {}
    for strategy in strategies:
        if strategy.planner is None or not cases:
            continue
        names = [c.pipeline or DEFAULT_PIPELINE for c in cases]
        for name in names:
            if name not in bases:
                bases[name] = planning_base(project, name, tier, Budget())
        digests = [plan_hash(c, strategy.planner, strategy.semantic, opts) for c in cases]
        known = [
            _known(journaled, (c.id, strategy.name), digest)
            for c, digest in zip(cases, digests, strict=True)
        ]
        try:
            done = plan_many(
                project.policy_source,
                [bases[n] for n in names],
                [c.prompt for c in cases],
                profilers[strategy.semantic],
                strategy.planner,
                allow_fallback=allow_fallback,
                known=known,
                **opts,
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
        for case, decision, digest, k in zip(cases, done, digests, known, strict=True):
            plan = decision.plan
            # the roles in the tier: plans of one depth differ by worker, and the pre-flight
            # and the journal key pipelines by name@tier
            tier_name = f"{decision.pipeline.tier}:{'>'.join(plan.roles)}"
            key = (case.id, strategy.name)
            out.pipelines[key] = replace(decision.pipeline, tier=tier_name)
            out.decisions[key] = decision.to_json()
            out.hashes[key] = digest
            if k is not None:
                out.replayed.add(key)
    return out


@dataclass
class Planned:
    """The plans of an eval's conductor cells, keyed by (case id, strategy)."""

    pipelines: dict[tuple[str, str], Pipeline] = field(default_factory=dict)
    decisions: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    hashes: dict[tuple[str, str], str] = field(default_factory=dict)
    replayed: set[tuple[str, str]] = field(default_factory=set)  # decided from the journal


def _known(
    journaled: Mapping[tuple[str, str], tuple[str, Mapping[str, Any]]] | None,
    key: tuple[str, str],
    digest: str,
) -> tuple[str, Mapping[str, Any] | None] | None:
    """The journaled proposal of ``key`` and what it cost, when its plan hash still matches
    and the planner made one (a planner that was unavailable is asked again)."""
    found = (journaled or {}).get(key)
    if found is None or found[0] != digest:
        return None
    proposal, usage = found[1].get("proposal"), found[1].get("usage")
    if not isinstance(proposal, str):
        return None
    return proposal, usage if isinstance(usage, Mapping) else None
