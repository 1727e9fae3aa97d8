"""The OpenAI-compatible adapter against a real 127.0.0.1 server replaying recorded wire bytes."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from calls import complete
from replay import WIRE, ReplayServer

from loomc.policy.models import ProviderConfig
from loomc.providers.base import (
    CompletionRequest,
    ConnectionFailed,
    HTTPStatusError,
    MalformedResponse,
    Message,
    ProviderConfigError,
    ProviderTimeout,
    RateLimited,
    StreamDropped,
    StreamEvent,
)
from loomc.providers.openai_compat import OpenAICompatProvider

SECRET = "sk-live-test-0123456789abcdef"
PROMPT = "What is the capital of France?"
LITELLM_TEXT = "The capital of France is Paris. It has been the capital since 987."
WORDS_TEXT = "Use a unique constraint on the idempotency key."


def provider(
    replay: ReplayServer, kind: str = "openai-compatible", base: str | None = None
) -> OpenAICompatProvider:
    cfg = ProviderConfig(
        type=kind,
        base_url=base or f"{replay.base_url}/v1",  # type: ignore[arg-type]
        api_key="env:TEST_KEY",
    )
    return OpenAICompatProvider("gw", cfg, env={"TEST_KEY": SECRET})


def request(
    model: str, *, stream: bool = True, timeout_s: float | None = 5.0, max_tokens: int | None = 64
) -> CompletionRequest:
    return CompletionRequest(
        model=model,
        messages=(Message("user", PROMPT),),
        max_tokens=max_tokens,
        stream=stream,
        timeout_s=timeout_s,
    )


def test_litellm_recording_streams_tokens_and_exact_final_usage(replay: ReplayServer) -> None:
    events: list[StreamEvent] = []
    out = complete(provider(replay), request("litellm-usage"), events)
    assert out.content == LITELLM_TEXT
    assert "".join(e.text for e in events if e.kind == "token") == LITELLM_TEXT
    # one token event per network read: the replay's writes, sent without a pause, may share
    # reads (test_read_events pins one event per read, N reads N events)
    assert len([e for e in events if e.kind == "token"]) >= 1
    usage_chunk = [
        json.loads(line[6:])
        for line in (WIRE / "litellm-stream-usage.sse").read_text().splitlines()
        if line.startswith("data: {") and '"usage"' in line
    ][-1]["usage"]
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (
        usage_chunk["prompt_tokens"],
        usage_chunk["completion_tokens"],
    )
    assert out.usage.estimated is False
    assert out.finish_reason == "stop"
    sent = replay.requests[-1]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["body"]["stream"] is True
    assert sent["body"]["stream_options"] == {"include_usage": True}
    assert sent["body"]["max_tokens"] == 64
    assert sent["body"]["messages"] == [{"role": "user", "content": PROMPT}]
    assert sent["headers"]["authorization"] == f"Bearer {SECRET}"


@pytest.mark.parametrize("model", ["litellm-nousage", "llamacpp"])
def test_stream_without_usage_is_estimated_never_free(replay: ReplayServer, model: str) -> None:
    out = complete(provider(replay), request(model))
    assert out.usage.estimated is True
    assert out.usage.completion_tokens >= len(out.content.split())
    assert out.usage.prompt_tokens >= len(PROMPT.split())


def test_transformers_serve_stream_closes_without_done(replay: ReplayServer) -> None:
    out = complete(provider(replay), request("transformers-serve"))
    assert out.content == WORDS_TEXT
    assert (out.usage.prompt_tokens, out.usage.completion_tokens, out.usage.estimated) == (
        14,
        9,
        False,
    )


def test_openrouter_comments_skipped_and_cost_receipt(replay: ReplayServer) -> None:
    out = complete(provider(replay, "openrouter"), request("openrouter"))
    assert out.content == WORDS_TEXT
    assert out.receipt is not None and out.receipt.cost_usd == Decimal("0.0000412")
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (21, 8)
    body = replay.requests[-1]["body"]
    assert body["usage"] == {"include": True}  # the preset asks OpenRouter to account usage
    assert replay.requests[-1]["headers"]["x-title"] == "loomc"


def test_dot_stream_surfaces_payment_receipt_and_privacy_frames(replay: ReplayServer) -> None:
    events: list[StreamEvent] = []
    out = complete(provider(replay, "dot"), request("dot"), events)
    assert out.content == WORDS_TEXT
    assert out.receipt is not None and out.receipt.spent_credits == Decimal("2.5")
    frames = [e.frame for e in events if e.kind == "frame"]
    assert frames and frames == list(out.frames)
    assert frames[0] is not None and frames[0]["privacy"] == {
        "mode": "zero-retention",
        "pii_redacted": 1,
    }
    assert any(f is not None and "agent_api_payment" in f for f in frames)


def test_dot_non_streaming_receipt(replay: ReplayServer) -> None:
    out = complete(provider(replay, "dot"), request("dot", stream=False))
    assert out.content == WORDS_TEXT
    assert out.receipt is not None and out.receipt.spent_credits == Decimal("1.25")
    assert out.usage.total_tokens == 38 and not out.usage.estimated
    assert "stream_options" not in replay.requests[-1]["body"]


def test_malformed_sse_frame_is_a_typed_error(replay: ReplayServer) -> None:
    with pytest.raises(MalformedResponse, match="malformed SSE frame"):
        complete(provider(replay), request("malformed"))


def test_dropped_connection_mid_stream_keeps_the_partial(replay: ReplayServer) -> None:
    with pytest.raises(StreamDropped) as info:
        complete(provider(replay), request("drop"))
    assert info.value.retryable
    assert info.value.partial and LITELLM_TEXT.startswith(info.value.partial)
    assert info.value.partial != LITELLM_TEXT


@pytest.mark.parametrize(
    ("model", "expected"),
    [("rate-limited", 2.0), ("rate-limited-ms", 1.5), ("rate-limited-date", 0.0)],
)
def test_429_honours_retry_after(replay: ReplayServer, model: str, expected: float) -> None:
    with pytest.raises(RateLimited) as info:
        complete(provider(replay), request(model))
    assert info.value.retry_after_s == pytest.approx(expected)
    assert info.value.retryable


def test_5xx_is_retryable_4xx_is_not(replay: ReplayServer) -> None:
    with pytest.raises(HTTPStatusError) as five:
        complete(provider(replay), request("unavailable", stream=False))
    assert five.value.status == 503 and five.value.retryable
    assert "upstream overloaded" in str(five.value)
    with pytest.raises(HTTPStatusError) as four:
        complete(provider(replay), request("bad-request"))
    assert four.value.status == 400 and not four.value.retryable
    assert "max_tokens too large" in str(four.value)


def test_api_key_never_appears_in_errors(replay: ReplayServer) -> None:
    with pytest.raises(HTTPStatusError) as info:
        complete(provider(replay), request("echo-auth", stream=False))
    assert SECRET not in str(info.value)
    assert "[REDACTED]" in str(info.value)
    assert "api_key environment variable" in str(info.value)


def test_missing_env_key_is_a_config_error_naming_the_variable(replay: ReplayServer) -> None:
    cfg = ProviderConfig(
        type="openai-compatible", base_url=f"{replay.base_url}/v1", api_key="env:NOT_SET_ANYWHERE"
    )
    p = OpenAICompatProvider("gw", cfg, env={})
    with pytest.raises(ProviderConfigError, match="NOT_SET_ANYWHERE is not set"):
        complete(p, request("litellm-usage"))


def test_refused_connection_and_read_timeout(replay: ReplayServer) -> None:
    with pytest.raises(ConnectionFailed) as refused:
        complete(provider(replay, base="http://127.0.0.1:9/v1"), request("llamacpp"))
    assert refused.value.retryable
    with pytest.raises(ProviderTimeout):
        complete(provider(replay), request("stall", timeout_s=0.3))


def test_non_json_body_is_malformed(replay: ReplayServer) -> None:
    with pytest.raises(MalformedResponse, match="not JSON"):
        complete(provider(replay), request("not-json", stream=False))
