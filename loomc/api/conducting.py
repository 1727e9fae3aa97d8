"""Plan the cases of `conductor:PLANNER` eval strategies: free planners before anything runs, a
learned planner once the eval starts, inside its budget.

Each case is planned on its own pipeline's planning base (the pipeline at its widest tier, as
`loomc run --planner` does), its task profile estimated from its prompt by the strategy's
profiler; the guard checks each plan and the plan's pipeline is what the eval runs.

`risk` and `search` cost nothing and plan every case in `plan_conductor_cases`, so the
pre-flight worst case is that of the plans that will run. The learned planner is only checked
there (endpoint URL, key reference, model, pin: no request, no weights loaded): its cases are
left pending (`Planned.pending`) with a bound (`loomc.conductor.cost.plan_bound`) for the
pre-flight, and a served one's calls are counted there too (`PlannerCost`). `plan_pending`
asks it once the eval starts (after the pre-flight passed the totals, never on a dry run):
every case in one batch, each call reserved in the eval-wide ledger before it is sent and
journaled (reservation, settlement, then the plan), so the runs that follow have what planning
spent counted against the same totals. A call the budget refuses sends nothing: its case is
budget-limited (`Planned.limited`) and planned on a resume. A resumed eval decides the cells
its journal planned from their journaled proposals (`Planned.replayed`): no planner call is
paid twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from loomc.errors import LoomcError
from loomc.eval.dataset import Case
from loomc.eval.plan import PlannerCost
from loomc.eval.runlog import RunLog
from loomc.eval.strategies import DEFAULT_PIPELINE, Strategy
from loomc.ir.model import Pipeline
from loomc.project import Project
from loomc.risk.base import RiskProfiler
from loomc.units import Budget

if TYPE_CHECKING:
    from loomc.checker.worstcase import WorstCase
    from loomc.conductor.guard import Decision, Guard
    from loomc.conductor.proposer import LearnedProposer
    from loomc.eval.journal import Journal
    from loomc.eval.plan import Job

DEFERRED = frozenset({"learned"})  # planners asked only once the eval starts


class PlanningFailed(LoomcError, RuntimeError):
    """A conductor strategy could not plan a case (no plan passed the checker, or the planner
    is unavailable and no fallback was allowed): nothing ran. One line for the user."""


@dataclass
class Pending:
    """The cases of one conductor strategy its planner has not been asked about yet."""

    strategy: Strategy
    cases: list[Case]
    guards: list[Guard]
    digests: list[str]
    proposer: LearnedProposer


@dataclass
class Planned:
    """The plans of an eval's conductor cells, keyed by (case id, strategy)."""

    pipelines: dict[tuple[str, str], Pipeline] = field(default_factory=dict)
    decisions: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    hashes: dict[tuple[str, str], str] = field(default_factory=dict)
    replayed: set[tuple[str, str]] = field(default_factory=set)  # decided from the journal
    # not planned yet: the stand-in pipeline and worst case the pre-flight counts
    bounds: dict[tuple[str, str], tuple[Pipeline, WorstCase]] = field(default_factory=dict)
    pending: list[Pending] = field(default_factory=list)
    costs: list[PlannerCost] = field(default_factory=list)  # a served planner's calls
    journaled: set[tuple[str, str]] = field(default_factory=set)  # plan lines written already
    # the cells whose planner call the budget refused: (why, the run's stop reason)
    limited: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)

    def add(self, key: tuple[str, str], decision: Decision, digest: str) -> None:
        plan = decision.plan
        # the roles in the tier: plans of one depth differ by worker, and the pre-flight
        # and the journal key pipelines by name@tier
        tier_name = f"{decision.pipeline.tier}:{'>'.join(plan.roles)}"
        self.pipelines[key] = replace(decision.pipeline, tier=tier_name)
        self.decisions[key] = decision.to_json()
        self.hashes[key] = digest
        self.bounds.pop(key, None)


def plan_conductor_cases(
    project: Project,
    cases: Sequence[Case],
    strategies: Sequence[Strategy],
    profilers: Mapping[bool, RiskProfiler],
    options: Mapping[str, Any] | None = None,
    *,
    allow_fallback: bool = False,
    journaled: Mapping[tuple[str, str], tuple[str, Mapping[str, Any]]] | None = None,
    defer: bool = False,
) -> Planned:
    """(case id, strategy) → the checked plan's pipeline, the guard's decision (JSON) and the
    plan's hash. ``journaled`` (``loomc.eval.journal.journaled_plans`` of a resumed eval's
    journal) holds decisions made before: a cell whose hash matches is decided again from its
    journaled proposal by the guard, without a planner call, and is listed in ``replayed``.
    ``defer``: leave the learned planner's other cells pending (see the module docstring)."""
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
            if defer and strategy.planner in DEFERRED:
                pending = _defer(project, strategy, cases, [bases[n] for n in names], digests,
                                 known, profilers[strategy.semantic], opts, allow_fallback,
                                 out)  # fmt: skip
                if pending is not None:  # else: unavailable, fallback allowed: plan it now
                    _bound(pending, out)
                    if pending.cases:
                        out.pending.append(pending)
                    continue
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
        except (GuardError, ValueError) as exc:
            raise PlanningFailed(f"{strategy.name}: {exc}") from exc
        for case, decision, digest, k in zip(cases, done, digests, known, strict=True):
            key = (case.id, strategy.name)
            out.add(key, decision, digest)
            if k is not None:
                out.replayed.add(key)
    return out


def _defer(
    project: Project,
    strategy: Strategy,
    cases: Sequence[Case],
    bases: Sequence[Pipeline],
    digests: Sequence[str],
    known: Sequence[tuple[str, Mapping[str, Any] | None] | None],
    profiler: RiskProfiler,
    opts: Mapping[str, Any],
    allow_fallback: bool,
    out: Planned,
) -> Pending | None:
    """Check the learned planner and decide the journaled cells; None when the planner cannot
    run and the fallback is allowed (the caller plans every case with the fallback now)."""
    from loomc.conductor.batch import guards_for
    from loomc.conductor.cost import endpoint_price
    from loomc.conductor.planners import PlannerUnavailable, make_planner

    options = {k: v for k, v in opts.items() if k not in ("workers", "priors")}
    proposer = make_planner("learned", **options)
    if proposer.endpoint and proposer.endpoint_model:
        price = endpoint_price(project.policy, proposer.endpoint, proposer.endpoint_model)
        proposer.pricing, proposer.credits = price.pricing, price.credits
    try:
        proposer.check()
    except PlannerUnavailable:
        if allow_fallback:
            return None
        raise
    guards = guards_for(
        project.policy_source,
        bases,
        [c.prompt for c in cases],
        profiler,
        workers=opts.get("workers"),
        priors=opts.get("priors"),
        allow_fallback=allow_fallback,
    )
    pending = Pending(strategy, [], [], [], proposer)
    assert strategy.planner is not None
    for case, guard, digest, k in zip(cases, guards, digests, known, strict=True):
        if k is None:
            pending.cases.append(case)
            pending.guards.append(guard)
            pending.digests.append(digest)
            continue
        key = (case.id, strategy.name)
        out.add(key, guard.decide_proposal(strategy.planner, k[0], k[1]), digest)
        out.replayed.add(key)
    return pending


def _bound(pending: Pending, out: Planned) -> None:
    """The pre-flight's stand-in for each pending cell, and the served planner's calls."""
    from loomc.conductor.cost import plan_bound
    from loomc.conductor.guard import GuardError

    cache: dict[tuple[Any, ...], Any] = {}
    for case, guard in zip(pending.cases, pending.guards, strict=True):
        ctx = guard.context
        key = (ctx.name, ctx.kind, ctx.input_tokens, ctx.instruction, ctx.limits, ctx.workers)
        if key not in cache:
            cache[key] = plan_bound(ctx)
        bound = cache[key]
        if bound is None:
            raise GuardError({"reasons": ["no plan of the 15-plan space passes the checker"]})
        out.bounds[(case.id, pending.strategy.name)] = (bound.pipeline, bound.worst)
    proposer = pending.proposer
    if not proposer.served or not pending.cases:
        return
    model = proposer.model()
    items = [
        (g.context.task, g.context.workers, g.context.limits.constraints) for g in pending.guards
    ]
    worst = [model.worst(p) for p in proposer.prompts(items)]
    out.costs.append(
        PlannerCost(
            strategy=pending.strategy.name,
            model=f"{proposer.endpoint_model} at {proposer.endpoint}",
            calls=sum(w.calls for w in worst),
            tokens=sum(w.tokens for w in worst),
            credits=sum((w.credits for w in worst), Decimal(0)),
            cost=None if proposer.pricing is None else sum((w.cost for w in worst), Decimal(0)),
        )
    )


async def plan_pending(planned: Planned, journal: Journal, totals: Budget | None) -> None:
    """Ask each pending strategy's planner for its cases, inside ``totals`` (what ``journal``
    says was spent already counts): each served call reserved and journaled before it is sent,
    each plan journaled as soon as it is decided. Raises ``PlanningFailed`` (after journaling
    every plan made) when a call failed and no fallback is allowed, or no plan passed."""
    from loomc.conductor.batch import decide_served
    from loomc.conductor.guard import GuardError
    from loomc.conductor.planners import PlannerUnavailable
    from loomc.conductor.served import Served
    from loomc.exec.ledger import Ledger

    journal.load()  # what the journal says was spent: a resumed eval's planning included
    ledger = Ledger(totals or Budget(), name="eval")
    ledger.committed = ledger.peak = journal.spent
    pending, planned.pending = planned.pending, []
    for p in pending:
        assert p.strategy.planner is not None
        failed: list[str] = []
        unavailable: list[str] = []

        def on_each(
            i: int,
            outcome: Served,
            p: Pending = p,
            failed: list[str] = failed,
            unavailable: list[str] = unavailable,
        ) -> None:
            case, key = p.cases[i], (p.cases[i].id, p.strategy.name)
            try:
                decision = decide_served(p.guards[i], str(p.strategy.planner), outcome)
            except PlannerUnavailable as exc:
                unavailable.append(str(exc))
                return
            except GuardError as exc:
                failed.append(str(exc))
                return
            if decision is None:
                planned.limited[key] = (str(outcome.refused), str(outcome.stop))
                return
            planned.add(key, decision, p.digests[i])
            journal.plan(case.id, p.strategy.name, p.digests[i], planned.decisions[key])
            planned.journaled.add(key)

        served = p.proposer.served
        hooks = [journal.hook((c.id, p.strategy.name, -1)) for c in p.cases] if served else None
        items = [
            (g.context.task, g.context.workers, g.context.limits.constraints) for g in p.guards
        ]
        await p.proposer.apropose_batch(
            items, ledger=ledger if served else None, hooks=hooks, on_each=on_each
        )
        if unavailable:
            raise PlanningFailed(
                f"{p.strategy.name}: {len(unavailable)} of {len(p.cases)} case(s) could not be "
                f"planned: {unavailable[0]} (allow the fallback to plan with the risk planner "
                "instead: --allow-planner-fallback)"
            )
        if failed:
            raise PlanningFailed(f"{p.strategy.name}: {failed[0]}")


def unplanned_runs(
    jobs: Sequence[Job],
    runs: RunLog,
    limited: Mapping[tuple[str, str], tuple[str, str]],
    totals: Budget,
) -> RunLog:
    """The log of every job: ``runs`` (of the jobs not in ``limited``, in order) with a
    budget-stopped record for each job whose case the budget left unplanned."""
    from loomc.eval.records import RunRecord
    from loomc.exec.result import BudgetReport, RunResult, StopReason
    from loomc.units import Usage

    out = RunLog(len(jobs))
    placed = [i for i, j in enumerate(jobs) if (j.case.id, j.strategy.name) not in limited]
    for sub, record in zip(runs.indices(), runs, strict=True):
        out.add(placed[sub], record)
    for index, job in enumerate(jobs):
        found = limited.get((job.case.id, job.strategy.name))
        if found is None:
            continue
        why = f"the eval-wide budget refused the planner's call, so nothing ran ({found[0]})"
        result = RunResult(
            answer="",
            pipeline=job.pipeline.name,
            tier=None,
            calls=0,
            escalated=False,
            escalation_reason=None,
            stop_reason=StopReason(found[1]),
            budget=BudgetReport(limits=totals, used=Usage(), limited=True),
            steps=[],
            error=why,
            receipt_hash="",
        )
        out.add(index, RunRecord(
            case_id=job.case.id, strategy=job.strategy.name, iteration=job.iteration,
            difficulty=job.case.difficulty, expected_escalation=job.case.expected_escalation,
            result=result, status="budget-stopped", error=why,
        ))  # fmt: skip
    runs.close()
    return out


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
