"""Run the case x strategy x iteration matrix with bounded concurrency, one eval-wide ledger and
an append-only journal, so an interrupted or unfunded eval resumes without paying twice.

Memory stays O(concurrency), not O(runs): a fixed pool of workers pulls jobs in order from one
iterator (no task per job waiting up front), and each finished run goes to a ``RunLog`` that
keeps its aggregates and spills the record itself to disk (see ``loomc.eval.runlog``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from functools import partial

import anyio
import anyio.lowlevel

from loomc.diagnostics import DiagnosticError
from loomc.errors import LoomcError
from loomc.eval.collecting import fewer_collections
from loomc.eval.grading import grade as grade
from loomc.eval.grading import (
    grading,
    journaled,
    needs_judging,
    public,
    strip,
    to_verdict,
    with_checks,
)
from loomc.eval.journal import Cell, Journal
from loomc.eval.judge import JudgeSpec
from loomc.eval.judge import input_bound as judge_input_bound
from loomc.eval.judge import judge as run_judge
from loomc.eval.plan import Estimate, Job, Jobs, estimate_json, plan_jobs, preflight
from loomc.eval.profiling import PromptCache
from loomc.eval.records import JudgeVerdict, RunRecord
from loomc.eval.runlog import RunLog
from loomc.exec.events import Event, MemorySink
from loomc.exec.executor import execute
from loomc.exec.ledger import Ledger
from loomc.exec.result import RunResult, StopReason, trusted
from loomc.providers.base import redact
from loomc.providers.registry import ProviderPool
from loomc.risk.base import RiskProfiler
from loomc.units import Budget

# hears each run an eval executes, with its events: `loomc.api` stores them as traces
RunHook = Callable[[Job, RunResult, list[Event]], Awaitable[None]]


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
    log: RunLog | None = None,
    on_run: RunHook | None = None,
) -> RunLog:
    """Run every cell not already in the journal (and judge every run not yet judged); returns
    the log of the runs, in job order (``log``, or a fresh one).

    Everything the journal says may have been spent (calls in flight at a kill at their worst
    case) counts against ``total``; a journaled cell whose case changed since is run again.
    ``on_notice`` hears both, one line each. An unexpected error in one cell cancels the cells
    in flight and raises EvalAborted; budget and provider trouble never raise, they are recorded
    on the run. ``on_run`` hears each run executed here with its events (the trace store)."""
    runs = RunLog(len(jobs)) if log is None else log
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
    from loomc.risk.pure import numpy_from_now

    numpy_from_now()  # many prompts: the semantic profiler's numpy path for every one
    cached = {semantic: PromptCache(p) for semantic, p in profilers.items()}
    digests = _Digests()
    todo: list[tuple[int, Job, RunRecord | None]] = []  # resumed cells still to judge
    for index, job in enumerate(jobs if done else ()):  # nothing journaled: nothing to look up
        prior = done.get(job.key)
        if prior is not None and (judge is None or not needs_judging(prior)):
            runs.add(index, public(grade(prior), include_answers))
        elif prior is not None:
            todo.append((index, job, prior))
    done.clear()  # the records are in the log (or in ``todo``) now
    finished = set(runs.indices())

    def pending() -> Iterator[tuple[int, Job, RunRecord | None]]:
        yield from todo
        resumed = {i for i, _, _ in todo}
        for index, job in enumerate(jobs):
            if index not in finished and index not in resumed:
                yield index, job, None

    queue = pending()
    running: set[Cell] = set()
    failures: list[tuple[Cell, BaseException, int]] = []  # with the other runs in flight

    async def judged(job: Job, digest: str, record: RunRecord, fresh: bool) -> RunRecord:
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
            journal.append(journaled(record.model_copy(update={"answer": answer})), digest)
        v = await run_judge(
            judge,
            pool=policy_pool,
            ledger=cell_ledger(job),
            task=job.case.prompt,
            rubric=job.case.rubric,
            answer=answer,
            bound=judge_input_bound(job.pipeline, job.case.rubric),
        )
        return record.model_copy(update={"judge": to_verdict(judge, v), "answer": answer})

    def cell_ledger(job: Job) -> Ledger:
        """No ceiling of its own: it journals the cell's reservations and settlements."""
        return eval_ledger.child(Budget(), name="cell", hook=journal.hook(job.key))

    async def one(index: int, job: Job, prior: RunRecord | None) -> None:
        digest = digests.of(job)
        if prior is None:
            memory = MemorySink() if on_run is not None else None
            result = await execute(
                job.pipeline,
                job.case.prompt,
                pool=policy_pool,
                profiler=cached[job.strategy.semantic],
                stream=False,
                parent_ledger=eval_ledger,
                ledger_hook=journal.hook(job.key),  # the run's own ledger journals its calls
                completed=journal.completed(job.key, digest),
                on_step=partial(journal.step, job.key, case_hash=digest),
                sinks=() if memory is None else (memory,),
            )
            if on_run is not None and memory is not None:
                await on_run(job, result, memory.events)
            stop = result.stop_reason
            stopped = result.calls == 0 and (
                stop.dimension is not None or stop is StopReason.OVER_CEILING
            )
            record = trusted(  # every value built by this process: nothing to validate
                RunRecord,
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
            if any(c.get("type") == "regex" for c in job.case.checks):
                # a user pattern may take its whole second (loomc.userregex): off the loop, so
                # the other workers' calls in flight are not held up (nor their timers)
                record = await anyio.to_thread.run_sync(with_checks, job, record)
            else:
                record = with_checks(job, record)
        else:
            record = prior
        if judge is not None and needs_judging(record):
            record = await judged(job, digest, record, fresh=prior is None)
        for name, value in grading(record).items():  # the record is this worker's own
            if getattr(record, name) != value:  # most stay None: no model __setattr__ then
                setattr(record, name, value)
        if judge is not None and needs_judging(record):
            final = journaled(record)
            shown = public(record, include_answers)
        elif include_answers:
            final, shown = journaled(record), record
        else:  # the common case: what the journal keeps is what the receipt keeps
            final = shown = strip(record)
        text = journal.append(final, digest)
        runs.add(index, shown, text if shown is final else None)
        if on_done:
            on_done(shown)

    async def worker() -> None:
        for index, job, prior in queue:
            if failures:
                return
            running.add(job.key)
            try:
                await one(index, job, prior)
            except Exception as exc:
                if not failures:
                    failures.append((job.key, exc, len(running) - 1))
                tg.cancel_scope.cancel()
                return
            finally:
                running.discard(job.key)
            # Back to the event loop between jobs: a provider that answers without waiting (a
            # mock at 0 ms) never suspends a run, so a worker could take job after job in one
            # step of the loop, and the loop's housekeeping waited for the whole eval: every
            # run's cancelled deadline timer stayed queued (RSS grew ~1 KB a run, 100,000 runs:
            # +90 MB), the journal's flushes piled up, and Ctrl-C waited.
            await anyio.lowlevel.checkpoint()

    with journal, fewer_collections():  # the caller's GC setting is back after, see there
        async with anyio.create_task_group() as tg:
            for _ in range(max(1, min(concurrency, len(jobs)))):
                tg.start_soon(worker)
    if failures:
        cell, exc, cancelled = failures[0]
        raise EvalAborted(cell, exc, len(runs), cancelled)
    return runs


class _Digests:
    """``Job.case_hash`` (a JSON dump and a SHA-256) once per case x pipeline, not per run:
    the jobs of a case come one after another, so remembering the last few suffices."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self.seen: dict[tuple[int, str], str] = {}

    def of(self, job: Job) -> str:
        key = (id(job.case), job.pipeline.key)
        digest = self.seen.get(key)
        if digest is None:
            if len(self.seen) >= self.size:
                self.seen.pop(next(iter(self.seen)))
            digest = self.seen[key] = job.case_hash
        return digest


def _stale(jobs: Sequence[Job], done: dict[Cell, RunRecord], journal: Journal) -> list[Cell]:
    """Journaled cells whose case (prompt, checks, rubric, pipeline, ...) changed since; a line
    from an older loomc carries no hash and is reused."""
    out: list[Cell] = []
    for job in jobs if done else ():
        recorded = journal.hashes.get(job.key)
        if job.key in done and recorded is not None and recorded != job.case_hash:
            out.append(job.key)
    return out


__all__ = [
    "DiagnosticError",
    "Estimate",
    "EvalAborted",
    "Job",
    "Jobs",
    "Journal",
    "RunHook",
    "estimate_json",
    "plan_jobs",
    "preflight",
    "run_matrix",
]
