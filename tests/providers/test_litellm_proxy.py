"""The OpenAI-compatible adapter against LiteLLM's real proxy on 127.0.0.1 (mock models)."""

from __future__ import annotations

import pytest
from calls import complete
from litellm_config import MASTER_KEY

from loomc.policy.models import ProviderConfig
from loomc.providers.base import (
    Completion,
    CompletionRequest,
    HTTPStatusError,
    Message,
    RateLimited,
    StreamEvent,
)
from loomc.providers.openai_compat import OpenAICompatProvider

TEXT = "The capital of France is Paris. It has been the capital since 987."
pytestmark = pytest.mark.slow


def call(
    base: str,
    model: str,
    *,
    stream: bool,
    key: str = MASTER_KEY,
    events: list[StreamEvent] | None = None,
) -> Completion:
    cfg = ProviderConfig(type="openai-compatible", base_url=f"{base}/v1", api_key="env:LITELLM_KEY")
    provider = OpenAICompatProvider("litellm", cfg, env={"LITELLM_KEY": key})
    req = CompletionRequest(
        model=model,
        messages=(Message("user", "Capital of France?"),),
        max_tokens=50,
        stream=stream,
        timeout_s=30,
    )
    return complete(provider, req, events)


def test_streaming_usage_is_exact(litellm: str) -> None:
    events: list[StreamEvent] = []
    out = call(litellm, "mock-ok", stream=True, events=events)
    assert out.content == TEXT
    # One token event per network read (``ReadEvents``): how many of LiteLLM's frames share
    # a read depends on the machine's load, so the count is not asserted, only that every
    # event carries text and together they are the answer, in order.
    assert events and all(e.kind == "token" and e.text for e in events)
    assert "".join(e.text for e in events) == TEXT
    assert not out.usage.estimated
    assert out.usage.completion_tokens > 0 and out.usage.prompt_tokens > 0


def test_non_streaming(litellm: str) -> None:
    out = call(litellm, "mock-ok", stream=False)
    assert out.content == TEXT and out.finish_reason == "stop"
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (10, 20)  # LiteLLM's fake


@pytest.mark.parametrize("stream", [True, False])
def test_rate_limit_and_upstream_failure_are_typed(litellm: str, stream: bool) -> None:
    with pytest.raises(RateLimited) as limited:
        call(litellm, "mock-429", stream=stream)
    assert limited.value.retryable and "rate limit" in str(limited.value).lower()
    with pytest.raises(HTTPStatusError) as failed:
        call(litellm, "mock-500", stream=stream)
    assert failed.value.status == 500 and failed.value.retryable


def test_wrong_key_is_rejected_without_leaking_it(litellm: str) -> None:
    wrong = "sk-wrong-key-5f4e3d2c1b0a"
    with pytest.raises(HTTPStatusError) as info:
        call(litellm, "mock-ok", stream=False, key=wrong)
    assert 400 <= info.value.status < 500
    assert wrong not in str(info.value)
