"""Run one compiled pipeline x tier on one prompt with anyio.

Every step waits for its dependencies, evaluates its guard, reserves the worst case of each
attempt in the ledger before sending, and reconciles afterwards. The latency ceiling is a single
cancel scope over the whole run; step timeouts nest inside it. Nothing here raises on provider
trouble: failures become step records and a stop reason, and completed outputs are kept.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

import anyio

from loomc.checker.worstcase import step_attempt_cost
from loomc.exec.events import Event, EventKind, EventSink
from loomc.exec.guards import Facts, Outcome, evaluate, is_refusal
from loomc.exec.ledger import Ledger
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
from loomc.exec.result import (
    BudgetReport,
    RunResult,
    StepRecord,
    StepStatus,
    StepUsage,
    StopReason,
)
from loomc.ir.model import Pipeline, StepNode
from loomc.providers.base import CompletionRequest, ProviderError, estimate_tokens
from loomc.providers.registry import ProviderPool
from loomc.risk.base import RiskProfile, RiskProfiler
from loomc.units import Usage

GUARD_FALSE = "guard is false"
DEADLINE_PASSED = "run deadline passed"


@dataclass
class _Run:
    pipeline: Pipeline
    prompt: str
    pool: ProviderPool
    ledger: Ledger
    sinks: Sequence[EventSink]
    risk: RiskProfile
    stream: bool
    order: list[str]  # the graph's topological order, computed once per run
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    records: dict[str, StepRecord] = field(default_factory=dict)
    done: dict[str, anyio.Event] = field(default_factory=dict)
    stop_reason: StopReason | None = None
    over: str | None = None  # how a booked usage passed a ceiling (the run stops over-ceiling)
    started: float = field(default_factory=time.monotonic)
    rng: random.Random = field(default_factory=random.Random)

    async def emit(self, kind: EventKind, step: str | None = None, **data: object) -> None:
        event = Event(kind, self.run_id, step, dict(data))
        for sink in self.sinks:
            try:
                await sink.emit(event)
            except Exception:
                continue


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
) -> RunResult:
    """Execute ``pipeline`` on ``prompt``; ``parent_ledger`` shares ceilings across runs."""
    if ledger is None:
        ledger = Ledger(pipeline.budget, parent=parent_ledger, name="run")
    risk = _profile(profiler, prompt, pipeline.kind)
    order = pipeline.graph.topological_order()
    run = _Run(pipeline, prompt, pool, ledger, sinks, risk, stream, order)
    await run.emit(
        EventKind.RUN_STARTED, pipeline=pipeline.name, tier=pipeline.tier, risk=risk.to_json()
    )
    run.done = {sid: anyio.Event() for sid in order}
    if _input_tokens(pipeline, prompt) > pipeline.input_tokens:
        run.stop_reason = StopReason.INPUT_TOO_LARGE
        for sid in order:
            _skip(
                run,
                pipeline.graph.step(sid),
                StepStatus.BUDGET_STOPPED,
                f"prompt exceeds the input bound of {pipeline.input_tokens} tokens",
            )
    else:
        deadline = pipeline.budget.latency_ms
        with anyio.move_on_after(deadline / 1000 if deadline else None) as scope:
            async with anyio.create_task_group() as tg:
                for sid in order:
                    tg.start_soon(_run_step, run, pipeline.graph.step(sid))
        if scope.cancelled_caught:
            run.stop_reason = run.stop_reason or StopReason.MAX_LATENCY
            for sid in order:
                if sid not in run.records:
                    _skip(run, pipeline.graph.step(sid), StepStatus.CANCELLED, DEADLINE_PASSED)
    result = _result(run)
    await run.emit(
        EventKind.RUN_FINISHED,
        stop_reason=result.stop_reason,
        calls=result.calls,
        receipt_hash=result.receipt_hash,
    )
    return result


def _profile(profiler: RiskProfiler | None, prompt: str, kind: str) -> RiskProfile:
    if profiler is None:
        from loomc.policy.models import RiskSettings
        from loomc.risk.factory import make_profiler

        profiler = make_profiler(RiskSettings())
    return profiler.profile(prompt, kind)


def _input_tokens(pipeline: Pipeline, prompt: str) -> int:
    longest_task = max((len(s.task) for s in pipeline.graph.steps()), default=0)
    return estimate_tokens(pipeline.instruction) + estimate_tokens(prompt) + longest_task // 3 + 64


async def _run_step(run: _Run, step: StepNode) -> None:
    try:
        for dep in sorted(step.dependencies):
            if dep in run.done:
                await run.done[dep].wait()
        await _attempt_step(run, step)
    finally:
        run.done[step.id].set()


async def _attempt_step(run: _Run, step: StepNode) -> None:
    if not await _ready(run, step):
        return
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
    if run.pipeline.budget.cost is not None and step.pricing is None:
        return _stop(run, step, record, StopReason.MAX_COST, f"{step.model} has no pricing")

    async def on_event(ev: MeteredEvent) -> None:
        if isinstance(ev, AttemptStarted):
            record.attempts = ev.attempt  # kept current: the run deadline may cancel the call
        elif isinstance(ev, Retrying):
            await run.emit(
                EventKind.STEP_RETRY,
                step.id,
                attempt=ev.attempt,
                error=ev.error,
                delay_ms=int(ev.delay_s * 1000),
            )
        elif ev.kind == "token":
            await run.emit(EventKind.TOKEN, step.id, text=ev.text)
        elif ev.frame is not None:
            await run.emit(EventKind.PROVIDER_FRAME, step.id, frame=ev.frame)

    request = CompletionRequest(
        model=model_id,
        messages=msgs,
        max_tokens=step.max_tokens,
        stream=run.stream,
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
    )
    if out.refused is not None:
        await run.emit(EventKind.BUDGET_STOP, step.id, reason=out.refused.describe())
        if out.refused.over is not None:
            run.over = run.over or out.refused.describe()
        return _stop(run, step, record, out.refused.stop_reason, out.refused.describe())
    record.elapsed_ms = int((time.monotonic() - started) * 1000)
    await _finish(run, step, record, out)
    if out.over is not None:  # paid and kept, but nothing more is sent
        run.stop_reason, run.over = StopReason.OVER_CEILING, f"{step.id}: {out.over.describe()}"
        record.reason = run.over
        await run.emit(EventKind.BUDGET_STOP, step.id, reason=run.over)


async def _ready(run: _Run, step: StepNode) -> bool:
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


async def _finish(run: _Run, step: StepNode, record: StepRecord, out: Metered) -> None:
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
    await run.emit(
        EventKind.STEP_FINISHED,
        step.id,
        status=StepStatus.OK,
        elapsed_ms=record.elapsed_ms,
        usage=record.usage.model_dump(),
        model=step.model,
    )


def _skip(run: _Run, step: StepNode, status: StepStatus, reason: str) -> None:
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


def _stop(run: _Run, step: StepNode, record: StepRecord, stop: StopReason, reason: str) -> None:
    run.stop_reason = run.stop_reason or stop
    record.status = StepStatus.BUDGET_STOPPED if record.attempts == 0 else StepStatus.FAILED
    record.reason = reason
    run.outcomes[step.id] = Outcome(record.status, "")


def _status(run: _Run, sid: str) -> StepStatus | None:
    outcome = run.outcomes.get(sid)
    return None if outcome is None else outcome.status


def _total(amounts: Sequence[Decimal]) -> Decimal:
    return sum(amounts, Decimal(0))


def usable(text: str) -> bool:
    t = text.strip()
    return bool(t) and (len(t) > 80 or t.endswith((".", "!", "?", ")")) or "\n" in t)


def _answer(run: _Run) -> str:
    ok = [sid for sid in run.pipeline.answer if _status(run, sid) is StepStatus.OK]
    for sid in ok:
        if usable(run.outcomes[sid].output):
            return run.outcomes[sid].output
    return run.outcomes[ok[0]].output if ok else ""


def _escalation(run: _Run, executed: int) -> str | None:
    if executed <= 1:
        return None
    r = run.risk
    if r.level == "high":
        return f"high-risk task: {', '.join(r.signals)}" if r.signals else "high-risk task profile"
    first = run.outcomes.get(run.order[0])
    if is_refusal(first.output if first is not None else ""):
        return "direct answer was refused or empty"
    return f"{r.complexity}-complexity {r.kind} task"


def _result(run: _Run) -> RunResult:
    steps = [run.records[sid] for sid in run.order if sid in run.records]
    executed = [s for s in steps if s.attempts > 0]
    calls = sum(s.attempts for s in steps)
    failed = [s for s in steps if s.status is StepStatus.FAILED]
    answer = _answer(run)
    if run.stop_reason:
        stop = run.stop_reason
    elif not answer and failed:
        stop = StopReason.ERROR
    elif any(s.status is StepStatus.SKIPPED and s.reason == GUARD_FALSE for s in steps):
        stop = StopReason.DIRECT_ANSWER_ACCEPTED if len(executed) == 1 else StopReason.COMPLETED
    else:
        stop = StopReason.COMPLETED
    costs = [s.cost for s in executed if s.cost is not None]
    receipts = [s.credits for s in executed if s.credits is not None]
    canonical = {
        "pipeline": run.pipeline.name,
        "tier": run.pipeline.tier,
        "steps": [
            {
                "id": s.id,
                "worker": s.worker,
                "model": s.model,
                "access": s.access,
                "status": s.status,
                "attempts": s.attempts,
                "usage": s.usage.model_dump(),
            }
            for s in steps
        ],
        "answer": hashlib.sha256(answer.encode()).hexdigest(),
    }
    digest = hashlib.sha256(json.dumps(canonical, sort_keys=True, separators=(",", ":")).encode())
    return RunResult(
        answer=answer,
        pipeline=run.pipeline.name,
        tier=run.pipeline.tier,
        calls=calls,
        escalated=len(executed) > 1,
        escalation_reason=_escalation(run, len(executed)),
        stop_reason=stop,
        budget=BudgetReport(
            limits=run.pipeline.budget,
            used=run.ledger.actual,
            reserved_peak=run.ledger.peak,
            limited=stop.limited,
        ),
        steps=steps,
        risk=run.risk.to_json(),
        elapsed_ms=int((time.monotonic() - run.started) * 1000),
        cost=_total(costs) if executed and len(costs) == len(executed) else None,
        missing_pricing=sorted({s.model for s in executed if s.cost is None}),
        credits=_total(receipts) if receipts else None,
        estimated_credits=_total(
            [s.reserved.credits * s.attempts for s in executed if s.reserved is not None]
        ),
        tokens=sum(s.usage.total_tokens for s in steps),
        error=run.over or (failed[-1].reason if failed else None),
        receipt_hash=digest.hexdigest()[:16],
    )
