"""``HTTPProvider.post`` hands its request straight to the transport (no httpx client layers):
against a real TCP server on 127.0.0.1 that records each request's bytes, it sends exactly what
``httpx.AsyncClient.stream`` sends, keeps a cookie the upstream sets as the client would, and a
failure still names where it could not connect."""

from __future__ import annotations

import asyncio
import socket

import anyio
import pytest

from loomc.policy.models import ProviderConfig
from loomc.providers.base import CompletionRequest, ConnectionFailed, Message, register_secret
from loomc.providers.client import request_timeout
from loomc.providers.openai_compat import OpenAICompatProvider

TOKEN = "sk-http-post-test-0123456789"
ANSWER = (
    b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


def _reply(extra: bytes = b"") -> bytes:
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n"
    return head % len(ANSWER) + extra + b"\r\n" + ANSWER


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head + await reader.readexactly(length)


def _provider(base_url: str) -> OpenAICompatProvider:
    cfg = ProviderConfig(
        type="openai-compatible",
        base_url=base_url,
        api_key="env:HTTP_POST_TEST_KEY",
        headers={"X-Team": "loomc"},
        extra_body={"seed": 7},
    )
    return OpenAICompatProvider("up", cfg, env={"HTTP_POST_TEST_KEY": TOKEN})


REQUEST = CompletionRequest(
    model="m-1",
    messages=(Message("system", "be brief"), Message("user", "héllo \u2603")),
    max_tokens=64,
    temperature=0.5,
    timeout_s=10,
)


def _exchange(replies: list[bytes], calls: int, *, httpx_client_too: bool) -> list[bytes]:
    """The bytes of each request the provider sent (``post`` ``calls`` times, then once through
    its httpx client's own ``stream`` when asked), each answered with the next reply."""
    seen: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while replies:
                seen.append(await _read_request(reader))
                writer.write(replies.pop(0))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        provider = _provider(f"http://127.0.0.1:{port}/v1")
        try:
            for _ in range(calls):
                async with provider.post("chat/completions", REQUEST) as response:
                    assert response.status_code == 200
                    assert await response.aread() == ANSWER
            if httpx_client_too:
                client = provider.client
                async with client.stream(
                    "POST",
                    "chat/completions",
                    json=provider.body(REQUEST),
                    timeout=request_timeout(REQUEST, client),
                ) as response:
                    assert await response.aread() == ANSWER
        finally:
            await provider.aclose()
            server.close()

    anyio.run(main)
    return seen


def test_post_sends_the_bytes_httpx_client_sends() -> None:
    ours, theirs = _exchange([_reply(), _reply()], 1, httpx_client_too=True)
    assert ours == theirs
    assert ours.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert f"\r\nauthorization: bearer {TOKEN}\r\n".encode() in ours.lower()
    assert b'"seed":7' in ours and "héllo".encode() in ours


def test_a_cookie_the_upstream_sets_is_sent_on_the_next_call() -> None:
    first, second = _exchange(
        [_reply(b"set-cookie: route=a1; Path=/\r\n"), _reply()], 2, httpx_client_too=False
    )
    assert b"cookie:" not in first.lower()
    assert b"\r\ncookie: route=a1\r\n" in second.lower()


def test_nobody_listening_is_a_connection_failure_naming_the_address() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    register_secret(TOKEN)

    async def main() -> None:
        provider = _provider(f"http://127.0.0.1:{port}/v1")
        try:
            await provider.complete(REQUEST)
        finally:
            await provider.aclose()

    with pytest.raises(ConnectionFailed, match=f"cannot reach 127.0.0.1:{port}"):
        anyio.run(main)
