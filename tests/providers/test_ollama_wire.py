"""Ollama's native /api/chat adapter against a 127.0.0.1 server replaying NDJSON bytes."""

from __future__ import annotations

import pytest
from calls import complete
from replay import ReplayServer

from loomc.policy.models import ProviderConfig
from loomc.providers.base import (
    Completion,
    CompletionRequest,
    HTTPStatusError,
    MalformedResponse,
    Message,
    StreamDropped,
    StreamEvent,
)
from loomc.providers.ollama import OllamaProvider

TEXT = "Use a unique constraint on the idempotency key."


def run(
    replay: ReplayServer,
    model: str,
    *,
    stream: bool = True,
    events: list[StreamEvent] | None = None,
) -> Completion:
    provider = OllamaProvider(
        "local", ProviderConfig(type="ollama", base_url=replay.base_url), env={}
    )
    req = CompletionRequest(
        model=model,
        messages=(Message("user", "How do I dedupe payments?"),),
        max_tokens=128,
        stream=stream,
        timeout_s=5,
        temperature=0.2,
    )
    return complete(provider, req, events)


def test_ndjson_stream_tokens_and_counts(replay: ReplayServer) -> None:
    events: list[StreamEvent] = []
    out = run(replay, "ollama", events=events)
    assert out.content == TEXT
    # one token event per network read: the replay's eight writes, sent without a pause, may
    # share reads (test_read_events pins one event per read, N reads N events)
    assert "".join(e.text for e in events) == TEXT
    assert {e.kind for e in events} == {"token"} and 1 <= len(events) <= 8
    assert (out.usage.prompt_tokens, out.usage.completion_tokens, out.usage.estimated) == (
        26,
        8,
        False,
    )
    body = replay.requests[-1]["body"]
    assert replay.requests[-1]["path"] == "/api/chat"
    assert body["options"] == {"num_predict": 128, "temperature": 0.2}
    assert body["stream"] is True


def test_non_streaming_body(replay: ReplayServer) -> None:
    out = run(replay, "ollama", stream=False)
    assert out.content == TEXT and out.usage.total_tokens == 34
    assert replay.requests[-1]["body"]["stream"] is False


def test_cached_prompt_without_prompt_count_is_estimated(replay: ReplayServer) -> None:
    out = run(replay, "ollama-cached")
    assert out.usage.estimated and out.usage.completion_tokens == 8
    assert out.usage.prompt_tokens > 0


def test_missing_model_error_text_surfaces(replay: ReplayServer) -> None:
    with pytest.raises(HTTPStatusError, match='model "nope" not found') as info:
        run(replay, "ollama-missing")
    assert info.value.status == 404 and not info.value.retryable


def test_dropped_and_malformed_streams(replay: ReplayServer) -> None:
    with pytest.raises(StreamDropped) as dropped:
        run(replay, "drop-ollama")
    assert dropped.value.partial and TEXT.startswith(dropped.value.partial)
    with pytest.raises(MalformedResponse, match="line 2"):
        run(replay, "ollama-malformed")
