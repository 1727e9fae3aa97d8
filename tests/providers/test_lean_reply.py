"""The OpenAI-compatible adapter's lean path (``HTTPProvider.exchange``: the transport's
``Reply`` read off the connection's buffer, one deadline per call) against real TCP servers on
127.0.0.1 that send exactly the bytes each test chooses. Every case runs the lean path and
httpx's (forced by a cookie in the client's jar, which keeps a call on ``post``) and asks for
the same answer, or the same error in the same words: split anywhere, paused, cut short,
oversized, malformed, encoded, refused."""

from __future__ import annotations

import asyncio
import gzip
import itertools
import json
import re
import time
from collections.abc import Awaitable, Callable

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.policy.models import ProviderConfig
from loomc.providers.base import (
    Completion,
    CompletionRequest,
    Message,
    ProviderError,
    ProviderTimeout,
    RateLimited,
    StreamEvent,
)
from loomc.providers.openai_compat import OpenAICompatProvider

WORDS = ["Hel", "lo", ", ", "wor", "ld", " é ", "\u2603", "!"]


def _sse(words: list[str] = WORDS, done: bool = True, finish: bool = True) -> bytes:
    frames: list[dict[str, object]] = [
        {"choices": [{"index": 0, "delta": {"content": w}}]} for w in words
    ]
    if finish:
        frames.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        frames.append({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 8}})
    out = b"".join(b"data: %s\n\n" % json.dumps(f).encode() for f in frames)
    return out + (b"data: [DONE]\n\n" if done else b"")


def _chunked_reply(body: bytes, size: int = 7, extra: bytes = b"") -> bytes:
    chunks = [body[i : i + size] for i in range(0, len(body), size)]
    framed = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
    return head + extra + b"\r\n" + framed


def _sized_reply(body: bytes, status: bytes = b"200 OK", extra: bytes = b"") -> bytes:
    head = b"HTTP/1.1 %s\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n"
    return head % (status, len(body)) + extra + b"\r\n" + body


# a reply: the writes a server makes, a float among them a pause (seconds) between writes,
# CLOSE: the server closes the connection there
Reply = list[bytes | float | None]
CLOSE = None


def _server(replies: list[Reply]) -> Callable[..., Awaitable[None]]:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while replies:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                await reader.readexactly(length)
                for part in replies.pop(0):
                    if part is CLOSE:
                        return
                    if isinstance(part, float):
                        await asyncio.sleep(part)
                    else:
                        writer.write(part)
                        await writer.drain()
                        await asyncio.sleep(0)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    return handler


def _request(timeout_s: float = 5.0) -> CompletionRequest:
    return CompletionRequest(
        model="m", messages=(Message("user", "hi"),), max_tokens=64, timeout_s=timeout_s
    )


Outcome = tuple[object, ...]


def _outcome(out: Completion | ProviderError) -> Outcome:
    if isinstance(out, ProviderError):  # each run's server has a port of its own
        return type(out).__name__, re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", str(out))
    usage = (out.usage.prompt_tokens, out.usage.completion_tokens)
    return out.content, out.finish_reason, usage, out.usage.estimated


def _calls(
    replies: list[Reply],
    lean: bool,
    *,
    within_s: float | None = None,
    limit: int | None = None,
    calls: int = 1,
    sink_pause_s: float = 0.0,
    uvloop: bool = False,
) -> tuple[list[Completion | ProviderError], int, list[str]]:
    """Each call's completion (or error), the connections opened, the token events seen."""
    tokens: list[str] = []

    async def on_event(event: StreamEvent) -> None:
        if event.kind == "token":
            tokens.append(event.text)
            if sink_pause_s:
                await asyncio.sleep(sink_pause_s)

    async def main() -> tuple[list[Completion | ProviderError], int]:
        server = await asyncio.start_server(_server(list(replies)), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        cfg = ProviderConfig(
            type="openai-compatible",
            base_url=f"http://127.0.0.1:{port}/v1",
            max_response_bytes=limit,
        )
        provider = OpenAICompatProvider("up", cfg, env={})
        if not lean:  # a cookie in the jar keeps every call on httpx's Response
            provider.client.cookies.set("route", "a1")
        assert (provider._lean_loop() is not None) is lean
        outs: list[Completion | ProviderError] = []
        try:
            for _ in range(calls):
                try:
                    outs.append(await provider.complete(_request(), on_event, within_s=within_s))
                except ProviderError as exc:
                    outs.append(exc)
            transport = provider._transport
            return outs, getattr(transport, "opened", 0)
        finally:
            await provider.aclose()
            server.close()

    outs, opened = anyio.run(main, backend_options={"use_uvloop": uvloop})
    return outs, opened, tokens


def _both(replies: list[Reply], **kw: object) -> list[Outcome]:
    lean, _, _ = _calls(list(replies), True, **kw)  # type: ignore[arg-type]
    plain, _, _ = _calls(list(replies), False, **kw)  # type: ignore[arg-type]
    assert [_outcome(o) for o in lean] == [_outcome(o) for o in plain]
    return [_outcome(o) for o in lean]


EXPECTED = ("".join(WORDS), "stop", (5, 8), False)


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points) if data[a:b]]


@settings(max_examples=40, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=12))
def test_a_chunked_answer_split_anywhere_is_the_same_answer(cuts: list[int]) -> None:
    reply = _chunked_reply(_sse())
    parts: Reply = [*_split(reply, cuts)]
    outs, opened, _ = _calls([parts, parts], True, calls=2)
    assert [_outcome(o) for o in outs] == [EXPECTED, EXPECTED]
    assert opened == 1  # read to its end: the second call reuses the connection


def test_every_single_byte_boundary_of_a_chunked_answer() -> None:
    reply = _chunked_reply(_sse(WORDS[:3]), size=5)
    expected = ("".join(WORDS[:3]), "stop", (5, 8), False)
    for cut in range(1, len(reply)):
        outs, _, _ = _calls([[reply[:cut], reply[cut:]]], True)
        assert _outcome(outs[0]) == expected, cut


def test_a_sized_answer_written_a_byte_at_a_time() -> None:
    reply = _sized_reply(_sse(WORDS[:2]))
    assert _both([[bytes([b]) for b in reply]]) == [("".join(WORDS[:2]), "stop", (5, 8), False)]


def test_a_pause_mid_body_within_the_deadline_is_waited_for() -> None:
    reply = _chunked_reply(_sse())
    outs = _both([[reply[:150], 0.2, reply[150:]]], within_s=2.0)
    assert outs == [EXPECTED]


def test_a_pause_past_the_deadline_is_a_step_timeout_at_the_deadline() -> None:
    reply = _chunked_reply(_sse())
    started = time.monotonic()
    outs, _, tokens = _calls([[reply[:400], 3.0, reply[400:]]], True, within_s=0.3)
    assert time.monotonic() - started < 2.0
    assert isinstance(outs[0], ProviderTimeout)
    assert tokens  # what came before the pause was handed on
    # without a deadline (a direct caller), each read has the request's timeout: still waited
    outs, _, _ = _calls([[reply[:400], 0.4, reply[400:]]], True)
    assert _outcome(outs[0]) == EXPECTED


def test_a_deadline_that_passes_while_a_sink_holds_the_call_ends_it() -> None:
    """The whole body arrives at once; the sink holds the call past the deadline: the call
    ends in a timeout as the step's cancel scope would have cut it off."""
    reply = _sized_reply(_sse())
    outs, _, _ = _calls([[reply]], True, within_s=0.1, sink_pause_s=0.3)
    assert isinstance(outs[0], ProviderTimeout)
    outs, _, _ = _calls([[reply]], False, within_s=0.1, sink_pause_s=0.3)
    assert isinstance(outs[0], ProviderTimeout)


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param([_chunked_reply(_sse())[:200]], id="closed-mid-chunk"),
        pytest.param([_sized_reply(_sse())[:-40]], id="closed-mid-sized-body"),
        pytest.param([_chunked_reply(_sse(done=False, finish=False))], id="no-finish-reason"),
        pytest.param([b"HTTP/1.1 200 OK\r\n" + b"x-pad: " + b"a" * 70_000], id="huge-head"),
        pytest.param(
            [b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nabc\r\n"],
            id="bad-chunk-size",
        ),
        pytest.param(
            [b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabcdef\r\n0\r\n\r\n"],
            id="chunk-without-crlf",
        ),
        pytest.param([_sized_reply(b"data: {not json}\n\n")], id="garbage-sse"),
        pytest.param([_sized_reply(b"data: [1, 2]\n\n")], id="sse-not-an-object"),
        pytest.param([b"HTTP/1.1 200 OK\r\ncontent-length: -5\r\n\r\n"], id="bad-length"),
        pytest.param([b"garbage\r\n\r\n"], id="bad-status-line"),
        pytest.param([], id="closed-before-a-response"),
        pytest.param(
            [
                _sized_reply(
                    b'{"error": {"message": "slow down"}}', b"429 Too Many", b"retry-after: 7\r\n"
                )
            ],
            id="rate-limited",
        ),
        pytest.param(
            [_sized_reply(b'data: {"error": {"message": "boom", "code": 503}}\n\n')],
            id="error-frame",
        ),
    ],
)
def test_a_hostile_reply_is_the_same_one_line_error_on_both_paths(reply: Reply) -> None:
    [outcome] = _both([[*reply, CLOSE]])
    assert len(outcome) == 2 and "\n" not in outcome[1], outcome


def test_a_rate_limit_keeps_its_retry_after_on_the_lean_path() -> None:
    reply = _sized_reply(b"{}", b"429 Too Many", b"retry-after: 7\r\n")
    outs, _, _ = _calls([[reply]], True)
    assert isinstance(outs[0], RateLimited) and outs[0].retry_after_s == 7.0


def test_a_body_past_the_bound_streams_what_came_within_it_then_stops() -> None:
    body = _sse(["x" * 50] * 40)
    outs = _both([[_chunked_reply(body, size=64)]], limit=2000)
    assert outs[0][0] == "ResponseTooLarge" and "max_response_bytes" in str(outs[0][1])
    _, _, lean_tokens = _calls([[_chunked_reply(body, size=64)]], True, limit=2000)
    _, _, plain_tokens = _calls([[_chunked_reply(body, size=64)]], False, limit=2000)
    assert "".join(lean_tokens) == "".join(plain_tokens) and lean_tokens


def test_a_gzipped_answer_goes_through_httpx_decoders() -> None:
    body = gzip.compress(_sse())
    reply = _sized_reply(body, extra=b"content-encoding: gzip\r\n")
    assert _both([[reply]]) == [EXPECTED]


def test_a_json_answer_to_a_streamed_request_is_read_whole() -> None:
    body = json.dumps(
        {
            "choices": [{"message": {"content": "whole"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 2, "completion_tokens": 1},
        }
    ).encode()
    reply = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
    assert _both([[reply % len(body) + body]]) == [("whole", "stop", (2, 1), False)]


def test_a_close_delimited_answer_is_whole_and_its_connection_not_reused() -> None:
    reply = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n" + _sse()
    outs, opened, _ = _calls([[reply], [reply]], True, calls=2)
    assert [_outcome(o) for o in outs] == [EXPECTED, EXPECTED] and opened == 2


def test_on_uvloop_an_answer_reuses_its_connection_and_a_pause_is_a_timeout() -> None:
    """``loomc serve`` runs on uvloop when it is installed: its timers and transports too."""
    reply = _chunked_reply(_sse())
    outs, opened, _ = _calls([[reply], [reply]], True, calls=2, within_s=2.0, uvloop=True)
    assert [_outcome(o) for o in outs] == [EXPECTED, EXPECTED] and opened == 1
    outs, _, _ = _calls([[reply[:400], 3.0, reply[400:]]], True, within_s=0.3, uvloop=True)
    assert isinstance(outs[0], ProviderTimeout)
