"""One token event per network read: what arrived together leaves together, and nothing waits.

A real uvicorn server on 127.0.0.1 sends recorded streams either in one write (every frame in
one body chunk: one read for the adapter) or one frame per write with pauses between (a read
each). The adapters must hand a read's answer text on as ONE ``token`` event (its reasoning as
one ``reasoning`` event, never merged with the answer), give N events for N reads, never hold a
read's text until the next read, and still redact a key split across two reads.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from typing import Any

import anyio
import pytest
from asgi_thread import ThreadedASGI, read_body
from calls import complete
from replay import WIRE

from loomc.policy.models import ProviderConfig
from loomc.providers.base import (
    REDACTED,
    CompletionRequest,
    MalformedResponse,
    Message,
    StreamEvent,
)
from loomc.providers.ollama import OllamaProvider
from loomc.providers.openai_compat import OpenAICompatProvider

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

KEY = "sk-live-readsplit-0123456789abcdef"
LITELLM_TEXT = "The capital of France is Paris. It has been the capital since 987."
WAIT_S = 5.0  # how long the gated server waits for the client to have seen the first read


def _frames(name: str) -> list[bytes]:
    data = (WIRE / name).read_bytes()
    sep = b"\n" if name.endswith(".ndjson") else b"\n\n"
    return [part + sep for part in data.split(sep) if part.strip()]


def _chunk(text: str, *, reasoning: str = "", finish: str | None = None) -> bytes:
    delta: dict[str, Any] = {"content": text or None}
    if reasoning:
        delta["reasoning_content"] = reasoning
    body = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


class ReadServer(ThreadedASGI):
    """The request's ``model`` says how the body is written: ``one:<file>`` (one write),
    ``paused:<file>`` (a write per frame, 20 ms apart), ``gated`` (three frames, then waits
    until the client says it has them), ``split-key`` (a key cut across two writes),
    ``mixed`` (reasoning, answer and a bad frame in one write)."""

    def __init__(self) -> None:
        self.seen_first = threading.Event()
        self.waited_out = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = json.loads(await read_body(receive) or b"{}")
        how, _, name = str(body.get("model", "")).partition(":")
        ctype = b"application/x-ndjson" if name.endswith(".ndjson") else b"text/event-stream"
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-type", ctype)]}
        )
        for part in await self._parts(how, name):
            if part is None:  # a pause: the next write is a read of its own
                await anyio.sleep(0.02)
                continue
            if part == b"gate":
                ok = await anyio.to_thread.run_sync(self.seen_first.wait, WAIT_S)
                self.waited_out = not ok
                continue
            await send({"type": "http.response.body", "body": part, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _parts(self, how: str, name: str) -> list[bytes | None]:
        if how == "one":
            return [b"".join(_frames(name))]
        if how == "paused":
            out: list[bytes | None] = []
            for frame in _frames(name):
                out += [frame, None]
            return out
        if how == "gated":
            first = _chunk("one ") + _chunk("two ") + _chunk("three ")
            rest = _chunk("four", finish="stop") + b"data: [DONE]\n\n"
            return [first, b"gate", rest]
        if how == "split-key":
            cut = len(KEY) // 2
            first = _chunk("the key is ") + _chunk(KEY[:cut])
            rest = _chunk(KEY[cut:]) + _chunk(" ok", finish="stop") + b"data: [DONE]\n\n"
            return [first, None, rest]
        if how == "mixed":
            return [
                _chunk("", reasoning="think ")
                + _chunk("", reasoning="hard ")
                + _chunk("Paris")
                + _chunk(" it is")
                + b"data: {not json\n\n"
            ]
        raise AssertionError(how)


@pytest.fixture(scope="module")
def server() -> Iterator[ReadServer]:
    srv = ReadServer().start()
    yield srv
    srv.stop()


def _compat(srv: ReadServer) -> OpenAICompatProvider:
    cfg = ProviderConfig(
        type="openai-compatible",
        base_url=f"http://127.0.0.1:{srv.port}/v1",  # type: ignore[arg-type]
        api_key="env:K",
    )
    return OpenAICompatProvider("gw", cfg, env={"K": KEY})


def _request(model: str) -> CompletionRequest:
    return CompletionRequest(
        model=model, messages=(Message("user", "hi"),), max_tokens=64, timeout_s=WAIT_S * 2
    )


def _kinds(events: list[StreamEvent], kind: str) -> list[str]:
    return [e.text for e in events if e.kind == kind]


def test_a_stream_in_one_read_is_one_token_event(server: ReadServer) -> None:
    events: list[StreamEvent] = []
    out = complete(_compat(server), _request("one:litellm-stream-usage.sse"), events)
    assert _kinds(events, "token") == [LITELLM_TEXT]
    assert out.content == LITELLM_TEXT
    assert out.usage.estimated is False  # the usage frame in the same read still counted
    assert out.finish_reason == "stop"


def test_a_stream_in_n_reads_is_n_token_events(server: ReadServer) -> None:
    frames = _frames("litellm-stream-usage.sse")
    with_text = [
        f
        for f in frames
        if f.startswith(b"data: {")
        and (json.loads(f[6:])["choices"] or [{}])[0].get("delta", {}).get("content")
    ]
    events: list[StreamEvent] = []
    paused = complete(_compat(server), _request("paused:litellm-stream-usage.sse"), events)
    tokens = _kinds(events, "token")
    assert len(tokens) == len(with_text) > 5
    assert "".join(tokens) == LITELLM_TEXT
    whole = complete(_compat(server), _request("one:litellm-stream-usage.sse"))
    assert (paused.content, paused.usage, paused.finish_reason) == (
        whole.content,
        whole.usage,
        whole.finish_reason,
    )


def test_reasoning_and_answer_of_one_read_never_merge(server: ReadServer) -> None:
    events: list[StreamEvent] = []
    out = complete(_compat(server), _request("one:reasoning-stream.sse"), events)
    assert [e.kind for e in events] == ["reasoning", "token"]
    assert out.content == events[1].text
    assert events[0].text not in out.content


def test_a_read_is_handed_on_before_the_next_arrives(server: ReadServer) -> None:
    """The server sends three frames, then waits until the client's sink has seen them: a
    client that held a read's tokens for the next read would make it wait out WAIT_S."""
    server.seen_first.clear()
    events: list[StreamEvent] = []

    async def main() -> str:
        provider = _compat(server)

        async def on_event(ev: StreamEvent) -> None:
            events.append(ev)
            if ev.kind == "token" and "three" in ev.text:
                server.seen_first.set()

        try:
            return (await provider.complete(_request("gated"), on_event)).content
        finally:
            await provider.aclose()

    assert anyio.run(main) == "one two three four"
    assert not server.waited_out
    tokens = _kinds(events, "token")
    # the redactor may hold a key-shaped tail back to its flush: "four" can come in two
    assert tokens[0] == "one two three " and "".join(tokens[1:]) == "four"


def test_a_key_split_across_two_reads_is_still_redacted(server: ReadServer) -> None:
    events: list[StreamEvent] = []
    out = complete(_compat(server), _request("split-key"), events)
    tokens = _kinds(events, "token")
    assert len(tokens) >= 2  # two reads, at least two events
    for text in tokens:
        assert KEY[: len(KEY) // 2] not in text and KEY[len(KEY) // 2 :] not in text
    assert "".join(tokens) == out.content == f"the key is {REDACTED} ok"


def test_a_bad_frame_still_lets_the_read_before_it_out(server: ReadServer) -> None:
    events: list[StreamEvent] = []
    with pytest.raises(MalformedResponse):
        complete(_compat(server), _request("mixed"), events)
    assert [e.kind for e in events] == ["reasoning", "token"]
    assert events[0].text == "think hard "
    # one event for both frames; the redactor keeps a key-shaped tail back, and a failed call
    # never flushes it (as before this change)
    assert events[1].text.startswith("Paris it")


def test_ollama_one_read_is_one_token_event_and_n_reads_n(server: ReadServer) -> None:
    def provider() -> OllamaProvider:
        base = f"http://127.0.0.1:{server.port}"
        return OllamaProvider("local", ProviderConfig(type="ollama", base_url=base), env={})  # type: ignore[arg-type]

    one: list[StreamEvent] = []
    out = complete(provider(), _request("one:ollama-stream.ndjson"), one)
    assert _kinds(one, "token") == [out.content]
    paused: list[StreamEvent] = []
    again = complete(provider(), _request("paused:ollama-stream.ndjson"), paused)
    lines = [f for f in _frames("ollama-stream.ndjson") if json.loads(f)["message"]["content"]]
    assert len(_kinds(paused, "token")) == len(lines) > 5
    assert (again.content, again.usage) == (out.content, out.usage)
    thinking: list[StreamEvent] = []
    complete(provider(), _request("one:ollama-thinking.ndjson"), thinking)
    assert [e.kind for e in thinking] == ["reasoning", "token"]
