"""Run the case x strategy x iteration matrix with bounded concurrency, one eval-wide ledger and
an append-only journal, so an interrupted or unfunded eval resumes without paying twice."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import partial

import anyio

from loomc.checker.worstcase import WorstCase, worst_case
from loomc.diagnostics import DiagnosticError
from loomc.errors import LoomcError
from loomc.eval.checks import run_checks
from loomc.eval.dataset import Case
from loomc.eval.journal import Cell, Journal, case_hash
from loomc.eval.judge import JudgeSpec, Verdict
from loomc.eval.judge import input_bound as judge_input_bound
from loomc.eval.judge import judge as run_judge
from loomc.eval.judge import worst_case as judge_worst_case
from loomc.eval.records import JudgeVerdict, RunRecord
from loomc.eval.strategies import Strategy
from loomc.exec.events import Event, MemorySink
from loomc.exec.executor import execute
from loomc.exec.ledger import Ledger
from loomc.exec.result import RunResult, StopReason
from loomc.ir.model import Pipeline
from loomc.project import Project
from loomc.providers.base import redact
from loomc.providers.registry import ProviderPool
from loomc.risk.base import RiskProfiler
from loomc.units import Budget

# hears each run an eval executes, with its events: `loomc.api` stores them as traces
RunHook = Callable[["Job", RunResult, list[Event]], Awaitable[None]]


@dataclass(frozen=True)
class Job:
    case: Case
    strategy: Strategy
    iteration: int
    pipeline: Pipeline

    @property
    def key(self) -> Cell:
        return (self.case.id, self.strategy.name, self.iteration)

    @property
    def case_hash(self) -> str:
        return case_hash(self.case, self.pipeline.key)


def plan_jobs(
    project: Project,
    cases: Sequence[Case],
    strategies: Sequence[Strategy],
    iterations: int,
    planned: Mapping[tuple[str, str], Pipeline] | None = None,
) -> list[Job]:
    """Compile every (pipeline, tier) once; raises DiagnosticError before any call.
    ``planned`` holds the checked plan of each (case id, conductor strategy)."""
    compiled: dict[tuple[str, str | None], Pipeline] = {}
    jobs = []
    for case in cases:
        for strategy in strategies:
            if strategy.planner is not None:
                pipeline = (planned or {})[(case.id, strategy.name)]
            else:
                key = (strategy.pipeline_for(case.pipeline), strategy.tier)
                if key not in compiled:
                    compiled[key] = project.compile(*key)
                pipeline = compiled[key]
            for it in range(iterations):
                jobs.append(Job(case, strategy, it, pipeline))
    return jobs


@dataclass
class Estimate:
    per_strategy: dict[str, dict[str, object]]
    total_calls: int  # workflow and judge calls together
    total_tokens: int | None
    total_credits: Decimal
    total_cost: Decimal | None
    judge_calls: int = 0
    judge_tokens: int | None = 0
    judge_credits: Decimal = Decimal(0)
    judge_cost: Decimal | None = Decimal(0)


def _add_int(a: object, b: int | None) -> int | None:
    return None if a is None or b is None else int(str(a)) + b


def _add_dec(a: object, b: Decimal | None) -> Decimal | None:
    return None if a is None or b is None else Decimal(str(a)) + b


def preflight(jobs: Sequence[Job], judge: JudgeSpec | None = None) -> Estimate:
    """Worst case of the whole matrix, judge calls included (one judging per run)."""
    cache: dict[str, WorstCase] = {}
    per: dict[str, dict[str, object]] = {}
    est = Estimate(per, 0, 0, Decimal(0), Decimal(0))
    for job in jobs:
        wc = cache.setdefault(job.pipeline.key, worst_case(job.pipeline))
        row = per.setdefault(
            job.strategy.name,
            {"runs": 0, "calls": 0, "tokens": 0, "credits": Decimal(0), "cost": Decimal(0)},
        )
        row["runs"] = int(str(row["runs"])) + 1
        row["calls"] = int(str(row["calls"])) + wc.calls
        row["tokens"] = _add_int(row["tokens"], wc.tokens)
        row["credits"] = Decimal(str(row["credits"])) + wc.credits
        row["cost"] = _add_dec(row["cost"], wc.cost)
        est.total_calls += wc.calls
        est.total_credits += wc.credits
        est.total_tokens = _add_int(est.total_tokens, wc.tokens)
        est.total_cost = _add_dec(est.total_cost, wc.cost)
        if judge is None:
            continue
        jc = judge_worst_case(judge, job.pipeline, job.case.rubric)
        row["judge_calls"] = int(str(row.get("judge_calls", 0))) + jc.calls
        est.judge_calls += jc.calls
        est.judge_tokens = _add_int(est.judge_tokens, jc.tokens)
        est.judge_credits += jc.credits
        est.judge_cost = _add_dec(est.judge_cost, jc.cost)
        est.total_calls += jc.calls
        est.total_credits += jc.credits
        est.total_tokens = _add_int(est.total_tokens, jc.tokens)
        est.total_cost = _add_dec(est.total_cost, jc.cost)
    return est


class EvalAborted(LoomcError):
    """A cell failed with an unexpected error; in-flight cells were cancelled, finished ones are
    in the journal. The message is one line for the user."""

    def __init__(self, cell: Cell, error: BaseException, finished: int, cancelled: int) -> None:
        case, strategy, iteration = cell
        while isinstance(error, BaseExceptionGroup) and error.exceptions:
            error = error.exceptions[0]  # the executor's task group wraps the real cause
        detail = redact(" ".join(str(error).split()))[:300]  # redact, then cut
        super().__init__(
            f"case {case!r} x {strategy} #{iteration} failed: {type(error).__name__}"
            f"{': ' + detail if detail else ''}; cancelled {cancelled} in-flight run(s); "
            f"{finished} finished run(s) are kept in the journal"
        )
        self.cell = cell
        self.error = error
        self.finished = finished
        self.cancelled = cancelled


def with_checks(job: Job, record: RunRecord) -> RunRecord:
    """Run the case's deterministic checks on the answer (not on a run the budget stopped)."""
    if record.result is None or record.status != "ok" or not job.case.checks:
        return record
    checks = run_checks(list(job.case.checks), record.result.answer)
    return record.model_copy(
        update={"checks": checks, "checks_passed": all(c.passed for c in checks)}
    )


def grade(record: RunRecord) -> RunRecord:
    """passed and quality from the checks and, when present, the judge's verdict.

    With a judge a run passes only if the judge and the checks both pass, and quality is the
    judge's score; a judge error leaves quality missing (never 0) and the run not passed."""
    checks, verdict = record.checks, record.judge
    passed: bool | None
    quality: float | None
    source: str | None = None
    if record.status != "ok" or record.result is None:
        passed, quality = None, None
    elif verdict is None:
        passed = record.checks_passed
        quality = 100.0 * sum(c.passed for c in checks) / len(checks) if checks else None
        source = "checks" if quality is not None else None
    elif verdict.status == "ok" and verdict.score is not None:
        passed = bool(verdict.passed) and record.checks_passed is not False
        quality, source = verdict.score, "judge"
    elif verdict.status == "skipped":  # the run produced no answer: nothing to pay a judge for
        passed, quality, source = False, 0.0, "judge"
    elif verdict.status == "budget-stopped":  # not judged yet; --resume judges it
        passed, quality = None, None
    else:
        passed, quality = False, None
    return record.model_copy(
        update={"passed": passed, "quality": quality, "quality_source": source}
    )


def score(job: Job, record: RunRecord) -> RunRecord:
    return grade(with_checks(job, record))


def needs_judging(record: RunRecord) -> bool:
    return (
        record.status == "ok"
        and record.result is not None
        and (record.judge is None or record.judge.status == "budget-stopped")
    )


def _verdict(spec: JudgeSpec, v: Verdict) -> JudgeVerdict:
    return JudgeVerdict(
        status=v.status,
        score=v.score,
        passed=v.passed,
        reason=v.reason,
        model=spec.model,
        calls=v.calls,
        usage={
            "prompt_tokens": v.prompt_tokens,
            "completion_tokens": v.completion_tokens,
            "total_tokens": v.prompt_tokens + v.completion_tokens,
            "estimated_credits": str(spec.credits * v.calls),
        },
        cost=v.cost,
        credits=v.credits,
        elapsed_ms=v.elapsed_ms,
        error=v.error,
        reply=v.reply,
    )


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
    judge: JudgeSpec | None = None,
    on_notice: Callable[[str], None] | None = None,
    on_run: RunHook | None = None,
) -> list[RunRecord]:
    """Run every cell not already in the journal (and judge every run not yet judged).

    Everything the journal says may have been spent (calls in flight at a kill at their worst
    case) counts against ``total``; a journaled cell whose case changed since is run again.
    ``on_notice`` hears both, one line each. An unexpected error in one cell cancels the cells
    in flight and raises EvalAborted; budget and provider trouble never raise, they are recorded
    on the run. ``on_run`` hears each run executed here with its events (the trace store)."""
    done = journal.load()
    stale = _stale(jobs, done, journal)
    for cell in stale:
        del done[cell]
    if stale and on_notice is not None:
        cases = sorted({c for c, _, _ in stale})
        on_notice(
            f"{len(cases)} case(s) changed since they were journaled "
            f"({', '.join(map(repr, cases[:5]))}{', ...' if len(cases) > 5 else ''}): "
            f"re-running {len(stale)} cell(s)"
        )
    eval_ledger = Ledger(total, name="eval")
    # resumed work, and calls in flight at an interruption, count against the eval-wide budget
    eval_ledger.committed = eval_ledger.peak = journal.spent
    if journal.in_flight and on_notice is not None:
        on_notice(
            f"{journal.in_flight} call(s) were in flight when the eval was interrupted; "
            "they count as spent at their worst case"
        )
    limiter = anyio.CapacityLimiter(max(1, concurrency))
    results: dict[Cell, RunRecord] = {
        k: _public(grade(r), include_answers)
        for k, r in done.items()
        if judge is None or not needs_judging(r)
    }
    running: set[Cell] = set()
    failures: list[tuple[Cell, BaseException]] = []

    async def judged(job: Job, record: RunRecord, fresh: bool) -> RunRecord:
        assert judge is not None and record.result is not None
        answer = (
            record.answer
            if record.answer is not None
            else (record.result.answer if fresh else None)
        )
        if answer is None:
            return record.model_copy(
                update={
                    "judge": JudgeVerdict(
                        status="error",
                        model=judge.model,
                        error="the answer was not kept in the journal (it was journaled before judging "
                        "was requested); rerun without --resume to judge it",
                    )
                }
            )
        if not answer.strip():
            return record.model_copy(
                update={
                    "judge": JudgeVerdict(
                        status="skipped",
                        model=judge.model,
                        passed=False,
                        reason="the run produced no answer",
                    )
                }
            )
        if fresh:  # the workflow is paid: journal it first so a kill never re-pays it
            journal.append(_journaled(record.model_copy(update={"answer": answer})), job.case_hash)
        v = await run_judge(
            judge,
            pool=policy_pool,
            ledger=cell_ledger(job),
            task=job.case.prompt,
            rubric=job.case.rubric,
            answer=answer,
            bound=judge_input_bound(job.pipeline, job.case.rubric),
        )
        return record.model_copy(update={"judge": _verdict(judge, v), "answer": answer})

    def cell_ledger(job: Job) -> Ledger:
        """No ceiling of its own: it journals the cell's reservations and settlements."""
        return eval_ledger.child(Budget(), name="cell", hook=journal.hook(job.key))

    async def one(job: Job, prior: RunRecord | None) -> None:
        running.add(job.key)
        try:
            async with limiter:
                if prior is None:
                    memory = MemorySink() if on_run is not None else None
                    result = await execute(
                        job.pipeline,
                        job.case.prompt,
                        pool=policy_pool,
                        profiler=profilers[job.strategy.semantic],
                        stream=False,
                        parent_ledger=cell_ledger(job),
                        completed=journal.completed(job.key, job.case_hash),
                        on_step=partial(journal.step, job.key, case_hash=job.case_hash),
                        sinks=() if memory is None else (memory,),
                    )
                    if on_run is not None and memory is not None:
                        await on_run(job, result, memory.events)
                    stop = result.stop_reason
                    stopped = result.calls == 0 and (
                        stop.dimension is not None or stop is StopReason.OVER_CEILING
                    )
                    record = RunRecord(
                        case_id=job.case.id,
                        strategy=job.strategy.name,
                        iteration=job.iteration,
                        difficulty=job.case.difficulty,
                        expected_escalation=job.case.expected_escalation,
                        result=result,
                        status="budget-stopped" if stopped else "ok",
                        error=result.error,
                        answer=result.answer if include_answers else None,
                    )
                    record = with_checks(job, record)
                else:
                    record = prior
                if judge is not None and needs_judging(record):
                    record = await judged(job, record, fresh=prior is None)
                record = grade(record)
            final = (
                record
                if judge is not None and needs_judging(record)
                else (
                    record.model_copy(update={"answer": record.answer if include_answers else None})
                )
            )
            journal.append(_journaled(final), job.case_hash)
            results[job.key] = _public(record, include_answers)
            running.discard(job.key)
            if on_done:
                on_done(results[job.key])
        except Exception as exc:
            running.discard(job.key)
            if not failures:
                failures.append((job.key, exc))
            tg.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        for job in jobs:
            if job.key not in results:
                tg.start_soon(one, job, done.get(job.key))
    if failures:
        cell, exc = failures[0]
        finished = sum(1 for j in jobs if j.key in results)
        raise EvalAborted(cell, exc, finished, len(running))
    return [results[j.key] for j in jobs if j.key in results]


def _journaled(record: RunRecord) -> RunRecord:
    """A finished cell's step outputs never go to the journal; the answer only while it still
    has to be judged (or with --include-answers). Steps of a cell still running are journaled
    with their outputs (``Journal.step``): a resume needs them to feed the steps left."""
    if record.result is None:
        return record
    steps = [s.model_copy(update={"output": None}) for s in record.result.steps]
    return record.model_copy(
        update={"result": record.result.model_copy(update={"steps": steps, "answer": ""})}
    )


def _public(record: RunRecord, include_answers: bool) -> RunRecord:
    """What the receipt keeps: answers and step outputs only with --include-answers."""
    if include_answers:
        return record
    stripped = _journaled(record)
    return stripped.model_copy(update={"answer": None})


def _stale(jobs: Sequence[Job], done: dict[Cell, RunRecord], journal: Journal) -> list[Cell]:
    """Journaled cells whose case (prompt, checks, rubric, pipeline, ...) changed since; a line
    from an older loomc carries no hash and is reused."""
    out = []
    for job in jobs:
        recorded = journal.hashes.get(job.key)
        if job.key in done and recorded is not None and recorded != job.case_hash:
            out.append(job.key)
    return out


def estimate_json(est: Estimate) -> str:
    return json.dumps(
        {
            "per_strategy": est.per_strategy,
            "total_calls": est.total_calls,
            "total_tokens": est.total_tokens,
            "total_credits": str(est.total_credits),
            "total_cost": None if est.total_cost is None else str(est.total_cost),
            "judge": {
                "calls": est.judge_calls,
                "tokens": est.judge_tokens,
                "credits": str(est.judge_credits),
                "cost": None if est.judge_cost is None else str(est.judge_cost),
            },
        },
        default=str,
        indent=2,
    )


__all__ = [
    "DiagnosticError",
    "EvalAborted",
    "Job",
    "Journal",
    "plan_jobs",
    "preflight",
    "run_matrix",
]
