"""Streamed calls keep their TCP connection: the adapters read each body to its end.

The replay server records each request's client (host, port): a new port is a new connection.
A body that goes on after its end marker (``[DONE]``, Ollama's done line) is read only within a
small bound, then the connection is closed: the answer comes back at once, never a hang.
"""

from __future__ import annotations

import time
from decimal import Decimal

import anyio
from replay import TAIL_S, ReplayServer

from loomc.exec.executor import execute
from loomc.ir.model import Pipeline, StepGraph, StepNode
from loomc.policy.models import ProviderConfig
from loomc.providers.base import Completion, CompletionRequest, Message, Provider
from loomc.providers.ollama import OllamaProvider
from loomc.providers.openai_compat import OpenAICompatProvider
from loomc.providers.registry import ProviderPool
from loomc.units import Budget

LITELLM_TEXT = "The capital of France is Paris. It has been the capital since 987."
STEPS = 6


def _request(model: str, stream: bool = True) -> CompletionRequest:
    return CompletionRequest(
        model=model, messages=(Message("user", "hi"),), max_tokens=200, stream=stream, timeout_s=10
    )


def _connections(replay: ReplayServer, since: int) -> set[tuple[str, int]]:
    return {tuple(r["client"]) for r in replay.requests[since:]}


def _calls(provider: Provider, requests: list[CompletionRequest]) -> list[Completion]:
    async def main() -> list[Completion]:
        try:
            return [await provider.complete(r) for r in requests]
        finally:
            await provider.aclose()

    return anyio.run(main)


def _openai(replay: ReplayServer) -> OpenAICompatProvider:
    cfg = ProviderConfig(type="openai-compatible", base_url=f"{replay.base_url}/v1")
    return OpenAICompatProvider("gw", cfg, env={})


def _chain(steps: int, model: str) -> Pipeline:
    nodes: dict[str, StepNode] = {}
    prev: tuple[str, ...] = ()
    for i in range(steps):
        sid = f"s{i}"
        nodes[sid] = StepNode(
            id=sid,
            role="writer",
            worker="w",
            model=f"gw/{model}",
            provider="gw",
            provider_type="openai-compatible",
            group="g",
            task="t",
            max_tokens=200,
            timeout_ms=10_000,
            retries=0,
            credits=Decimal(1),
            p95_ms=None,
            pricing=None,
            sees=prev,
        )
        prev = (sid,)
    return Pipeline(
        name="chain",
        tier=None,
        policy="test",
        instruction="",
        graph=StepGraph(nodes),
        answer=(prev[0],),
        budget=Budget(calls=steps),
        pipeline_budget=Budget(),
        tier_budget=Budget(),
    )


def test_streamed_steps_of_a_run_share_one_connection(replay: ReplayServer) -> None:
    since = len(replay.requests)
    cfg = {"gw": ProviderConfig(type="openai-compatible", base_url=f"{replay.base_url}/v1")}

    async def main() -> None:
        async with ProviderPool(cfg) as pool:
            result = await execute(_chain(STEPS, "litellm-usage"), "hi", pool=pool, stream=True)
        assert result.calls == STEPS and result.answer == LITELLM_TEXT

    anyio.run(main)
    assert len(replay.requests) - since == STEPS
    assert len(_connections(replay, since)) == 1


def test_openai_streamed_and_whole_calls_share_one_connection(replay: ReplayServer) -> None:
    since = len(replay.requests)
    outs = _calls(
        _openai(replay),
        [_request("litellm-usage"), _request("dot", stream=False), _request("litellm-usage")],
    )
    assert (outs[0].content, outs[2].content) == (LITELLM_TEXT, LITELLM_TEXT)
    assert len(_connections(replay, since)) == 1


def test_ollama_streamed_calls_share_one_connection(replay: ReplayServer) -> None:
    since = len(replay.requests)
    cfg = ProviderConfig(type="ollama", base_url=replay.base_url)
    outs = _calls(OllamaProvider("ol", cfg, env={}), [_request("ollama")] * STEPS)
    assert all(o.content and o.finish_reason for o in outs)
    assert len(_connections(replay, since)) == 1


def test_a_body_that_never_ends_after_done_does_not_hang(replay: ReplayServer) -> None:
    for model in ("done-then-stall", "done-then-flood"):
        since = len(replay.requests)
        started = time.monotonic()
        outs = _calls(_openai(replay), [_request(model), _request("litellm-usage")])
        assert time.monotonic() - started < TAIL_S / 2, model
        assert [o.content for o in outs] == [LITELLM_TEXT, LITELLM_TEXT]
        assert outs[0].usage.estimated is False and outs[0].finish_reason == "stop"
        # the connection left behind was closed: the next call opened its own
        assert len(_connections(replay, since)) == 2, model


def test_an_ollama_body_that_never_ends_after_its_done_line_does_not_hang(
    replay: ReplayServer,
) -> None:
    cfg = ProviderConfig(type="ollama", base_url=replay.base_url)
    started = time.monotonic()
    outs = _calls(OllamaProvider("ol", cfg, env={}), [_request("ollama-done-then-stall")])
    assert time.monotonic() - started < TAIL_S / 2
    assert outs[0].content and outs[0].usage.estimated is False


def test_a_deadline_that_lands_while_draining_keeps_the_complete_answer(
    replay: ReplayServer,
) -> None:
    """The answer ended at ``[DONE]`` and is paid for: a caller's deadline that falls inside the
    bounded drain must not turn it into a timeout (the drain is shielded, then returns)."""
    provider = _openai(replay)

    async def main() -> Completion:
        try:
            with anyio.fail_after(0.1):  # the stall after [DONE] outlasts this; the drain does not
                return await provider.complete(_request("done-then-stall"))
        finally:
            await provider.aclose()

    out = anyio.run(main)
    assert out.content == LITELLM_TEXT and out.finish_reason == "stop"
