"""Run one compiled pipeline x tier on one prompt with anyio.

Every step waits for its dependencies, evaluates its guard, reserves the worst case of each
attempt in the ledger before sending, and reconciles afterwards. The ledger enforces the tightest
of the pipeline's promise (``budget``, proved by the checker) and its run-time limits
(``limits``, not proved): a step that would not fit is not sent and the run stops
``budget-limited`` with the reason. The latency ceiling is a single cancel scope over the whole
run (a deadline); step timeouts nest inside it, and a call it cuts off is booked as an estimate.
Nothing here raises on provider trouble: failures become step records and a stop reason, and
completed outputs are kept.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from decimal import Decimal

import anyio

from loomc.exec.events import EventKind, EventSink
from loomc.exec.guards import Outcome
from loomc.exec.ledger import Ledger, LedgerHook
from loomc.exec.prepared import prepared
from loomc.exec.receipt import build_result
from loomc.exec.result import (
    LimitStop,
    RunResult,
    StepStatus,
    StepUsage,
    StopReason,
    trusted,
)
from loomc.exec.schedule import profile
from loomc.exec.state import CompletedStep, RunState, StepHook
from loomc.exec.step import attempt_step, skip, source
from loomc.ir.model import Pipeline, StepNode
from loomc.providers.base import estimate_tokens
from loomc.providers.registry import ProviderPool
from loomc.risk.base import RiskProfiler
from loomc.units import Dimension

DEADLINE_PASSED = "run deadline passed"
DEADLINE_CUT = "cut off by the run deadline"


async def execute(
    pipeline: Pipeline,
    prompt: str,
    *,
    pool: ProviderPool,
    ledger: Ledger | None = None,
    sinks: Sequence[EventSink] = (),
    profiler: RiskProfiler | None = None,
    stream: bool = True,
    parent_ledger: Ledger | None = None,
    temperature: float | None = None,
    completed: Mapping[str, CompletedStep] | None = None,
    on_step: StepHook | None = None,
    ledger_hook: LedgerHook | None = None,
) -> RunResult:
    """Execute ``pipeline`` on ``prompt``; ``parent_ledger`` shares ceilings across runs.

    ``pipeline.limits`` (run-time limits) are enforced with ``pipeline.budget``; the checker's
    worst case against them is emitted as ``warning`` events and kept on ``result.warnings``.
    ``temperature`` replaces every step's (its worker's) sampling temperature.

    ``completed`` resumes a run killed mid-way: those steps (by id, status ok) are taken as done,
    not sent again; their outputs feed later steps and their usage counts on the run's ledger
    (not on ``parent_ledger``, which counts it already). ``on_step`` hears every step that
    completes, before any step that depends on it starts (an eval journals it there).
    ``ledger_hook`` is told of the run ledger's reservations and settlements (an eval journals
    them; the run's ledger is built here, so ``ledger`` must be None)."""
    plan = prepared(pipeline)  # the pipeline's fixed part, worked out on its first run
    if ledger is None:
        ledger = Ledger(plan.enforced, parent=parent_ledger, name="run", hook=ledger_hook)
    elif ledger_hook is not None:
        raise ValueError("ledger_hook hooks the ledger execute builds: pass it or a ledger")
    risk = await profile(profiler, prompt, pipeline.kind)
    run = RunState(plan, prompt, pool, ledger, sinks, risk, stream, temperature)
    order = plan.order
    if completed:
        run.completed = {
            sid: done
            for sid, done in completed.items()
            if sid in order
            and done.record.status is StepStatus.OK
            and done.record.output is not None
        }
    run.on_step = on_step
    if sinks:  # the event's risk dict only when someone listens
        await run.emit(
            EventKind.RUN_STARTED, pipeline=pipeline.name, tier=pipeline.tier, risk=risk.to_json()
        )
    for diag in plan.warnings:
        run.warnings.append(diag.to_json())
        where = diag.span.where
        await run.emit(
            EventKind.WARNING, code=diag.code, message=diag.message, hint=diag.hint, where=where
        )
    if plan.input_base + estimate_tokens(prompt) > pipeline.input_tokens:  # = input_tokens()
        run.stop_reason = StopReason.INPUT_TOO_LARGE
        for sid in order:
            skip(
                run,
                pipeline.graph.step(sid),
                StepStatus.BUDGET_STOPPED,
                f"prompt exceeds the input bound of {pipeline.input_tokens} tokens",
            )
    else:
        deadline = plan.enforced.latency_ms
        if deadline is None:  # no run deadline: no cancel scope to enter and leave
            await _steps(run)
        else:
            with anyio.move_on_after(deadline / 1000) as scope:
                await _steps(run)
            if scope.cancelled_caught:
                _deadline_passed(run, deadline)
    result = build_result(run)
    if sinks:
        await run.emit(
            EventKind.RUN_FINISHED,
            stop_reason=result.stop_reason,
            calls=result.calls,
            receipt_hash=result.receipt_hash,
        )
    return result


async def _steps(run: RunState) -> None:
    """Every step of the run: inline for a chain, else one task per step."""
    graph, order = run.pipeline.graph, run.order
    if run.plan.chain:  # inline: the order is the dependencies' own
        for sid in order:
            await attempt_step(run, graph.step(sid))
    else:
        run.done = {sid: anyio.Event() for sid in order}
        async with anyio.create_task_group() as tg:
            for sid in order:
                tg.start_soon(_run_step, run, graph.step(sid))


def _deadline_passed(run: RunState, deadline: int) -> None:
    """The deadline cut the run: calls in flight are booked as estimates, the rest cancelled."""
    run.stop_reason = run.stop_reason or StopReason.MAX_LATENCY
    cut: list[str] = []
    now = time.monotonic()
    for sid in run.order:
        record = run.records.get(sid)
        if record is None:
            skip(run, run.pipeline.graph.step(sid), StepStatus.CANCELLED, DEADLINE_PASSED)
        elif record.status is StepStatus.RUNNING:
            cut.append(sid)
            sent, prompt_tokens, streamed = run.sent.get(sid, (now, 0, []))
            completion = estimate_tokens("".join(streamed))
            record.status = StepStatus.CANCELLED
            record.reason = DEADLINE_CUT
            record.elapsed_ms = int((now - sent) * 1000)
            record.usage = trusted(
                StepUsage,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion,
                total_tokens=prompt_tokens + completion,
                estimated=True,
            )
            if record.reserved is not None and record.attempts > 0:
                record.cost = record.reserved.cost  # what the ledger booked: the worst case
            run.outcomes[sid] = Outcome(StepStatus.CANCELLED, "")
    if run.limited_by is None and run.stop_reason is StopReason.MAX_LATENCY:
        run.limited_by = trusted(
            LimitStop,
            dimension=Dimension.LATENCY,
            step=cut[0] if cut else None,
            needed=Decimal(0),
            left=Decimal(0),
            ceiling=Decimal(deadline),
            source=source(run, Dimension.LATENCY, "run"),
        )


async def _run_step(run: RunState, step: StepNode) -> None:
    try:
        for dep in sorted(step.dependencies):
            if dep in run.done:
                await run.done[dep].wait()
        await attempt_step(run, step)
    finally:
        run.done[step.id].set()
