"""The receipt of one run: which output is the answer, why it escalated, the per-model
roll-up (calls, tokens, receipt credits apart from estimated ones, money) and the hash."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from decimal import Decimal
from json.encoder import encode_basestring_ascii
from typing import Any

from loomc.exec.guards import is_refusal
from loomc.exec.result import (
    BudgetReport,
    ModelUsage,
    RunResult,
    StepRecord,
    StepStatus,
    StopReason,
    trusted,
)
from loomc.exec.state import RunState

GUARD_FALSE = "guard is false"


def _status(run: RunState, sid: str) -> StepStatus | None:
    outcome = run.outcomes.get(sid)
    return None if outcome is None else outcome.status


def _total(amounts: Sequence[Decimal]) -> Decimal:
    return sum(amounts, Decimal(0))


def usable(text: str) -> bool:
    t = text.strip()
    return bool(t) and (len(t) > 80 or t.endswith((".", "!", "?", ")")) or "\n" in t)


def _answer(run: RunState) -> str:
    ok = [sid for sid in run.pipeline.answer if _status(run, sid) is StepStatus.OK]
    for sid in ok:
        if usable(run.outcomes[sid].output):
            return run.outcomes[sid].output
    if ok:
        return run.outcomes[ok[0]].output
    if run.stop_reason is not None and run.stop_reason.limited:
        # Stopped before any answer step ran: the best answer so far is the latest completed
        # output (a draft beats nothing when the user set the limit).
        done = [sid for sid in reversed(run.order) if _status(run, sid) is StepStatus.OK]
        for sid in done:
            if usable(run.outcomes[sid].output):
                return run.outcomes[sid].output
    return ""


def _models(steps: Sequence[StepRecord]) -> dict[str, ModelUsage]:
    """The per-model roll-up: calls, tokens, receipt vs estimated credits, money."""
    # summed in plain lists, one pydantic model built per model at the end (a model's
    # attribute assignments go through pydantic's __setattr__, eight per step)
    sums: dict[str, list[Any]] = {}
    for s in steps:
        if s.attempts == 0:
            continue
        m = sums.get(s.model)
        if m is None:
            m = sums[s.model] = [0, 0, 0, 0, False, None, Decimal(0), Decimal(0)]
        m[0] += s.attempts
        m[1] += s.usage.prompt_tokens
        m[2] += s.usage.completion_tokens
        m[3] += s.usage.total_tokens
        m[4] = m[4] or s.usage.estimated
        estimate = s.reserved.credits * s.attempts if s.reserved is not None else Decimal(0)
        if s.credits is not None:
            m[5] = (m[5] or Decimal(0)) + s.credits
            estimate -= s.reserved.credits if s.reserved is not None else Decimal(0)
        m[6] += estimate
        m[7] = None if m[7] is None or s.cost is None else m[7] + s.cost
    return {
        model: trusted(
            ModelUsage,
            calls=m[0],
            prompt_tokens=m[1],
            completion_tokens=m[2],
            tokens=m[3],
            tokens_estimated=m[4],
            credits=m[5],
            estimated_credits=m[6],
            cost=m[7],
        )
        for model, m in sums.items()
    }


def _escalation(run: RunState, executed: int) -> str | None:
    if executed <= 1:
        return None
    r = run.risk
    if r.level == "high":
        return f"high-risk task: {', '.join(r.signals)}" if r.signals else "high-risk task profile"
    first = run.outcomes.get(run.order[0])
    if is_refusal(first.output if first is not None else ""):
        return "direct answer was refused or empty"
    return f"{r.complexity}-complexity {r.kind} task"


_str = encode_basestring_ascii  # json.dumps' own encoder of a str (ensure_ascii)


def _bool(value: bool) -> str:
    return "true" if value else "false"


def canonical_json(
    pipeline: str, tier: str | None, steps: Sequence[StepRecord], answer_hash: str
) -> str:
    """The bytes the receipt hash is taken over: what ``json.dumps(canonical, sort_keys=True,
    separators=(",", ":"))`` writes for the pipeline, tier, each step's identity, status,
    attempts and usage, and the answer's hash, built directly (keys already in sorted order;
    the dicts and the encoder cost more than the hash). A property test holds it to
    ``json.dumps`` byte for byte: the hash of every receipt ever written depends on it."""
    parts = []
    for s in steps:
        u = s.usage
        parts.append(
            f'{{"access":[{",".join(map(_str, s.access))}],"attempts":{int.__repr__(s.attempts)},'
            f'"id":{_str(s.id)},"model":{_str(s.model)},"status":{_str(s.status)},'
            f'"usage":{{"completion_tokens":{int.__repr__(u.completion_tokens)},'
            f'"estimated":{_bool(u.estimated)},"prompt_tokens":{int.__repr__(u.prompt_tokens)},'
            f'"total_tokens":{int.__repr__(u.total_tokens)}}},"worker":{_str(s.worker)}}}'
        )
    return (
        f'{{"answer":{_str(answer_hash)},"pipeline":{_str(pipeline)},"steps":[{",".join(parts)}],'
        f'"tier":{"null" if tier is None else _str(tier)}}}'
    )


def build_result(run: RunState) -> RunResult:
    records, order = run.records, run.order
    steps = [records[sid] for sid in order if sid in records]
    # one pass over the steps for every sum of the receipt (a pass per sum cost more)
    calls = tokens = 0
    executed: list[StepRecord] = []
    failed: StepRecord | None = None
    guard_false = False
    for s in steps:
        attempts, usage, status = s.attempts, s.usage, s.status
        calls += attempts
        tokens += usage.total_tokens
        if attempts > 0:
            executed.append(s)
        if status is StepStatus.FAILED:
            failed = s
        elif status is StepStatus.SKIPPED and s.reason == GUARD_FALSE:
            guard_false = True
    answer = _answer(run)
    if run.stop_reason:
        stop = run.stop_reason
    elif not answer and failed is not None:
        stop = StopReason.ERROR
    elif guard_false:
        stop = StopReason.DIRECT_ANSWER_ACCEPTED if len(executed) == 1 else StopReason.COMPLETED
    else:
        stop = StopReason.COMPLETED
    costs = [s.cost for s in executed if s.cost is not None]
    receipts = [s.credits for s in executed if s.credits is not None]
    digest = hashlib.sha256(
        canonical_json(
            run.pipeline.name, run.pipeline.tier, steps, hashlib.sha256(answer.encode()).hexdigest()
        ).encode()
    )
    elapsed_ms = int((time.monotonic() - run.started) * 1000)
    limited = stop.limited
    return trusted(
        RunResult,
        answer=answer,
        pipeline=run.pipeline.name,
        tier=run.pipeline.tier,
        calls=calls,
        escalated=len(executed) > 1,
        escalation_reason=_escalation(run, len(executed)),
        stop_reason=stop,
        budget=trusted(
            BudgetReport,
            limits=run.enforced,
            used=run.ledger.used(elapsed_ms),
            reserved_peak=run.ledger.peak,
            limited=limited,
        ),
        steps=steps,
        risk=run.risk.to_json(),
        elapsed_ms=elapsed_ms,
        cost=_total(costs) if executed and len(costs) == len(executed) else None,
        missing_pricing=sorted({s.model for s in executed if s.cost is None}),
        credits=_total(receipts) if receipts else None,
        estimated_credits=_total(
            [s.reserved.credits * s.attempts for s in executed if s.reserved is not None]
        ),
        tokens=tokens,
        error=run.over or run.undecided or (failed.reason if failed is not None else None),
        receipt_hash=digest.hexdigest()[:16],
        limited_by=run.limited_by if limited else None,
        models=_models(steps),
        warnings=run.warnings,
    )
