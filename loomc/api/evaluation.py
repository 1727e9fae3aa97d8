"""A planned eval and how it runs: the matrix under the eval-wide totals, its journal, the
trace store, and the receipt of its records.

``loomc.api.evaluating`` plans one (``prepare_eval``: dataset, strategies, compiled jobs, the
pre-flight worst case, conductor plans); an :class:`Evaluation` then holds everything that
plan decided and spends nothing until :meth:`Evaluation.arun`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import anyio

from loomc.api.conducting import Planned, plan_pending, unplanned_runs
from loomc.api.running import Providers
from loomc.api.tracing import StoreLike, Traces, stored_run
from loomc.eval.dataset import Case
from loomc.eval.judge import JudgeSpec
from loomc.eval.receipt import EvalReceipt, EvalSettings, build_receipt, sha256_file
from loomc.eval.records import RunRecord
from loomc.eval.runlog import RunLog
from loomc.eval.runner import (
    Estimate,
    Job,
    Jobs,
    Journal,
    RunHook,
    estimate_json,
    plan_jobs,
    preflight,
    run_matrix,
)
from loomc.eval.spend import spend_totals
from loomc.eval.strategies import Strategy, planner_summary
from loomc.exec.events import Event
from loomc.exec.result import RunResult
from loomc.policy.models import Policy
from loomc.project import Project
from loomc.providers.registry import ProviderPool
from loomc.risk.base import RiskProfiler
from loomc.store.otel import OtelExporter
from loomc.units import Budget


@dataclass
class Evaluation:
    """A planned eval: the jobs, their worst case, and how to run them."""

    project: Project
    dataset: Path
    cases: list[Case]
    strategies: list[Strategy]
    jobs: Jobs  # built as read: a list of 100,000 Job objects held ~8 MiB
    iterations: int = 1
    concurrency: int = 4
    judge: JudgeSpec | None = None
    include_answers: bool = False
    profilers: dict[bool, RiskProfiler] = field(default_factory=dict)
    # conductor:PLANNER strategies: (case id, strategy) → the guard's decision, for the receipt
    decisions: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    # → the plan's hash, journaled with the decision; and the cells decided from the journal
    plan_hashes: dict[tuple[str, str], str] = field(default_factory=dict)
    replayed: set[tuple[str, str]] = field(default_factory=set)
    # every conductor cell: planned, or pending until the eval starts (a learned planner)
    planned: Planned = field(default_factory=Planned)

    @cached_property
    def estimate(self) -> Estimate:
        """The pre-flight worst case of the whole matrix, judge calls and a served planner's
        calls included (a cell not planned yet counts at the most any admissible plan costs)."""
        return preflight(self.jobs, self.judge, self.planned.costs)

    def estimate_json(self) -> str:
        """The pre-flight worst case as the JSON ``loomc eval --dry-run`` prints."""
        return estimate_json(self.estimate)

    def over(self, totals: Budget) -> list[tuple[str, object, object]]:
        """The eval-wide totals that the worst case could pass (empty when it fits)."""
        est = self.estimate
        found: list[tuple[str, object, object]] = []
        for name, worst, ceiling in (
            ("calls", est.total_calls, totals.calls),
            ("credits", est.total_credits, totals.credits),
            ("cost", est.total_cost, totals.cost),
        ):
            if ceiling is not None and (worst is None or worst > ceiling):
                found.append((name, worst, ceiling))
        return found

    async def arun(
        self,
        *,
        journal: Path | None = None,
        resume: bool = False,
        totals: Budget | None = None,
        providers: Providers | None = None,
        on_done: Callable[[RunRecord], None] | None = None,
        on_notice: Callable[[str], None] | None = None,
        store: StoreLike | None = None,
        telemetry: OtelExporter | None = None,
    ) -> EvalReceipt:
        """Run every cell (the eval-wide ``totals`` stop it, never overshot) and aggregate.

        ``journal`` keeps finished cells and every call's reservation (``resume`` reuses the
        cells, so nothing finished is paid twice, and counts calls in flight at an interruption
        as spent); without one, nothing survives the process. ``on_notice`` hears what a resume
        changed (edited cases re-run, calls in flight counted), one line each. A learned planner is
        asked first, each call reserved in ``totals`` and journaled; ``PlanningFailed`` when its
        calls fail and no fallback is allowed. Raises ``EvalAborted`` when a cell fails
        unexpectedly (cells in flight are cancelled, finished ones stay in the journal).
        ``store`` keeps every run executed here (not the resumed ones) with its events, written
        in batches; ``telemetry`` exports each as OpenTelemetry spans."""
        book = Journal(journal) if journal is not None else None
        traces = Traces(store, telemetry)  # opened first: a bad store refuses before any call
        try:
            if book is not None and not resume and book.path.exists():
                book.path.unlink()
            if book is not None:
                self._journal_plans(book, resume)
            if book is None:
                import tempfile

                with tempfile.TemporaryDirectory(prefix="loomc-eval-") as tmp:
                    book = Journal(Path(tmp) / "journal.jsonl")
                    return await self._arun(book, totals, providers, on_done, on_notice, traces)
            return await self._arun(book, totals, providers, on_done, on_notice, traces)
        finally:
            await traces.aclose()

    def _journal_plans(self, book: Journal, resume: bool) -> None:
        """Each conductor cell's plan, before any cell runs (a resume replays it from here);
        on a resume, those decided from this journal are there already."""
        for key, decision in self.decisions.items():
            if (resume and key in self.replayed) or key in self.planned.journaled:
                continue
            book.plan(key[0], key[1], self.plan_hashes[key], decision)

    def _trace_hook(self, traces: Traces) -> RunHook | None:
        """Each executed run to the trace store, tagged with its cell."""
        if not traces:
            return None
        dataset = str(self.dataset)

        async def on_run(job: Job, result: RunResult, events: list[Event]) -> None:
            cell = {
                "dataset": dataset,
                "case": job.case.id,
                "strategy": job.strategy.name,
                "iteration": job.iteration,
            }
            await traces.add(
                stored_run(result, events, source="eval", started=time.time(), extra={"eval": cell})
            )

        return on_run

    async def _arun(
        self,
        journal: Journal,
        totals: Budget | None,
        providers: Providers | None,
        on_done: Callable[[RunRecord], None] | None,
        on_notice: Callable[[str], None] | None = None,
        traces: Traces | None = None,
    ) -> EvalReceipt:
        if self.planned.pending:  # the learned planner, asked now, inside the eval-wide budget
            await plan_pending(self.planned, journal, totals)
            self.jobs = plan_jobs(
                self.project,
                self.cases,
                self.strategies,
                self.iterations,
                self.planned.pipelines,
                self.planned.bounds,
            )
        limited = self.planned.limited
        jobs = self.jobs.without(limited) if limited else self.jobs
        log = RunLog(len(jobs))  # the receipt reads its runs from here; closed when dropped

        async def matrix(pool: ProviderPool) -> RunLog:
            return await run_matrix(
                jobs,
                policy_pool=pool,
                profilers=self.profilers,
                concurrency=self.concurrency,
                journal=journal,
                total=totals or Budget(),
                include_answers=self.include_answers,
                on_done=on_done,
                judge=self.judge,
                on_notice=on_notice,
                on_run=None if traces is None else self._trace_hook(traces),
                log=log,
            )

        if isinstance(providers, ProviderPool):
            records = await matrix(providers)
        else:
            async with ProviderPool(self.project.policy) as pool:
                for name, provider in (providers or {}).items():
                    pool.put(name, provider)
                records = await matrix(pool)
        if limited:
            records = unplanned_runs(self.jobs, records, limited, totals or Budget())
        return self.receipt(records)

    def run(self, **options: Any) -> EvalReceipt:
        """Blocking :meth:`arun` (same arguments)."""

        async def main() -> EvalReceipt:
            return await self.arun(**options)

        return anyio.run(main)

    def receipt(self, records: Sequence[RunRecord]) -> EvalReceipt:
        """The versioned eval receipt of these records under this eval's settings (a ``RunLog``
        stays on disk: the receipt reads its runs back one at a time)."""
        from loomc import __version__

        pol = self.project.policy
        settings = EvalSettings(
            dataset=str(self.dataset),
            dataset_sha256=sha256_file(self.dataset),
            strategies=[s.name for s in self.strategies],
            iterations=self.iterations,
            concurrency=self.concurrency,
            judge_model=None if self.judge is None else self.judge.model,
            policy=pol.name,
            include_answers=self.include_answers,
            answers=answer_source(pol),
        )
        pricing = {k: v.model_dump(mode="json") for k, v in pol.pricing.items()}
        if self.decisions:
            records = [
                r.model_copy(update={"conductor": self.decisions[(r.case_id, r.strategy)]})
                if (r.case_id, r.strategy) in self.decisions
                else r
                for r in records
            ]
        receipt = build_receipt(
            records,
            settings,
            pricing,
            loomc_version=__version__,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        receipt.planners = planner_summary(records, self.strategies)
        receipt.totals = spend_totals(records, receipt.planners)
        return receipt


def answer_source(policy: Policy) -> str:
    """What answered the eval's workers, from the policy: "model", "mock", "scripted" (a mock
    whose rules script responses) or "<mock kind>+model" when both kinds serve workers."""
    used = {w.model.split("/", 1)[0] for w in policy.workers.values()}
    confs = [policy.providers[n] for n in sorted(used) if n in policy.providers]
    mocks = [c for c in confs if c.type == "mock"]
    if not mocks:
        return "model"
    scripted = any(r.response is not None for c in mocks if c.mock for r in c.mock.rules)
    kind = "scripted" if scripted else "mock"
    return kind if len(mocks) == len(confs) else f"{kind}+model"
