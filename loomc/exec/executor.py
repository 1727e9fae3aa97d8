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

import inspect
import time
from collections.abc import Mapping, Sequence
from decimal import Decimal

import anyio

from loomc.checker.rules import limit_warnings
from loomc.checker.worstcase import step_attempt_cost
from loomc.exec.events import EventKind, EventSink
from loomc.exec.guards import Facts, Outcome, evaluate
from loomc.exec.ledger import Ledger, Refused
from loomc.exec.metered import (
    AttemptStarted,
    Metered,
    MeteredEvent,
    Retrying,
    RetryPolicy,
    describe,
    metered_call,
)
from loomc.exec.prompting import messages
from loomc.exec.receipt import GUARD_FALSE, build_result
from loomc.exec.result import (
    LimitStop,
    RunResult,
    StepRecord,
    StepStatus,
    StepUsage,
    StopReason,
)
from loomc.exec.schedule import input_tokens, is_chain, profile
from loomc.exec.state import CompletedStep, RunState, StepHook
from loomc.ir.model import Pipeline, StepNode
from loomc.providers.base import CompletionRequest, ProviderError, estimate_tokens
from loomc.providers.registry import ProviderPool
from loomc.risk.base import RiskProfiler
from loomc.units import Budget, Dimension, Usage

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
) -> RunResult:
    """Execute ``pipeline`` on ``prompt``; ``parent_ledger`` shares ceilings across runs.

    ``pipeline.limits`` (run-time limits) are enforced with ``pipeline.budget``; the checker's
    worst case against them is emitted as ``warning`` events and kept on ``result.warnings``.
    ``temperature`` replaces every step's (its worker's) sampling temperature.

    ``completed`` resumes a run killed mid-way: those steps (by id, status ok) are taken as done,
    not sent again; their outputs feed later steps and their usage counts on the run's ledger
    (not on ``parent_ledger``, which counts it already). ``on_step`` hears every step that
    completes, before any step that depends on it starts (an eval journals it there)."""
    enforced = pipeline.enforced  # computed once: every step and the receipt read it
    if ledger is None:
        ledger = Ledger(enforced, parent=parent_ledger, name="run")
    risk = await profile(profiler, prompt, pipeline.kind)
    order = pipeline.graph.topological_order()
    run = RunState(pipeline, prompt, pool, ledger, sinks, risk, stream, order, temperature)
    run.enforced = enforced
    run.completed = {
        sid: done
        for sid, done in (completed or {}).items()
        if sid in order and done.record.status is StepStatus.OK and done.record.output is not None
    }
    run.on_step = on_step
    await run.emit(
        EventKind.RUN_STARTED, pipeline=pipeline.name, tier=pipeline.tier, risk=risk.to_json()
    )
    for diag in limit_warnings(pipeline) if pipeline.limits != Budget() else ():
        run.warnings.append(diag.to_json())
        where = f"{diag.span.file}:{diag.span.line}:{diag.span.column}"
        await run.emit(
            EventKind.WARNING, code=diag.code, message=diag.message, hint=diag.hint, where=where
        )
    if input_tokens(pipeline, prompt) > pipeline.input_tokens:
        run.stop_reason = StopReason.INPUT_TOO_LARGE
        for sid in order:
            _skip(
                run,
                pipeline.graph.step(sid),
                StepStatus.BUDGET_STOPPED,
                f"prompt exceeds the input bound of {pipeline.input_tokens} tokens",
            )
    else:
        deadline = enforced.latency_ms
        if deadline is None:  # no run deadline: no cancel scope to enter and leave
            await _steps(run)
        else:
            with anyio.move_on_after(deadline / 1000) as scope:
                await _steps(run)
            if scope.cancelled_caught:
                _deadline_passed(run, deadline)
    result = build_result(run)
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
    if is_chain(run.pipeline, order):  # inline: the order is the dependencies' own
        for sid in order:
            await _attempt_step(run, graph.step(sid))
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
            _skip(run, run.pipeline.graph.step(sid), StepStatus.CANCELLED, DEADLINE_PASSED)
        elif record.status is StepStatus.RUNNING:
            cut.append(sid)
            sent, prompt_tokens, streamed = run.sent.get(sid, (now, 0, []))
            completion = estimate_tokens("".join(streamed))
            record.status = StepStatus.CANCELLED
            record.reason = DEADLINE_CUT
            record.elapsed_ms = int((now - sent) * 1000)
            record.usage = StepUsage(
                prompt_tokens=prompt_tokens,
                completion_tokens=completion,
                total_tokens=prompt_tokens + completion,
                estimated=True,
            )
            if record.reserved is not None and record.attempts > 0:
                record.cost = record.reserved.cost  # what the ledger booked: the worst case
            run.outcomes[sid] = Outcome(StepStatus.CANCELLED, "")
    if run.limited_by is None and run.stop_reason is StopReason.MAX_LATENCY:
        run.limited_by = LimitStop(
            dimension=Dimension.LATENCY,
            step=cut[0] if cut else None,
            needed=Decimal(0),
            left=Decimal(0),
            ceiling=Decimal(deadline),
            source=_source(run, Dimension.LATENCY, "run"),
        )


def _source(run: RunState, dim: Dimension, ledger: str) -> str:
    """Which ceiling stopped the run: a parent ledger's, the run-time limit or the promise."""
    if ledger != "run":
        return f"{ledger} ledger"
    limit, promise = run.pipeline.limits.get(dim), run.pipeline.budget.get(dim)
    return "limit" if limit is not None and (promise is None or limit <= promise) else "promise"


def _limited(run: RunState, step: StepNode, refused: Refused) -> LimitStop:
    ceiling = Decimal(refused.ceiling)
    return LimitStop(
        dimension=refused.dimension,
        step=step.id,
        needed=Decimal(refused.needed),
        left=max(ceiling - Decimal(refused.used), Decimal(0)),
        ceiling=ceiling,
        source=_source(run, refused.dimension, refused.ledger),
    )


async def _run_step(run: RunState, step: StepNode) -> None:
    try:
        for dep in sorted(step.dependencies):
            if dep in run.done:
                await run.done[dep].wait()
        await _attempt_step(run, step)
    finally:
        run.done[step.id].set()


async def _attempt_step(run: RunState, step: StepNode) -> None:
    if not await _ready(run, step):
        return
    if step.id in run.completed:
        return await _carry(run, step, run.completed[step.id])
    outputs = {sid: o.output for sid, o in run.outcomes.items() if o.status is StepStatus.OK}
    msgs = messages(run.pipeline, step, run.prompt, outputs)
    try:
        provider, model_id = run.pool.for_model(step.model)
    except ProviderError as exc:
        _skip(run, step, StepStatus.FAILED, describe(exc))
        await run.emit(
            EventKind.STEP_FINISHED,
            step.id,
            status=StepStatus.FAILED,
            error=run.records[step.id].reason,
        )
        return
    worst = step_attempt_cost(run.pipeline, step)
    reserve = Usage(
        calls=1,
        tokens=(worst.input_tokens or 0) + (worst.output_tokens or 0),
        credits=step.credits,
        cost=worst.cost or Decimal(0),
    )
    record = StepRecord(
        id=step.id,
        role=step.role,
        worker=step.worker,
        model=step.model,
        access=list(step.access),
        status=StepStatus.RUNNING,
        reserved=reserve,
    )
    run.records[step.id] = record
    started = time.monotonic()
    await run.emit(EventKind.STEP_STARTED, step.id, role=step.role, model=step.model)
    if run.enforced.cost is not None and step.pricing is None:
        return _stop(run, step, record, StopReason.MAX_COST, f"{step.model} has no pricing")
    prompt_tokens = sum(estimate_tokens(m.content) for m in msgs)
    streamed: list[str] = []

    async def on_event(ev: MeteredEvent) -> None:
        if isinstance(ev, AttemptStarted):
            record.attempts = ev.attempt  # kept current: the run deadline may cancel the call
            streamed.clear()
            run.sent[step.id] = (time.monotonic(), prompt_tokens, streamed)
        elif isinstance(ev, Retrying):
            await run.emit(
                EventKind.STEP_RETRY,
                step.id,
                attempt=ev.attempt,
                error=ev.error,
                delay_ms=int(ev.delay_s * 1000),
            )
        elif ev.kind == "token":
            streamed.append(ev.text)
            await run.emit(EventKind.TOKEN, step.id, text=ev.text)
        elif ev.kind == "reasoning":
            streamed.append(ev.text)  # billed as output, never part of the answer
            await run.emit(EventKind.REASONING, step.id, text=ev.text)
        elif ev.frame is not None:
            await run.emit(EventKind.PROVIDER_FRAME, step.id, frame=ev.frame)

    request = CompletionRequest(
        model=model_id,
        messages=msgs,
        max_tokens=step.max_tokens,
        stream=run.stream,
        temperature=run.temperature if run.temperature is not None else step.temperature,
        timeout_s=step.timeout_ms / 1000,
        step_role=step.role,
        metadata={"task": step.task},
    )
    out = await metered_call(
        provider,
        request,
        ledger=run.ledger,
        reserve=reserve,
        pricing=step.pricing,
        retry=RetryPolicy(
            step.attempts, run.pipeline.backoff_base_ms, run.pipeline.backoff_max_ms, run.rng
        ),
        on_event=on_event,
        timeout_ms=step.timeout_ms,
        label="step",
        prompt_tokens=prompt_tokens,
    )
    if out.refused is not None:
        if run.limited_by is None:
            run.limited_by = _limited(run, step, out.refused)
        reason = run.limited_by.describe() if run.limited_by.step == step.id else ""
        reason = reason or out.refused.describe()
        await run.emit(
            EventKind.BUDGET_STOP,
            step.id,
            reason=reason,
            limit=run.limited_by.model_dump(mode="json"),
        )
        if out.refused.over is not None:
            run.over = run.over or out.refused.describe()
        return _stop(run, step, record, out.refused.stop_reason, reason)
    record.elapsed_ms = int((time.monotonic() - started) * 1000)
    await _finish(run, step, record, out)
    if out.over is not None:  # paid and kept, but nothing more is sent
        run.stop_reason, run.over = StopReason.OVER_CEILING, f"{step.id}: {out.over.describe()}"
        record.reason = run.over
        await run.emit(EventKind.BUDGET_STOP, step.id, reason=run.over)


async def _ready(run: RunState, step: StepNode) -> bool:
    """Whether the step may be sent; records and reports it as skipped or stopped otherwise."""
    for dep in step.sees:
        dep_outcome = run.outcomes.get(dep)
        if dep_outcome is None or dep_outcome.status is not StepStatus.OK:
            _skip(run, step, StepStatus.SKIPPED, f"reads {dep!r}, which did not complete")
            await run.emit(EventKind.STEP_SKIPPED, step.id, reason=run.records[step.id].reason)
            return False
    if run.stop_reason is not None:
        _skip(run, step, StepStatus.BUDGET_STOPPED, f"run stopped: {run.stop_reason}")
        return False
    if not evaluate(step.guard, Facts(run.risk, run.prompt, run.outcomes)):
        _skip(run, step, StepStatus.SKIPPED, GUARD_FALSE)
        await run.emit(EventKind.STEP_SKIPPED, step.id, reason=GUARD_FALSE)
        return False
    return True


async def _finish(run: RunState, step: StepNode, record: StepRecord, out: Metered) -> None:
    if out.completion is None:
        record.status = StepStatus.FAILED
        record.reason = None if out.error is None else describe(out.error)
        run.outcomes[step.id] = Outcome(StepStatus.FAILED, "")
        await run.emit(
            EventKind.STEP_FINISHED, step.id, status=StepStatus.FAILED, error=record.reason
        )
        return
    usage = out.completion.usage
    record.status = StepStatus.OK
    record.output = out.completion.content
    record.usage = StepUsage(
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        total_tokens=usage.total_tokens,
        estimated=usage.estimated,
    )
    record.cost = out.cost
    record.credits = out.credits
    run.outcomes[step.id] = Outcome(StepStatus.OK, out.completion.content)
    await _finished_ok(run, step, record)
    if run.on_step is not None:
        booked = sum((c.usage for c in out.charges), Usage())
        # a shallow copy is the snapshot: the executor only ever reassigns a record's fields
        # (a deep copy cost ~0.1 ms per eval step, the one caller that passes on_step)
        heard = run.on_step(CompletedStep(record.model_copy(), booked, run.ledger.peak))
        if inspect.isawaitable(heard):
            await heard


async def _finished_ok(run: RunState, step: StepNode, record: StepRecord, **extra: object) -> None:
    """The ``step-finished`` event of a step that completed (now, or before a resume)."""
    await run.emit(
        EventKind.STEP_FINISHED,
        step.id,
        status=StepStatus.OK,
        elapsed_ms=record.elapsed_ms,
        usage=record.usage.model_dump(),
        model=step.model,
        **extra,
    )


async def _carry(run: RunState, step: StepNode, done: CompletedStep) -> None:
    """A step completed before the run was killed: its record and output as they were, its
    booked usage on the run's ledger only; nothing is sent."""
    record = done.record.model_copy(deep=True)
    run.records[step.id] = record
    run.ledger.carry(done.booked, peak=done.peak)
    run.outcomes[step.id] = Outcome(StepStatus.OK, record.output or "")
    await _finished_ok(run, step, record, resumed=True)
    over = run.ledger.overshoot()
    if over is not None:  # it passed the run's ceiling before the kill: nothing more is sent
        run.stop_reason, run.over = StopReason.OVER_CEILING, f"{step.id}: {over.describe()}"


def _skip(run: RunState, step: StepNode, status: StepStatus, reason: str) -> None:
    run.records[step.id] = StepRecord(
        id=step.id,
        role=step.role,
        worker=step.worker,
        model=step.model,
        access=list(step.access),
        status=status,
        reason=reason,
    )
    run.outcomes[step.id] = Outcome(status, "")


def _stop(run: RunState, step: StepNode, record: StepRecord, stop: StopReason, reason: str) -> None:
    run.stop_reason = run.stop_reason or stop
    record.status = StepStatus.BUDGET_STOPPED if record.attempts == 0 else StepStatus.FAILED
    record.reason = reason
    run.outcomes[step.id] = Outcome(record.status, "")
