"""One step of a run: ready (dependencies, guard, stop), reserved, sent through the metered call,
recorded. A step that would not fit its ceilings is not sent (the run stops ``budget-limited``,
with the numbers in ``LimitStop``); a step completed before a kill is carried, not sent again.
Provider trouble becomes the step's record, never a raise into the run.
"""

from __future__ import annotations

import inspect
import time
from decimal import Decimal
from typing import Any

import anyio

from loomc.exec.events import EventKind
from loomc.exec.guards import Facts, GuardUndecided, Outcome, evaluate, uses_patterns
from loomc.exec.metered import (
    AttemptStarted,
    Metered,
    MeteredEvent,
    Retrying,
    describe,
    metered_call,
)
from loomc.exec.prepared import PreparedStep
from loomc.exec.prompting import user_message
from loomc.exec.receipt import GUARD_FALSE
from loomc.exec.refusals import Refused
from loomc.exec.result import (
    LimitStop,
    StepRecord,
    StepStatus,
    StepUsage,
    StopReason,
    trusted,
)
from loomc.exec.state import CompletedStep, RunState
from loomc.ir.model import StepNode
from loomc.providers.base import CompletionRequest, Message, ProviderError, estimate_tokens
from loomc.units import Dimension, Usage


def source(run: RunState, dim: Dimension, ledger: str) -> str:
    """Which ceiling stopped the run: a parent ledger's, the run-time limit or the promise."""
    if ledger != "run":
        return f"{ledger} ledger"
    limit, promise = run.pipeline.limits.get(dim), run.pipeline.budget.get(dim)
    return "limit" if limit is not None and (promise is None or limit <= promise) else "promise"


def _limited(run: RunState, step: StepNode, refused: Refused) -> LimitStop:
    ceiling = Decimal(refused.ceiling)
    return trusted(
        LimitStop,
        dimension=refused.dimension,
        step=step.id,
        needed=Decimal(refused.needed),
        left=max(ceiling - Decimal(refused.used), Decimal(0)),
        ceiling=ceiling,
        source=source(run, refused.dimension, refused.ledger),
    )


async def attempt_step(run: RunState, step: StepNode) -> None:
    if not await _ready(run, step):
        return
    if step.id in run.completed:
        return await _carry(run, step, run.completed[step.id])
    fixed = run.plan.steps[step.id]  # the step's fixed part: messages, worst case, retries
    outputs = {sid: o.output for sid, o in run.outcomes.items() if o.status is StepStatus.OK}
    user = user_message(step, run.prompt, outputs)
    msgs = (Message("system", fixed.system), Message("user", user))
    try:
        provider, model_id = run.pool.for_model(step.model)
    except ProviderError as exc:
        skip(run, step, StepStatus.FAILED, describe(exc))
        await run.emit(
            EventKind.STEP_FINISHED,
            step.id,
            status=StepStatus.FAILED,
            error=run.records[step.id].reason,
        )
        return
    reserve = fixed.reserve
    record = _record(fixed, step, StepStatus.RUNNING, reserved=reserve)
    run.records[step.id] = record
    started = time.monotonic()
    if run.sinks:
        await run.emit(EventKind.STEP_STARTED, step.id, role=step.role, model=step.model)
    if fixed.unpriced:
        return _stop(run, step, record, StopReason.MAX_COST, f"{step.model} has no pricing")
    prompt_tokens = fixed.system_tokens + estimate_tokens(user)
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
            if run.sinks:
                await run.emit(EventKind.TOKEN, step.id, text=ev.text)
        elif ev.kind == "reasoning":
            streamed.append(ev.text)  # billed as output, never part of the answer
            if run.sinks:
                await run.emit(EventKind.REASONING, step.id, text=ev.text)
        elif ev.frame is not None and run.sinks:
            await run.emit(EventKind.PROVIDER_FRAME, step.id, frame=ev.frame)

    request = CompletionRequest(
        model=model_id,
        messages=msgs,
        max_tokens=step.max_tokens,
        stream=run.stream,
        temperature=run.temperature if run.temperature is not None else step.temperature,
        timeout_s=fixed.timeout_s,
        step_role=step.role,
        metadata={"task": step.task},
    )
    out = await metered_call(
        provider,
        request,
        ledger=run.ledger,
        reserve=reserve,
        pricing=step.pricing,
        retry=fixed.retry,
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


def _record(fixed: PreparedStep, step: StepNode, status: StepStatus, **fields: Any) -> StepRecord:
    """A new record of ``step``: its identity (the same in every run), then ``fields``."""
    return trusted(StepRecord, **fixed.identity, access=list(step.access), status=status, **fields)


async def _ready(run: RunState, step: StepNode) -> bool:
    """Whether the step may be sent; records and reports it as skipped or stopped otherwise."""
    for dep in step.sees:
        dep_outcome = run.outcomes.get(dep)
        if dep_outcome is None or dep_outcome.status is not StepStatus.OK:
            skip(run, step, StepStatus.SKIPPED, f"reads {dep!r}, which did not complete")
            await run.emit(EventKind.STEP_SKIPPED, step.id, reason=run.records[step.id].reason)
            return False
    if run.stop_reason is not None:
        skip(run, step, StepStatus.BUDGET_STOPPED, f"run stopped: {run.stop_reason}")
        return False
    if step.guard is not None:
        try:
            passed = await _guard(step, Facts(run.risk, run.prompt, run.outcomes))
        except GuardUndecided as exc:  # a pattern ran past its time bound: the run stops here
            if run.stop_reason is None:
                run.stop_reason, run.undecided = StopReason.GUARD_UNDECIDED, f"{step.id}: {exc}"
            skip(run, step, StepStatus.SKIPPED, str(exc))
            await run.emit(EventKind.STEP_SKIPPED, step.id, reason=str(exc))
            return False
        if not passed:
            skip(run, step, StepStatus.SKIPPED, GUARD_FALSE)
            await run.emit(EventKind.STEP_SKIPPED, step.id, reason=GUARD_FALSE)
            return False
    return True


async def _guard(step: StepNode, facts: Facts) -> bool:
    """The step's guard. One with ``matches`` may take up to its patterns' time bound, so it is
    evaluated in a worker thread (the patterns release the GIL) over a snapshot of the outcomes,
    and concurrent runs in the process do not wait on it; the rest are microseconds, inline."""
    if not uses_patterns(step.guard):
        return evaluate(step.guard, facts)
    snapshot = Facts(facts.risk, facts.prompt, dict(facts.outcomes))
    return await anyio.to_thread.run_sync(evaluate, step.guard, snapshot)


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
    record.usage = trusted(
        StepUsage,
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
        if heard is not None and inspect.isawaitable(heard):
            await heard


async def _finished_ok(run: RunState, step: StepNode, record: StepRecord, **extra: object) -> None:
    """The ``step-finished`` event of a step that completed (now, or before a resume)."""
    if not run.sinks:  # nobody listens (an eval): no usage dict to build
        return
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


def skip(run: RunState, step: StepNode, status: StepStatus, reason: str) -> None:
    run.records[step.id] = _record(run.plan.steps[step.id], step, status, reason=reason)
    run.outcomes[step.id] = Outcome(status, "")


def _stop(run: RunState, step: StepNode, record: StepRecord, stop: StopReason, reason: str) -> None:
    run.stop_reason = run.stop_reason or stop
    record.status = StepStatus.BUDGET_STOPPED if record.attempts == 0 else StepStatus.FAILED
    record.reason = reason
    run.outcomes[step.id] = Outcome(record.status, "")
