"""metered_call, the one reserve -> send -> reconcile -> retry loop, driven by the mock provider:
a refused reservation sends nothing, failed attempts are reconciled conservatively, retries
honour Retry-After (capped by the backoff maximum) for workflow steps and for the judge alike."""

from __future__ import annotations

import random
import time
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio

from loomc.eval.judge import JudgeSpec, judge
from loomc.exec.ledger import Ledger
from loomc.exec.metered import (
    AttemptStarted,
    Metered,
    MeteredEvent,
    Retrying,
    RetryPolicy,
    metered_call,
)
from loomc.ir.model import Pricing
from loomc.policy.models import MockFault, MockRule, MockScript
from loomc.providers.base import (
    CompletionRequest,
    HTTPStatusError,
    Message,
    RateLimited,
    StreamDropped,
    StreamEvent,
    estimate_tokens,
)
from loomc.providers.mock import MockProvider
from loomc.providers.registry import ProviderPool
from loomc.units import Budget, Usage

ROOT = Path(__file__).resolve().parents[2]
REQUEST = CompletionRequest(
    model="m",
    messages=(Message("system", "Be brief."), Message("user", "What is two plus two?")),
    max_tokens=50,
    step_role="worker",
)
PROMPT = sum(estimate_tokens(m.content) for m in REQUEST.messages)
RESERVE = Usage(calls=1, tokens=500, credits=Decimal("1.5"), cost=Decimal("0.002"))
PRICE = Pricing(Decimal(1), Decimal(2))


def _mock(fault: MockFault | None = None, **rule: Any) -> MockProvider:
    return MockProvider("mock", MockScript(rules=[MockRule(fault=fault, **rule)]))


def _call(
    provider: MockProvider,
    ledger: Ledger,
    *,
    attempts: int = 3,
    base_ms: int = 1,
    max_ms: int = 4000,
    rng: random.Random | None = None,
    request: CompletionRequest = REQUEST,
    timeout_ms: int | None = None,
) -> tuple[Metered, list[MeteredEvent]]:
    events: list[MeteredEvent] = []

    async def on_event(ev: MeteredEvent) -> None:
        events.append(ev)

    async def go() -> Metered:
        return await metered_call(
            provider,
            request,
            ledger=ledger,
            reserve=RESERVE,
            pricing=PRICE,
            retry=RetryPolicy(attempts, base_ms, max_ms, rng or random.Random(0)),
            on_event=on_event,
            timeout_ms=timeout_ms,
        )

    return anyio.run(go), events


def test_success_reconciles_actual_usage_money_and_receipt_credits() -> None:
    ledger = Ledger(Budget())
    out, events = _call(
        _mock(prompt_tokens=40, completion_tokens=10, spent_credits=Decimal("0.7")), ledger
    )
    assert out.completion is not None and out.attempts == 1 and out.error is None
    assert out.cost == Decimal(40 * 1 + 10 * 2) / 1_000_000
    assert out.credits == Decimal("0.7")
    assert (
        ledger.actual
        == out.usage
        == Usage(calls=1, tokens=50, credits=Decimal("0.7"), cost=out.cost)
    )
    assert ledger.committed == ledger.actual  # nothing left reserved
    assert ledger.peak == RESERVE  # the worst case was reserved before sending
    assert events[0] == AttemptStarted(1)
    assert [e.text for e in events if isinstance(e, StreamEvent)]  # the stream is passed on


def test_a_refused_reservation_sends_nothing() -> None:
    provider = _mock()
    ledger = Ledger(Budget(credits=Decimal(1)))  # one attempt needs 1.5
    out, events = _call(provider, ledger)
    assert provider.calls == 0 and out.attempts == 0 and out.completion is None
    assert out.refused is not None and out.refused.stop_reason == "max-credits-reached"
    assert events == [] and ledger.committed == ledger.actual == Usage()


def test_a_refusal_after_a_failed_attempt_stops_the_retries() -> None:
    provider = _mock(MockFault(kind="status", status=503, times=5))
    ledger = Ledger(Budget(credits=Decimal(2)))  # room for one attempt only
    out, _ = _call(provider, ledger)
    assert provider.calls == 1 and out.attempts == 1 and out.refused is not None
    assert isinstance(out.error, HTTPStatusError)


def test_failed_attempts_are_reconciled_conservatively() -> None:
    provider = _mock(
        MockFault(kind="stream-cut", after_tokens=2, times=1),
        response="one two three four five six",
        prompt_tokens=40,
        completion_tokens=6,
    )
    ledger = Ledger(Budget())
    out, events = _call(provider, ledger)
    assert out.completion is not None and out.attempts == 2 and provider.calls == 2
    failed, ok = out.charges
    assert isinstance(failed.error, StreamDropped) and ok.error is None
    # the failed attempt: the prompt and what streamed, its credit estimate, its reserved money
    streamed = estimate_tokens(failed.error.partial)
    assert streamed > 0
    assert failed.usage == Usage(
        calls=1, tokens=PROMPT + streamed, credits=Decimal("1.5"), cost=RESERVE.cost
    )
    assert ledger.actual == failed.usage + ok.usage == out.usage
    assert ledger.committed == ledger.actual
    assert [e.attempt for e in events if isinstance(e, AttemptStarted)] == [1, 2]


def test_a_timed_out_attempt_is_charged_and_retried() -> None:
    provider = _mock(latency_ms=2000)
    ledger = Ledger(Budget())
    out, events = _call(provider, ledger, attempts=2, timeout_ms=20)
    assert out.completion is None and out.attempts == 2
    assert str(out.error) == "call timeout after 20 ms"
    assert ledger.actual == Usage(
        calls=2, tokens=2 * PROMPT, credits=Decimal(3), cost=2 * RESERVE.cost
    )
    assert sum(isinstance(e, Retrying) for e in events) == 1


def test_a_mock_keeping_its_own_time_is_cut_off_as_a_scope_would_cut_it() -> None:
    """A step's request carries its timeout (timeout_s): the mock, which keeps its own time,
    then runs without a cancel scope and stops at the same moment, with the same error,
    charge and retry as the scope would give."""
    ledger = Ledger(Budget())
    request = replace(REQUEST, timeout_s=0.02)
    started = time.monotonic()
    out, events = _call(_mock(latency_ms=2000), ledger, attempts=2, timeout_ms=20, request=request)
    assert time.monotonic() - started < 1.5  # cut at the deadline, not after the latency
    assert out.completion is None and out.attempts == 2
    assert str(out.error) == "call timeout after 20 ms"
    assert ledger.actual == Usage(
        calls=2, tokens=2 * PROMPT, credits=Decimal(3), cost=2 * RESERVE.cost
    )
    assert sum(isinstance(e, Retrying) for e in events) == 1
    # a scripted timeout fires at the same deadline and reads the same; the retry answers
    out, _ = _call(
        _mock(MockFault(kind="timeout", times=1)), Ledger(Budget()), timeout_ms=20, request=request
    )
    assert out.completion is not None and out.attempts == 2
    assert str(out.charges[0].error) == "call timeout after 20 ms"


def test_only_retryable_errors_are_retried() -> None:
    provider = _mock(MockFault(kind="status", status=400, times=5))
    out, events = _call(provider, Ledger(Budget()))
    assert provider.calls == 1 and out.attempts == 1
    assert isinstance(out.error, HTTPStatusError) and out.error.status == 400
    assert not any(isinstance(e, Retrying) for e in events)


def test_retry_after_is_honoured_and_capped_by_the_backoff_maximum() -> None:
    provider = _mock(MockFault(kind="status", status=429, retry_after_s=0.05, times=1))
    out, events = _call(provider, Ledger(Budget()), base_ms=1, max_ms=10_000)
    retry = next(e for e in events if isinstance(e, Retrying))
    assert out.completion is not None and retry.delay_s == 0.05
    assert retry.error == "RateLimited: mock 429 rate limited"

    capped = _mock(MockFault(kind="status", status=429, retry_after_s=30, times=1))
    _, events = _call(capped, Ledger(Budget()), max_ms=20)
    assert next(e for e in events if isinstance(e, Retrying)).delay_s == 0.02


def test_backoff_without_retry_after_is_exponential_with_injected_jitter() -> None:
    provider = _mock(MockFault(kind="status", status=503, times=2))
    _, events = _call(provider, Ledger(Budget()), base_ms=10, max_ms=15, rng=random.Random(7))
    delays = [e.delay_s for e in events if isinstance(e, Retrying)]
    jitter = random.Random(7)
    assert delays == [0.01 * jitter.uniform(0.5, 1.0), 0.015 * jitter.uniform(0.5, 1.0)]
    policy = RetryPolicy(3, 10, 15, random.Random(1))
    assert policy.delay_s(0, RateLimited("x", retry_after_s=None)) <= 0.01


def test_the_judge_honours_retry_after() -> None:
    """The judge's retries used to ignore Retry-After and retry at once."""
    fault = MockFault(kind="status", status=429, retry_after_s=0.3, times=1)
    reply = '{"score": 90, "passed": true, "reason": "fine"}'
    provider = MockProvider(
        "mock", MockScript(rules=[MockRule(role="judge", response=reply, fault=fault)])
    )
    pool = ProviderPool({})
    pool.put("mock", provider)
    spec = JudgeSpec(
        ref="mock/judge",
        model="mock/judge",
        worker=None,
        max_tokens=100,
        timeout_ms=5000,
        attempts=2,
        credits=Decimal(1),
        input_per_million=Decimal(1),
        output_per_million=Decimal(1),
        backoff_base_ms=1,
        backoff_max_ms=10_000,
    )
    ledger = Ledger(Budget())

    async def go() -> Any:
        return await judge(
            spec, pool=pool, ledger=ledger, task="t", rubric=None, answer="a", bound=None
        )

    started = time.monotonic()
    verdict = anyio.run(go)
    assert time.monotonic() - started >= 0.3
    assert verdict.status == "ok" and verdict.calls == 2 and provider.calls == 2
    assert ledger.actual.calls == 2 and ledger.committed == ledger.actual


def test_the_judge_is_refused_before_sending() -> None:
    provider = MockProvider("mock", MockScript())
    pool = ProviderPool({})
    pool.put("mock", provider)
    spec = JudgeSpec(
        ref="mock/judge",
        model="mock/judge",
        worker=None,
        max_tokens=100,
        timeout_ms=5000,
        attempts=2,
        credits=Decimal(1),
        input_per_million=None,
        output_per_million=None,
    )

    async def go() -> Any:
        return await judge(
            spec,
            pool=pool,
            ledger=Ledger(Budget(calls=0)),
            task="t",
            rubric=None,
            answer="a",
            bound=None,
        )

    verdict = anyio.run(go)
    assert verdict.status == "budget-stopped" and verdict.calls == 0 and provider.calls == 0


def test_every_model_call_is_metered() -> None:
    """Only metered_call sends a request to a provider (adapters only implement it)."""
    callers = [
        str(p.relative_to(ROOT))
        for p in sorted((ROOT / "loomc").rglob("*.py"))
        if ".complete(" in p.read_text(encoding="utf-8") and "providers" not in p.parts
    ]
    assert callers == ["loomc/exec/metered.py"]
