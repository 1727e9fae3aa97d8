"""A provider's response body is read within bounds (loomc/providers/body.py).

A real server on 127.0.0.1 sends bodies that never end: JSON, one SSE line without a newline,
valid token chunks forever, an NDJSON line without end, a gzip bomb, an endless error page.
Without the bound each of these reads until memory runs out (the server sends up to 256 MiB);
with ``max_response_bytes`` the adapter stops with ``ResponseTooLarge`` after about the bound.
"""

from __future__ import annotations

import gzip
import json
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from asgi_thread import ThreadedASGI, read_body
from calls import complete
from hypothesis import given
from hypothesis import strategies as st

from loomc.policy.models import ProviderConfig
from loomc.providers.base import (
    CompletionRequest,
    HTTPStatusError,
    MalformedResponse,
    Message,
    StreamEvent,
)
from loomc.providers.body import LineSplitter, ResponseTooLarge
from loomc.providers.ollama import OllamaProvider
from loomc.providers.openai_compat import OpenAICompatProvider

LIMIT = 64 * 1024
ENDLESS = 256 * 1024 * 1024  # what the server sends at most: far past any bound under test
CHUNK = 32 * 1024
BOMB = b'{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]}' + b" " * 2**23
TOKEN = b'data: {"choices":[{"index":0,"delta":{"content":"tok "}}]}\n\n'


class EndlessServer(ThreadedASGI):
    """The request's ``model`` picks the body; each is sent in 32 KiB writes up to 256 MiB."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        model = str(json.loads(await read_body(receive)).get("model"))
        status, ctype, extra, first, unit = _shape(model)
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", ctype), *extra]})  # fmt: skip
        sent = len(first)
        await send({"type": "http.response.body", "body": first, "more_body": True})
        while unit and sent < ENDLESS:  # after a disconnect uvicorn drops the writes
            await send({"type": "http.response.body", "body": unit, "more_body": True})
            sent += len(unit)
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _shape(model: str) -> tuple[int, bytes, list[tuple[bytes, bytes]], bytes, bytes]:
    json_type, sse_type = b"application/json", b"text/event-stream"
    if model == "json":
        return 200, json_type, [], b'{"choices":[{"message":{"content":"', b"a" * CHUNK
    if model == "line":
        return 200, sse_type, [], b'data: {"choices":[{"delta":{"content":"', b"a" * CHUNK
    if model == "tokens":
        return 200, sse_type, [], TOKEN, TOKEN * (CHUNK // len(TOKEN))
    if model == "ndjson":
        return 200, b"application/x-ndjson", [], b'{"message":{"content":"', b"a" * CHUNK
    if model == "error":
        return 500, b"text/html", [], b"<html>upstream broke ", b"x" * CHUNK
    if model == "bomb":  # ~8 KiB on the wire, 8 MiB of (valid) JSON once decompressed
        return 200, json_type, [(b"content-encoding", b"gzip")], gzip.compress(BOMB), b""
    raise AssertionError(model)


@pytest.fixture(scope="module")
def server() -> Iterator[EndlessServer]:
    s = EndlessServer().start()
    yield s
    s.stop()


def _openai(server: EndlessServer, limit: int | None = LIMIT) -> OpenAICompatProvider:
    cfg = ProviderConfig(
        type="openai-compatible",
        base_url=f"http://127.0.0.1:{server.port}/v1",  # type: ignore[arg-type]
        max_response_bytes=limit,  # type: ignore[arg-type]
    )
    return OpenAICompatProvider("edge", cfg, env={})


def _request(model: str, stream: bool) -> CompletionRequest:
    return CompletionRequest(
        model=model, messages=(Message("user", "hi"),), max_tokens=64, stream=stream, timeout_s=30.0
    )


@pytest.mark.parametrize(("model", "stream"), [("json", False), ("json", True),
                                               ("line", True), ("bomb", False)])  # fmt: skip
def test_an_endless_body_is_refused_at_the_bound(
    server: EndlessServer, model: str, stream: bool
) -> None:
    started = time.monotonic()
    with pytest.raises(ResponseTooLarge) as info:
        complete(_openai(server), _request(model, stream))
    assert time.monotonic() - started < 10  # refused at the bound, not at the server's 256 MiB
    assert isinstance(info.value, MalformedResponse) and not info.value.retryable
    assert re.fullmatch(r"edge: response body over 65536 bytes \(max_response_bytes\); .*",
                        str(info.value))  # fmt: skip


def test_endless_tokens_stream_until_the_bound_then_stop(server: EndlessServer) -> None:
    events: list[StreamEvent] = []
    with pytest.raises(ResponseTooLarge):
        complete(_openai(server), _request("tokens", True), events)
    streamed = "".join(e.text for e in events if e.kind == "token")
    # what arrived before the bound was streamed (and is what the executor charges)
    assert streamed.startswith("tok tok ")
    assert len(streamed) < LIMIT


def test_the_default_bound_holds_a_bomb_that_a_small_policy_bound_refuses(
    server: EndlessServer,
) -> None:
    out = complete(_openai(server, limit=None), _request("bomb", False))  # 8 MiB < 64 MiB
    assert out.content == "ok"  # counted decompressed, and within the default
    with pytest.raises(ResponseTooLarge):
        complete(_openai(server, limit=4 * 1024 * 1024), _request("bomb", False))


def test_an_endless_error_page_is_cut_to_an_excerpt(server: EndlessServer) -> None:
    started = time.monotonic()
    with pytest.raises(HTTPStatusError) as info:
        complete(_openai(server), _request("error", True))
    assert time.monotonic() - started < 10
    assert info.value.status == 500 and "upstream broke" in str(info.value)
    assert len(str(info.value)) < 600


def test_ollama_line_without_end_is_refused(server: EndlessServer) -> None:
    cfg = ProviderConfig(
        type="ollama",
        base_url=f"http://127.0.0.1:{server.port}",  # type: ignore[arg-type]
        max_response_bytes=LIMIT,  # type: ignore[arg-type]
    )
    with pytest.raises(ResponseTooLarge):
        complete(OllamaProvider("local", cfg, env={}), _request("ndjson", True))


LINE_TEXT = st.text(alphabet=st.sampled_from(["a", "é", "\r", "\n", "\u2028", " ", "{"]))


@given(text=LINE_TEXT, cuts=st.lists(st.integers(0, 200), max_size=8))
def test_lines_split_anywhere_match_the_sse_line_rules(text: str, cuts: list[int]) -> None:
    """Fed in any pieces, the splitter yields the lines of the whole text split at CRLF, LF or
    CR (U+2028 is not a line end in SSE: it stays inside the line)."""
    expected = re.split(r"\r\n|\r|\n", text)
    if expected[-1] == "":
        expected.pop()  # a text ending with a line end has no further line
    splitter = LineSplitter()
    got: list[str] = []
    last = 0
    for cut in sorted(c for c in cuts if c <= len(text)):
        got += splitter.feed(text[last:cut])
        last = cut
    got += splitter.feed(text[last:]) + splitter.end()
    assert got == expected
