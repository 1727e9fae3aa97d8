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
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Sequence
from typing import Any

import anyio

from loomc.policy.models import ProviderConfig
from loomc.providers.base import CompletionRequest, Message, estimate_tokens


class ServedPlannerError(RuntimeError):
    """The endpoint could not be reached or answered with an error: the planner is unavailable."""


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
    ) -> None:
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

    def usage(self, calls: int, prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
        """One decision's planner usage, as its receipt records it."""
        return {
            "calls": calls,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "tokens": prompt_tokens + completion_tokens,
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
        from loomc.exec.ledger import Ledger
        from loomc.exec.metered import RetryPolicy, describe, metered_call
        from loomc.providers.registry import build_provider
        from loomc.units import Budget, Usage

        provider = build_provider("conductor", self.config)
        # the planner's own ledger: one call per prompt, each reserved at its worst case
        ledger = Ledger(Budget(calls=len(prompts)), name="planner")
        out: list[str | None] = [None] * len(prompts)
        used = [self.usage(0, 0, 0) for _ in prompts]
        self.last_usage = used
        limiter = anyio.CapacityLimiter(batch_size)
        failures: list[str] = []

        async def one(i: int, prompt: str) -> None:
            request = CompletionRequest(
                model=self.model,
                messages=(Message("user", prompt),),
                max_tokens=self.max_new_tokens,
                stream=False,
                temperature=0.0,
                timeout_s=self.timeout_s,
            )
            worst = Usage(calls=1, tokens=estimate_tokens(prompt) + self.max_new_tokens)
            async with limiter:
                done = await metered_call(
                    provider,
                    request,
                    ledger=ledger,
                    reserve=worst,
                    pricing=None,
                    retry=RetryPolicy(attempts=2),
                    timeout_ms=int(self.timeout_s * 1000),
                    label="planner call",
                )
            self.calls += done.attempts
            prompt_tokens = sum(charge.prompt_tokens for charge in done.charges)
            completion_tokens = sum(charge.completion_tokens for charge in done.charges)
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
            used[i] = self.usage(done.attempts, prompt_tokens, completion_tokens)
            if done.completion is None:
                error = next((c.error for c in reversed(done.charges) if c.error), None)
                failures.append(describe(error) if error else "refused by the planner's ledger")
                return
            out[i] = done.completion.content.strip()

        try:
            async with anyio.create_task_group() as tg:
                for i, prompt in enumerate(prompts):
                    tg.start_soon(one, i, prompt)
        finally:
            await provider.aclose()
        if failures:
            raise ServedPlannerError(
                f"the planner endpoint {self.endpoint} failed {len(failures)} of "
                f"{len(prompts)} call(s): {failures[0]}"
            )
        return [text or "" for text in out]
