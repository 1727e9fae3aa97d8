"""One metered model call: reserve, send, reconcile, retry. Every model call goes through here.

For each attempt the worst case (one call, its credit estimate, its token and money bound) is
reserved in the ledger *before* the request is sent; a refused reservation sends nothing. After
the attempt the reservation is replaced by what was really used: the provider's usage, the
native receipt's credits and the money at the model's pricing, or, for a failed attempt that may
still be billed, a conservative estimate (the prompt and whatever streamed, the reserved money).
Only retryable errors are retried, after an exponential backoff with jitter, or after the
server's ``Retry-After`` (capped by the backoff maximum).

Nothing here raises on provider trouble or a refusal: the typed ``Metered`` outcome says what
happened, and the caller (the executor, the judge) turns it into a record.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from decimal import Decimal

import anyio

from loomc.exec.ledger import Ledger, Reservation
from loomc.exec.refusals import Overshoot, Refused
from loomc.ir.model import Pricing
from loomc.providers.base import (
    Completion,
    CompletionRequest,
    Provider,
    ProviderError,
    ProviderTimeout,
    RateLimited,
    StreamCallback,
    StreamDropped,
    StreamEvent,
    TokenUsage,
    estimate_tokens,
    redact,
)
from loomc.text import well_formed
from loomc.units import Dimension, Usage, money_for_tokens

__all__ = [
    "JITTER",
    "AttemptStarted",
    "Charge",
    "Metered",
    "MeteredEvent",
    "RetryPolicy",
    "Retrying",
    "describe",
    "metered_call",
]


# One generator for every run's backoff jitter: seeding a fresh one per run cost more than the
# rest of a run's set-up, and jitter needs no independence between runs.
JITTER = random.Random()


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many attempts one call may make and how long to wait between them."""

    attempts: int = 1
    backoff_base_ms: int = 250
    backoff_max_ms: int = 4000
    rng: random.Random = field(default_factory=random.Random, compare=False)

    def delay_s(self, attempt: int, error: ProviderError) -> float:
        """Seconds to wait after the failed attempt ``attempt`` (0-based) before the next."""
        cap = self.backoff_max_ms / 1000
        if isinstance(error, RateLimited) and error.retry_after_s is not None:
            return min(error.retry_after_s, cap)
        base = self.backoff_base_ms / 1000 * (2**attempt)
        return float(min(base, cap) * self.rng.uniform(0.5, 1.0))


@dataclass(frozen=True, slots=True)
class AttemptStarted:
    """An attempt's reservation was granted and its request is about to be sent."""

    attempt: int  # 1-based


@dataclass(frozen=True, slots=True)
class Retrying:
    """An attempt failed with a retryable error; the next one starts after ``delay_s``."""

    attempt: int  # the attempt that failed, 1-based
    error: str  # "ErrorType: redacted message"
    delay_s: float


MeteredEvent = StreamEvent | AttemptStarted | Retrying
MeteredCallback = Callable[[MeteredEvent], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Charge:
    """What one sent attempt was reconciled to in the ledger."""

    usage: Usage
    prompt_tokens: int
    completion_tokens: int
    error: ProviderError | None = None  # None for the attempt that succeeded


@dataclass(slots=True)
class Metered:
    """The outcome of one metered call."""

    completion: Completion | None = None  # the successful completion, if any
    cost: Decimal | None = None  # USD of the successful completion; None when unpriced
    credits: Decimal | None = None  # native credits from its receipt; None when none was sent
    charges: list[Charge] = field(default_factory=list)  # one per attempt sent, in order
    refused: Refused | None = None  # set when a reservation was refused (nothing more sent)
    over: Overshoot | None = None  # set when the booked usage passed a ceiling (none sent after)

    @property
    def attempts(self) -> int:
        return len(self.charges)

    @property
    def usage(self) -> Usage:
        """Everything the ledger was charged for this call, failed attempts included."""
        return sum((c.usage for c in self.charges), Usage())

    @property
    def error(self) -> ProviderError | None:
        """The last attempt's error; None when the call succeeded or nothing was sent."""
        return self.charges[-1].error if self.charges else None


def describe(error: BaseException) -> str:
    """How an error is recorded: its type and its message, keys redacted."""
    return f"{type(error).__name__}: {redact(str(error))}"


async def metered_call(
    provider: Provider,
    request: CompletionRequest,
    *,
    ledger: Ledger,
    reserve: Usage,
    pricing: Pricing | None,
    retry: RetryPolicy,
    on_event: MeteredCallback | None = None,
    timeout_ms: int | None = None,
    label: str = "call",
    prompt_tokens: int | None = None,
) -> Metered:
    """Send ``request`` through ``provider``, reserving ``reserve`` in ``ledger`` per attempt.

    ``reserve`` is one attempt's worst case; its credits are also what an attempt is charged
    when no native receipt says otherwise. ``pricing`` prices the actual tokens (None: the
    model has no pricing, its money counts 0). ``on_event`` gets the stream's tokens and
    frames, each granted attempt and each retry. ``timeout_ms`` bounds each attempt (``label``
    names it in the timeout message). ``prompt_tokens``: the estimate of the request's messages
    when the caller has it already (else it is made here)."""
    out = Metered()
    if prompt_tokens is None:
        prompt_tokens = sum(estimate_tokens(m.content) for m in request.messages)
    for attempt in range(retry.attempts):
        reservation = await ledger.reserve(reserve)
        if isinstance(reservation, Refused):
            out.refused = reservation
            return out
        try:
            if on_event is not None:
                await on_event(AttemptStarted(attempt + 1))
            partial: list[str] = []

            async def stream(ev: StreamEvent, partial: list[str] = partial) -> None:
                if ev.text:  # provider text is untrusted: no lone surrogates past this point
                    text = well_formed(ev.text)
                    if text is not ev.text:
                        ev = replace(ev, text=text)
                if ev.kind in ("token", "reasoning"):  # reasoning is billed output too
                    partial.append(ev.text)
                if on_event is not None:
                    await on_event(ev)

            try:
                completion = await _send(provider, request, stream, timeout_ms, label)
            except anyio.get_cancelled_exc_class():
                # The run deadline cut the call off after it was sent: it may still be billed,
                # so book it as a failed attempt (an estimate, never zero) before the cancel
                # goes on.
                cut = ProviderTimeout(f"{label} cut off by the run deadline")
                charge = _failed(cut, prompt_tokens, estimate_tokens("".join(partial)), reserve)
                out.over = await _settle(ledger, reservation, charge.usage)
                out.charges.append(charge)
                raise
            except ProviderError as err:
                text = err.partial if isinstance(err, StreamDropped) else "".join(partial)
                charge = _failed(err, prompt_tokens, estimate_tokens(text), reserve)
                out.over = await _settle(ledger, reservation, charge.usage)
                out.charges.append(charge)
                if out.over is not None or not err.retryable or attempt + 1 >= retry.attempts:
                    return out
                delay = retry.delay_s(attempt, err)
                if on_event is not None:
                    await on_event(Retrying(attempt + 1, describe(err), delay))
                await anyio.sleep(delay)
                continue
            booked, charge, out.cost, out.credits, implausible = _succeeded(
                completion, request, prompt_tokens, reserve, pricing
            )
            out.over = await _settle(ledger, reservation, charge.usage) or implausible
            out.charges.append(charge)
            out.completion = booked
            return out
        finally:
            if not reservation.settled:  # an unexpected error: the request may be billed,
                await _settle(ledger, reservation, reserve)  # book its worst case
    return out


async def _settle(ledger: Ledger, reservation: Reservation, usage: Usage) -> Overshoot | None:
    """Reconcile. A run deadline can never leave a call that was sent unbooked here: the
    ledger settles without awaiting anything, so no cancellation can land inside it."""
    return await ledger.reconcile(reservation, usage)


async def _send(
    provider: Provider,
    request: CompletionRequest,
    stream: StreamCallback,
    timeout_ms: int | None,
    label: str,
) -> Completion:
    if timeout_ms is None:  # no deadline: no cancel scope to enter and leave
        return await provider.complete(request, stream)
    if getattr(provider, "keeps_time", False) and request.timeout_s == timeout_ms / 1000:
        # A provider that keeps its own time (the in-process mock) returns or raises
        # ProviderTimeout by the request's timeout_s, when a scope would have cut it off: the
        # same outcome, without a scope's bookkeeping (a tenth of an eval run's CPU).
        try:
            return await provider.complete(request, stream)
        except ProviderTimeout:
            raise ProviderTimeout(f"{label} timeout after {timeout_ms} ms") from None
    if getattr(provider, "keeps_deadlines", False):
        # An HTTP adapter that bounds the whole call itself (``HTTPProvider.complete``): on
        # its lean path one deadline on the connection, no scope to enter and leave (two
        # anyio calls and a timer each: ~5 % of a streamed run's CPU at 128 in flight)
        try:
            return await provider.complete(  # type: ignore[call-arg]
                request, stream, within_s=timeout_ms / 1000
            )
        except ProviderTimeout:
            raise ProviderTimeout(f"{label} timeout after {timeout_ms} ms") from None
    # A bare cancel scope, not ``fail_after`` (a generator context manager around the same
    # scope): the scope only ever cancels at its own deadline, so leaving it without the return
    # is the timeout; a cancel from outside (the run deadline) propagates through it.
    with anyio.CancelScope(deadline=anyio.current_time() + timeout_ms / 1000):
        return await provider.complete(request, stream)
    raise ProviderTimeout(f"{label} timeout after {timeout_ms} ms")


def _failed(err: ProviderError, prompt_tokens: int, streamed: int, reserve: Usage) -> Charge:
    """A failed attempt is still a call and may still be billed: charge it conservatively
    (the prompt and what streamed, its credit estimate, its reserved money)."""
    usage = Usage(
        calls=1, tokens=prompt_tokens + streamed, credits=reserve.credits, cost=reserve.cost
    )
    return Charge(usage, prompt_tokens, streamed, err)


def _succeeded(
    completion: Completion,
    request: CompletionRequest,
    prompt_estimate: int,
    reserve: Usage,
    pricing: Pricing | None,
) -> tuple[Completion, Charge, Decimal | None, Decimal | None, Overshoot | None]:
    """The completion as booked, its charge, money (None: unpriced), native credits and, when
    the provider reported more output than the request allowed, the overshoot.

    A negative token count is replaced by the local estimate of what was visibly sent or
    received (the worst of reported and estimated); a negative receipt books the credit
    estimate. Nothing is ever booked below zero. Reported output over the request's
    ``max_tokens`` is booked as reported (the worst case) and returned as an overshoot."""
    content = well_formed(completion.content)
    tokens = completion.usage
    prompt = tokens.prompt_tokens if tokens.prompt_tokens >= 0 else prompt_estimate
    # the estimate of what was received only when the reported count is unusable
    output = tokens.completion_tokens if tokens.completion_tokens >= 0 else estimate_tokens(content)
    adjusted = (prompt, output) != (tokens.prompt_tokens, tokens.completion_tokens)
    # as reported (nearly always): the provider's own objects are kept, nothing is rebuilt
    booked_tokens = tokens if not adjusted else TokenUsage(prompt, output, estimated=True)
    spent = completion.receipt.spent_credits if completion.receipt else None
    credits = reserve.credits
    if spent is not None:
        credits = spent if spent.is_finite() and spent >= 0 else max(reserve.credits, Decimal(0))
    cost = None
    if pricing is not None:
        cost = money_for_tokens(
            prompt, output, pricing.input_per_million, pricing.output_per_million
        )
    usage = Usage(
        calls=1,
        tokens=booked_tokens.total_tokens,
        credits=credits,
        cost=cost if cost is not None else Decimal(0),
    )
    over = None
    # Only a provider's own count can lie: a local estimate of a streamed answer (no usage on
    # the wire) is deliberately conservative and may pass max_tokens without any overshoot.
    reported = not tokens.estimated and tokens.completion_tokens >= 0
    if reported and request.max_tokens is not None and output > request.max_tokens:
        over = Overshoot("step", Dimension.TOKENS, output, request.max_tokens)
    booked = (
        completion
        if content is completion.content and booked_tokens is tokens
        else replace(completion, content=content, usage=booked_tokens)
    )
    charge = Charge(usage, prompt, output)
    return booked, charge, cost, None if spent is None else credits, over
