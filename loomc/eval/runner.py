"""Run the case x strategy x iteration matrix with bounded concurrency, one eval-wide ledger and
an append-only journal, so an interrupted or unfunded eval resumes without paying twice."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import anyio

from loomc.check.worstcase import WorstCase, worst_case
from loomc.diagnostics import DiagnosticError
from loomc.eval.checks import run_checks
from loomc.eval.dataset import Case
from loomc.eval.records import RunRecord
from loomc.eval.strategies import Strategy
from loomc.exec.executor import execute
from loomc.exec.ledger import Ledger
from loomc.ir.model import Pipeline
from loomc.project import Project
from loomc.providers.registry import ProviderPool
from loomc.risk.base import RiskProfiler
from loomc.units import Budget, Usage

Cell = tuple[str, str, int]  # case id, strategy name, iteration


@dataclass(frozen=True)
class Job:
    case: Case
    strategy: Strategy
    iteration: int
    pipeline: Pipeline

    @property
    def key(self) -> Cell:
        return (self.case.id, self.strategy.name, self.iteration)


class Journal:
    """JSONL of finished cells next to the output; a torn last line is ignored on resume."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[Cell, RunRecord]:
        done: dict[Cell, RunRecord] = {}
        if not self.path.exists():
            return done
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                record = RunRecord.model_validate_json(line)
            except ValueError:
                continue  # torn write from a killed run
            if record.status != "budget-stopped":
                done[(record.case_id, record.strategy, record.iteration)] = record
        return done

    def append(self, record: RunRecord) -> None:
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(record.model_dump_json() + "\n")
            fh.flush()


def plan_jobs(project: Project, cases: Sequence[Case], strategies: Sequence[Strategy],
              iterations: int) -> list[Job]:
    """Compile every (pipeline, tier) once; raises DiagnosticError before any call."""
    compiled: dict[tuple[str, str | None], Pipeline] = {}
    jobs = []
    for case in cases:
        for strategy in strategies:
            key = (strategy.pipeline_for(case.pipeline), strategy.tier)
            if key not in compiled:
                compiled[key] = project.compile(*key)
            for it in range(iterations):
                jobs.append(Job(case, strategy, it, compiled[key]))
    return jobs


@dataclass
class Estimate:
    per_strategy: dict[str, dict[str, object]]
    total_calls: int
    total_tokens: int | None
    total_credits: Decimal
    total_cost: Decimal | None


def preflight(jobs: Sequence[Job]) -> Estimate:
    cache: dict[str, WorstCase] = {}
    per: dict[str, dict[str, object]] = {}
    calls, credits = 0, Decimal(0)
    tokens: int | None = 0
    cost: Decimal | None = Decimal(0)
    for job in jobs:
        wc = cache.setdefault(job.pipeline.key, worst_case(job.pipeline))
        row = per.setdefault(job.strategy.name, {"runs": 0, "calls": 0, "tokens": 0,
                                                 "credits": Decimal(0), "cost": Decimal(0)})
        row["runs"] = int(row["runs"]) + 1  # type: ignore[call-overload]
        row["calls"] = int(row["calls"]) + wc.calls  # type: ignore[call-overload]
        row["tokens"] = None if row["tokens"] is None or wc.tokens is None else int(row["tokens"]) + wc.tokens  # type: ignore[call-overload]
        row["credits"] = Decimal(str(row["credits"])) + wc.credits
        row["cost"] = None if row["cost"] is None or wc.cost is None else Decimal(str(row["cost"])) + wc.cost
        calls += wc.calls
        credits += wc.credits
        tokens = None if tokens is None or wc.tokens is None else tokens + wc.tokens
        cost = None if cost is None or wc.cost is None else cost + wc.cost
    return Estimate(per, calls, tokens, credits, cost)


def score(job: Job, record: RunRecord) -> RunRecord:
    if record.result is None:
        return record
    checks = run_checks(list(job.case.checks), record.result.answer) if job.case.checks else []
    passed = all(c.passed for c in checks) if checks else None
    quality = (100.0 * sum(c.passed for c in checks) / len(checks)) if checks else None
    return record.model_copy(update={"checks": checks, "checks_passed": passed, "passed": passed,
                                     "quality": quality})


async def run_matrix(
    jobs: Sequence[Job],
    *,
    policy_pool: ProviderPool,
    profilers: dict[bool, RiskProfiler],
    concurrency: int,
    journal: Journal,
    total: Budget,
    include_answers: bool,
    on_done: Callable[[RunRecord], None] | None = None,
) -> list[RunRecord]:
    done = journal.load()
    eval_ledger = Ledger(total, name="eval")
    for record in done.values():  # resumed work still counts against the eval-wide budget
        if record.result is not None:
            eval_ledger.committed = eval_ledger.committed + _usage_of(record)
    limiter = anyio.CapacityLimiter(max(1, concurrency))
    results: dict[Cell, RunRecord] = dict(done)

    async def one(job: Job) -> None:
        async with limiter:
            result = await execute(job.pipeline, job.case.prompt, pool=policy_pool,
                                   profiler=profilers[job.strategy.semantic], stream=False,
                                   parent_ledger=eval_ledger)
        stopped_by_total = result.calls == 0 and result.stop_reason.startswith("max-")
        record = RunRecord(
            case_id=job.case.id, strategy=job.strategy.name, iteration=job.iteration,
            difficulty=job.case.difficulty, expected_escalation=job.case.expected_escalation,
            result=result, status="budget-stopped" if stopped_by_total else "ok",
            error=result.error,
            answer=result.answer if include_answers else None,
        )
        record = score(job, record)
        if not include_answers and record.result is not None:
            record = record.model_copy(update={"result": _strip(record.result)})
        journal.append(record)
        results[job.key] = record
        if on_done:
            on_done(record)

    async with anyio.create_task_group() as tg:
        for job in jobs:
            if job.key not in done:
                tg.start_soon(one, job)
    return [results[j.key] for j in jobs if j.key in results]


def _strip(result: object) -> object:
    from loomc.exec.result import RunResult

    assert isinstance(result, RunResult)
    steps = [s.model_copy(update={"output": None}) for s in result.steps]
    return result.model_copy(update={"steps": steps, "answer": ""})


def _usage_of(record: RunRecord) -> Usage:
    assert record.result is not None
    used = record.result.budget.used
    return Usage(calls=int(used.get("calls", 0)), tokens=int(used.get("tokens", 0)),
                 credits=Decimal(str(used.get("credits", "0"))), cost=Decimal(str(used.get("cost", "0"))))


def estimate_json(est: Estimate) -> str:
    return json.dumps({"per_strategy": est.per_strategy, "total_calls": est.total_calls,
                       "total_tokens": est.total_tokens, "total_credits": str(est.total_credits),
                       "total_cost": None if est.total_cost is None else str(est.total_cost)},
                      default=str, indent=2)


__all__ = ["DiagnosticError", "Job", "Journal", "plan_jobs", "preflight", "run_matrix"]
