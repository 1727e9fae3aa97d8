"""``loomc.evaluate``: benchmark strategies over a dataset, as one function or in two steps.

:func:`prepare_eval` does everything that costs nothing — reads the dataset, resolves the
strategies against the policy's tiers and the project's pipelines, compiles every pipeline x tier
once and computes the pre-flight worst case — so a caller can show the estimate (``loomc eval``
prints it, ``--dry-run`` stops there) before :meth:`Evaluation.arun` spends anything
(``loomc.api.evaluation``: the run, its journal and its receipt). :func:`evaluate` is both
steps, refusing to start when the worst case passes the totals.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from loomc.api.conducting import plan_conductor_cases
from loomc.api.evaluation import Evaluation, answer_source
from loomc.api.running import ProjectLike, Providers, open_project
from loomc.api.tracing import StoreLike
from loomc.conductor import PLANNER_NAMES
from loomc.errors import LoomcError
from loomc.eval.dataset import load_dataset
from loomc.eval.journal import journaled_plans
from loomc.eval.judge import resolve_judge
from loomc.eval.receipt import EvalReceipt
from loomc.eval.records import RunRecord
from loomc.eval.runner import (
    plan_jobs,
)
from loomc.eval.strategies import parse_strategies
from loomc.policy.models import RiskSettings
from loomc.risk.base import RiskProfiler
from loomc.risk.factory import make_profiler
from loomc.store.otel import OtelExporter
from loomc.units import Budget

__all__ = [
    "DEFAULT_STRATEGIES",
    "MAX_RUNS",
    "BudgetRefused",
    "Evaluation",
    "answer_source",
    "evaluate",
    "prepare_eval",
]

DEFAULT_STRATEGIES = "baseline,fixed,lean,balanced,strict"
MAX_RUNS = 100_000
"""The most runs (cases x strategies x iterations) one eval plans: the matrix is built and
estimated in memory before anything runs, so a typo in --iterations must fail fast."""


class BudgetRefused(LoomcError, RuntimeError):
    """The pre-flight worst case passes an eval-wide total: nothing was started.

    ``over`` lists ``(dimension, worst case or None when unbounded, total)``."""

    def __init__(self, over: list[tuple[str, object, object]]) -> None:
        self.over = over
        super().__init__("; ".join(f"worst-case {n} {w} exceeds the total {c}" for n, w, c in over))


def eval_profilers(settings: RiskSettings) -> dict[bool, RiskProfiler]:
    """The two risk profilers an eval uses: the policy's own (``False``) and the same settings
    as ``semantic`` (``True``, for ``X@semantic`` strategies). Built here so a caller that
    wants them prepared otherwise (a benchmark reading every weight first) passes the same
    ones to ``prepare_eval(profilers=...)``."""
    semantic = RiskSettings(**{**settings.model_dump(), "profiler": "semantic"})
    if settings.profiler in ("semantic", "auto"):
        # numpy serves each of the eval's prompts: its profilers read numpy's router now,
        # not the plain one and then numpy's amid the run (loomc.risk.semantic). An eval on
        # the keyword rules does not import numpy for its idle semantic profiler.
        from loomc.risk.pure import numpy_from_now

        numpy_from_now()
    return {False: make_profiler(settings), True: make_profiler(semantic)}


def prepare_eval(
    dataset: str | Path,
    strategies: str = DEFAULT_STRATEGIES,
    *,
    project: ProjectLike = ".",
    policy: str | Path | None = None,
    iterations: int = 1,
    concurrency: int = 4,
    limit: int | None = None,
    judge: str | None = None,
    include_answers: bool = False,
    profilers: Mapping[bool, RiskProfiler] | None = None,
    planner_options: Mapping[str, Any] | None = None,
    allow_planner_fallback: bool = False,
    resume_journal: str | Path | None = None,
) -> Evaluation:
    """Plan an eval without calling any model: dataset, strategies (``baseline``, ``fixed``, any
    tier the policy declares, ``PIPELINE@TIER``, ``X@semantic``, ``conductor:PLANNER``),
    compiled jobs, judge. ``conductor:risk|search`` plan every case here; the learned planner
    (``planner_options`` are its model or endpoint) is only checked here, without a request or
    a weight loaded, and asked when the eval runs, inside its totals (``Evaluation.planned``;
    the estimate counts its calls and each case's most costly admissible plan). A planner that
    cannot run raises ``PlanningFailed`` (here, or from ``arun`` when its calls fail) unless
    ``allow_planner_fallback`` (the risk planner then plans, and each decision says so). ``resume_journal``: the journal of the run this eval will
    resume (``arun(journal=..., resume=True)``); a conductor cell it planned is decided again
    from its journaled proposal, by the guard, without calling the planner.

    Raises ``DatasetError``, ``StrategyError``, ``JudgeConfigError``, ``DiagnosticError``,
    ``PlanningFailed`` or ``ValueError`` (iterations/concurrency below 1, more than
    ``MAX_RUNS`` runs)."""
    if iterations < 1 or concurrency < 1:
        raise ValueError("iterations and concurrency must be >= 1")
    path = Path(dataset)
    cases = load_dataset(path, limit)
    proj = open_project(project, policy)
    chosen = parse_strategies(
        strategies, set(proj.pipeline_names()), tiers=proj.tiers(), planners=PLANNER_NAMES
    )
    runs = len(cases) * len(chosen) * iterations
    if runs > MAX_RUNS:
        raise ValueError(
            f"{len(cases)} cases x {len(chosen)} strategies x {iterations} "
            f"iterations is {runs:,} runs; one eval plans at most {MAX_RUNS:,}"
        )
    spec = resolve_judge(proj.policy, judge) if judge else None
    if profilers is None:
        profilers = eval_profilers(proj.policy.risk)
    journaled = journaled_plans(Path(resume_journal)) if resume_journal is not None else None
    planned = plan_conductor_cases(
        proj,
        cases,
        chosen,
        profilers,
        planner_options,
        allow_fallback=allow_planner_fallback,
        journaled=journaled,
        defer=True,
    )
    jobs = plan_jobs(proj, cases, chosen, iterations, planned.pipelines, planned.bounds)
    return Evaluation(
        proj,
        path,
        cases,
        chosen,
        jobs,
        iterations,
        concurrency,
        spec,
        include_answers,
        dict(profilers),
        planned.decisions,
        planned.hashes,
        planned.replayed,
        planned,
    )


def evaluate(
    dataset: str | Path,
    strategies: str = DEFAULT_STRATEGIES,
    *,
    project: ProjectLike = ".",
    policy: str | Path | None = None,
    iterations: int = 1,
    concurrency: int = 4,
    limit: int | None = None,
    judge: str | None = None,
    include_answers: bool = False,
    totals: Budget | None = None,
    run_until_budget: bool = False,
    journal: Path | None = None,
    resume: bool = False,
    providers: Providers | None = None,
    on_done: Callable[[RunRecord], None] | None = None,
    store: StoreLike | None = None,
    telemetry: OtelExporter | None = None,
) -> EvalReceipt:
    """Plan and run an eval; returns the receipt (render it with :func:`loomc.render`).

    Refuses to start (``BudgetRefused``) when the worst case passes ``totals``, unless
    ``run_until_budget``: then the totals stop it, never overshot."""
    ev = prepare_eval(
        dataset,
        strategies,
        project=project,
        policy=policy,
        iterations=iterations,
        concurrency=concurrency,
        limit=limit,
        judge=judge,
        include_answers=include_answers,
        resume_journal=journal if resume else None,
    )
    over = ev.over(totals or Budget())
    if over and not run_until_budget:
        raise BudgetRefused(over)
    return ev.run(
        journal=journal,
        resume=resume,
        totals=totals,
        providers=providers,
        on_done=on_done,
        store=store,
        telemetry=telemetry,
    )
