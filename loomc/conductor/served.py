"""The learned planner served like any model: an OpenAI-compatible endpoint (vLLM, or
`transformers serve`) that serves the base model with the adapter, called through loomc's
provider layer and `loomc.exec.metered.metered_call` — the same HTTP client, timeouts, typed
errors, retry and key handling (`env:NAME` only) as every worker call, each call reserved in
the planner's own ledger and its token usage counted.

The v2 prompt is sent as the one user message and must reach the model as is (the conductor
was trained on the raw prompt, no chat template): serve it with an identity template, e.g.
vLLM `--chat-template` whose body is `{{ messages[0]['content'] }}`, and `--enable-lora
--lora-modules conductor=ADAPTER_DIR` (then `model` is `conductor`). Decoding is greedy
(`temperature` 0) and capped by `max_new_tokens`. `generate` sends a batch's requests
concurrently (at most `batch_size` in flight), so a server that batches (vLLM's continuous
batching) decodes them together; outputs come back in input order.

Each prompt is one call, reserved at its worst case (the prompt's local estimate plus
`max_new_tokens`, priced where the policy prices the endpoint's model) before it is sent: in the
planner's own ledger, or under a caller's ledger (`agenerate(ledger=...)`: `loomc eval` plans
inside its eval-wide budget, each reservation journaled through `hooks`). A reservation the
caller's ledger refuses sends nothing, and that prompt comes back `refused`. A reply longer than
`MAX_PROPOSAL_CHARS` is cut there (a plan is a few hundred characters; the guard parses the
first JSON object), so a lying server cannot fill the journal or the receipt.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import anyio

from loomc.ir.model import Pricing
from loomc.policy.models import ProviderConfig
from loomc.providers.base import CompletionRequest, Message, estimate_tokens
from loomc.units import Usage, money_for_tokens

if TYPE_CHECKING:
    from loomc.exec.ledger import Ledger, LedgerHook

MAX_PROPOSAL_CHARS = 65_536


class ServedPlannerError(RuntimeError):
    """The endpoint could not be reached or answered with an error: the planner is unavailable."""


@dataclass(frozen=True)
class Served:
    """One prompt's outcome: its text, or why there is none (``error``: the call failed;
    ``refused``: the caller's ledger refused the call, nothing was sent), and what it cost."""

    text: str | None
    usage: dict[str, Any]
    error: str | None = None
    refused: str | None = None
    stop: str | None = None  # the refusal's stop reason (``max-calls-reached``, ...)


class ServedPlanner:
    """`.generate(prompts, batch_size) -> list[str]`, like `LearnedPlanner`, over HTTP."""

    def __init__(
        self,
        endpoint: str,
        model: str,
        *,
        api_key: str | None = None,
        max_new_tokens: int = 512,
        timeout_s: float = 120.0,
        pricing: Pricing | None = None,
        credits: Decimal = Decimal(0),
    ) -> None:
        """``pricing`` prices the endpoint's tokens and ``credits`` is each call's credit
        estimate, when the policy knows the endpoint's model (`loomc.conductor.cost`)."""
        if not endpoint.startswith(("http://", "https://")):
            raise ServedPlannerError(f"endpoint must be an http(s) URL, not {endpoint!r}")
        if api_key is not None and not api_key.startswith("env:"):
            raise ServedPlannerError("the endpoint's API key must be an env:NAME reference")
        self.config = ProviderConfig(
            type="openai-compatible", base_url=endpoint, api_key=api_key, timeout=None
        )
        self.endpoint = endpoint
        self.model = model
        self.max_new_tokens = max_new_tokens
        self.timeout_s = timeout_s
        self.pricing = pricing
        self.credits = credits
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        # per prompt of the latest `generate`, in order: what its calls cost (a failed or
        # refused call included), so each decision's receipt carries its planner's usage
        self.last_usage: list[dict[str, Any]] = []

    @property
    def info(self) -> dict[str, Any]:
        return {
            "lane": "served",
            "endpoint": self.endpoint,
            "model": self.model,
            "max_new_tokens": self.max_new_tokens,
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }

    def worst(self, prompt: str) -> Usage:
        """One call's worst case for ``prompt``: what is reserved before it is sent."""
        tokens = estimate_tokens(prompt)
        cost = Decimal(0)
        if self.pricing is not None:
            p = self.pricing
            cost = money_for_tokens(
                tokens, self.max_new_tokens, p.input_per_million, p.output_per_million
            )
        return Usage(calls=1, tokens=tokens + self.max_new_tokens, credits=self.credits, cost=cost)

    def usage(
        self,
        calls: int,
        prompt_tokens: int,
        completion_tokens: int,
        spent: Usage | None = None,
    ) -> dict[str, Any]:
        """One decision's planner usage, as its receipt records it (``credits`` and ``cost``
        as booked in the ledger; ``cost`` None when the policy does not price the model)."""
        spent = spent or Usage()
        return {
            "calls": calls,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "tokens": prompt_tokens + completion_tokens,
            "credits": str(spent.credits),
            "cost": None if self.pricing is None else str(spent.cost),
            "model": self.model,
            "endpoint": self.endpoint,
        }

    def generate(self, prompts: Sequence[str], batch_size: int = 8) -> list[str]:
        """Greedy completions of `prompts`, in order; raises `ServedPlannerError`."""
        try:
            import asyncio

            asyncio.get_running_loop()
        except RuntimeError:  # no loop here: run our own
            return anyio.run(self._generate, list(prompts), max(1, batch_size))
        # called from inside an event loop (loomc.run plans synchronously): a loop of our own
        # in a worker thread, so the caller's loop is not re-entered
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            future = pool.submit(anyio.run, self._generate, list(prompts), max(1, batch_size))
            return future.result()

    async def _generate(self, prompts: list[str], batch_size: int) -> list[str]:
        outcomes = await self.agenerate(prompts, batch_size)
        failures = [o.error or o.refused or "" for o in outcomes if o.text is None]
        if failures:
            raise ServedPlannerError(
                f"the planner endpoint {self.endpoint} failed {len(failures)} of "
                f"{len(prompts)} call(s): {failures[0]}"
            )
        return [o.text or "" for o in outcomes]

    async def agenerate(
        self,
        prompts: Sequence[str],
        batch_size: int = 8,
        *,
        ledger: Ledger | None = None,
        hooks: Sequence[LedgerHook | None] | None = None,
        on_each: Callable[[int, Served], None] | None = None,
    ) -> list[Served]:
        """Every prompt's outcome, in order; never raises on endpoint trouble. Each call is
        reserved in a ledger of its own (one call) under ``ledger`` (the caller's budget; by
        default one of the planner's own), with ``hooks[i]`` hearing prompt i's reservation
        and settlement; ``on_each(i, outcome)`` hears each prompt as soon as it is done."""
        from loomc.exec.ledger import Ledger
        from loomc.exec.metered import RetryPolicy, describe, metered_call
        from loomc.providers.registry import build_provider
        from loomc.units import Budget

        provider = build_provider("conductor", self.config)
        parent = ledger if ledger is not None else Ledger(Budget(), name="planner")
        out: list[Served | None] = [None] * len(prompts)
        limiter = anyio.CapacityLimiter(max(1, batch_size))

        async def one(i: int, prompt: str) -> None:
            request = CompletionRequest(
                model=self.model,
                messages=(Message("user", prompt),),
                max_tokens=self.max_new_tokens,
                stream=False,
                temperature=0.0,
                timeout_s=self.timeout_s,
            )
            hook = hooks[i] if hooks is not None else None
            # one call per prompt: the pre-flight counts exactly that
            own = parent.child(Budget(calls=1), name="planner", hook=hook)
            async with limiter:
                done = await metered_call(
                    provider,
                    request,
                    ledger=own,
                    reserve=self.worst(prompt),
                    pricing=self.pricing,
                    retry=RetryPolicy(attempts=1),
                    timeout_ms=int(self.timeout_s * 1000),
                    label="planner call",
                )
            self.calls += done.attempts
            prompt_tokens = sum(charge.prompt_tokens for charge in done.charges)
            completion_tokens = sum(charge.completion_tokens for charge in done.charges)
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
            used = self.usage(done.attempts, prompt_tokens, completion_tokens, done.usage)
            if done.completion is not None:
                text = done.completion.content.strip()[:MAX_PROPOSAL_CHARS]
                result = Served(text, used)
            elif done.error is not None:
                result = Served(None, used, error=describe(done.error))
            elif done.refused is not None and done.refused.ledger != "planner":
                refused = done.refused
                result = Served(None, used, refused=refused.describe(), stop=refused.stop_reason)
            else:
                result = Served(None, used, error="refused by the planner's ledger")
            out[i] = result
            if on_each is not None:
                on_each(i, result)

        try:
            async with anyio.create_task_group() as tg:
                for i, prompt in enumerate(prompts):
                    tg.start_soon(one, i, prompt)
        finally:
            await provider.aclose()
            self.last_usage = [o.usage if o else self.usage(0, 0, 0) for o in out]
        return [o if o is not None else Served(None, self.usage(0, 0, 0), "not sent") for o in out]
