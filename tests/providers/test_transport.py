"""The lean ``http://`` transport (``loomc.providers.transport``) against real TCP servers on
127.0.0.1 that send exactly the bytes each test chooses: sized, chunked and close-delimited
bodies arrive whole however the server splits its writes; kept-alive connections are reused,
closed ones are not; every failure is the httpx exception the providers map (never a hang)."""

from __future__ import annotations

import asyncio
import itertools
import socket
from collections.abc import Awaitable, Callable

import anyio
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.providers.transport import PlainHTTPTransport

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head + await reader.readexactly(length)


def _serve(
    replies: list[list[bytes]], *, close_after: bool = False, stall_s: float = 0.0
) -> Handler:
    """A handler answering each request on a connection with the next reply (a list of writes,
    flushed one by one); the requests it got are kept on ``handler.seen``."""
    seen: list[tuple[int, bytes]] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        port = writer.get_extra_info("peername")[1]
        try:
            while replies:
                request = await _read_request(reader)
                seen.append((port, request))
                if stall_s:
                    await asyncio.sleep(stall_s)
                for part in replies.pop(0):
                    writer.write(part)
                    await writer.drain()
                    await asyncio.sleep(0)
                if close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    handler.seen = seen  # type: ignore[attr-defined]
    return handler


async def _with_server(handler: Handler, body: Callable[[str], Awaitable[object]]) -> object:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        return await body(f"http://127.0.0.1:{port}")
    finally:
        server.close()


def _run(
    handler: Handler, body: Callable[[str], Awaitable[object]], uvloop: bool = False
) -> object:
    return anyio.run(_with_server, handler, body, backend_options={"use_uvloop": uvloop})


def _sized(text: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n%s\r\n%s" % (len(text), extra, text)


def _chunked(parts: list[bytes]) -> bytes:
    body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts if p)
    return b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + body + b"0\r\n\r\n"


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points) if data[a:b]]


@settings(max_examples=40, deadline=None)
@given(
    parts=st.lists(st.binary(min_size=1, max_size=40), min_size=0, max_size=6),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=8),
    chunked=st.booleans(),
)
def test_a_body_arrives_whole_however_the_server_splits_it(
    parts: list[bytes], cuts: list[int], chunked: bool
) -> None:
    text = b"".join(parts)
    reply = _chunked(parts) if chunked else _sized(text)

    async def body(base: str) -> tuple[int, bytes, int]:
        transport = PlainHTTPTransport()
        async with httpx.AsyncClient(base_url=base, transport=transport) as client:
            first = await client.post("/a", json={"n": 1})
            second = await client.post("/b", json={"n": 2})
        assert first.content == second.content
        return first.status_code, first.content, transport.opened

    status, got, opened = _run(_serve([_split(reply, cuts), _split(reply, cuts[::-1])]), body)
    assert (status, got) == (200, text)
    assert opened == 1  # both bodies read to their end: one kept-alive connection


def test_sequential_requests_share_one_connection_and_send_their_body() -> None:
    handler = _serve([[_sized(b"one")], [_sized(b"two")], [_sized(b"three")]])

    async def body(base: str) -> list[bytes]:
        async with httpx.AsyncClient(base_url=base, transport=PlainHTTPTransport()) as client:
            return [(await client.post("/v1/x?q=1", json={"i": i})).content for i in range(3)]

    assert _run(handler, body) == [b"one", b"two", b"three"]
    seen = handler.seen  # type: ignore[attr-defined]
    assert len({port for port, _ in seen}) == 1
    first = seen[0][1]
    assert first.startswith(b"POST /v1/x?q=1 HTTP/1.1\r\n")
    assert b"\r\nhost: 127.0.0.1:" in first.lower() and first.endswith(b'{"i":0}')


@pytest.mark.parametrize("uvloop", [False, True])
def test_a_streamed_body_is_read_as_the_server_writes_it(uvloop: bool) -> None:
    if uvloop:
        pytest.importorskip("uvloop")  # what `loomc serve` runs on when installed
    events = [b"data: %d\n\n" % i for i in range(5)]

    async def body(base: str) -> list[str]:
        async with (
            httpx.AsyncClient(base_url=base, transport=PlainHTTPTransport()) as client,
            client.stream("POST", "/s", json={}) as response,
        ):
            return [line async for line in response.aiter_lines() if line]

    head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
    writes = [head, *(b"%x\r\n%s\r\n" % (len(e), e) for e in events), b"0\r\n\r\n"]
    assert _run(_serve([writes]), body, uvloop) == [f"data: {i}" for i in range(5)]


def test_chunks_that_arrive_together_leave_together_and_never_wait() -> None:
    """A chunked body's chunks that one read brought come out as one piece (an adapter hands a
    read's tokens on as one event); what has arrived leaves before the decoder waits for more:
    the server sends its next write only once the client has the first piece."""
    got_first = asyncio.Event()
    waited_out: list[bool] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
        writer.write(head + b"1\r\na\r\n2\r\nbc\r\n1\r\nd\r\n3\r\nef")  # 3.5 chunks
        await writer.drain()
        try:
            await asyncio.wait_for(got_first.wait(), 5)
        except TimeoutError:
            waited_out.append(True)
        writer.write(b"g\r\n1\r\nh\r\n0\r\n\r\n")
        await writer.drain()
        writer.close()

    async def body(base: str) -> list[bytes]:
        pieces = []
        async with (
            httpx.AsyncClient(base_url=base, transport=PlainHTTPTransport()) as client,
            client.stream("POST", "/s", json={}) as response,
        ):
            async for piece in response.aiter_raw():
                pieces.append(piece)
                got_first.set()
        return pieces

    pieces = _run(handler, body)
    assert not waited_out
    assert pieces == [b"abcdef", b"gh"]


def test_a_connection_close_reply_is_not_reused_and_a_close_delimited_body_is_whole() -> None:
    reply = b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nall of it"
    handler = _serve([[reply], [reply]], close_after=True)

    async def body(base: str) -> tuple[list[bytes], int]:
        transport = PlainHTTPTransport()
        async with httpx.AsyncClient(base_url=base, transport=transport) as client:
            got = [(await client.get("/")).content for _ in range(2)]
        return got, transport.opened

    got, opened = _run(handler, body)
    assert got == [b"all of it"] * 2 and opened == 2


def test_a_body_cut_short_is_a_protocol_error_and_its_connection_is_dropped() -> None:
    handler = _serve(
        [[b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly this"]], close_after=True
    )

    async def body(base: str) -> None:
        async with httpx.AsyncClient(base_url=base, transport=PlainHTTPTransport()) as client:
            with pytest.raises(httpx.RemoteProtocolError):
                await client.get("/")

    _run(handler, body)


def test_no_response_at_all_is_a_protocol_error() -> None:
    handler = _serve([[]], close_after=True)

    async def body(base: str) -> None:
        async with httpx.AsyncClient(base_url=base, transport=PlainHTTPTransport()) as client:
            with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
                await client.get("/")

    _run(handler, body)


@pytest.mark.parametrize(
    "reply",
    [
        b"SPDY/9 200 OK\r\n\r\n",
        b"HTTP/1.1 abc OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: lots\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
        # what int() would take but HTTP does not: a sign, an underscore, a 0x prefix
        b"HTTP/1.1 200 OK\r\ncontent-length: -5\r\n\r\nhello",
        b"HTTP/1.1 200 OK\r\ncontent-length: 1_0\r\n\r\nhellohello",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n-1\r\nx\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n" + b"x-pad: " + b"a" * 70_000,
    ],
)
def test_a_malformed_response_is_a_protocol_error_never_a_hang(reply: bytes) -> None:
    _get_fails(_serve([[reply]]), 5, httpx.RemoteProtocolError)


def test_a_silent_server_is_a_read_timeout() -> None:
    _get_fails(_serve([[_sized(b"late")]], stall_s=2.0), 0.2, httpx.ReadTimeout)


def _get_fails(handler: Handler, timeout_s: float, error: type[Exception]) -> None:
    async def body(base: str) -> None:
        transport = PlainHTTPTransport()
        async with httpx.AsyncClient(base_url=base, transport=transport, timeout=timeout_s) as c:
            with pytest.raises(error):
                await c.get("/")

    _run(handler, body)


def test_nobody_listening_is_a_connect_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there

    async def main() -> None:
        async with httpx.AsyncClient(transport=PlainHTTPTransport()) as client:
            with pytest.raises(httpx.ConnectError):
                await client.get(f"http://127.0.0.1:{port}/")

    anyio.run(main)


def test_a_response_closed_before_its_end_gives_its_connection_up() -> None:
    # 20 bytes declared, 10 sent: the body's end is still to come when the reader stops
    short = b"HTTP/1.1 200 OK\r\ncontent-length: 20\r\n\r\n" + b"a" * 10
    handler = _serve([[short], [_sized(b"next")]])

    async def body(base: str) -> tuple[bytes, int]:
        transport = PlainHTTPTransport()
        async with httpx.AsyncClient(base_url=base, transport=transport) as client:
            async with client.stream("GET", "/") as response:
                async for _part in response.aiter_raw():
                    break  # unread bytes left: this connection cannot carry another request
            got = await client.get("/")
        return got.content, transport.opened

    content, opened = _run(handler, body)
    assert content == b"next" and opened == 2


def test_a_body_whose_end_came_with_its_data_keeps_its_connection() -> None:
    """A chunked body's framing is read as far as the buffer goes: when its last chunk and
    terminator arrived with the data, the reader that stops at the data has read it all, and
    the connection carries the next request."""
    handler = _serve([[_chunked([b"a" * 10, b"b" * 10])], [_sized(b"next")]])

    async def body(base: str) -> tuple[bytes, bytes, int]:
        transport = PlainHTTPTransport()
        async with httpx.AsyncClient(base_url=base, transport=transport) as client:
            async with client.stream("GET", "/") as response:
                first = b""
                async for part in response.aiter_raw():
                    first = part
                    break  # the one read held the whole body, its end included
            got = await client.get("/")
        return first, got.content, transport.opened

    assert _run(handler, body) == (b"a" * 10 + b"b" * 10, b"next", 1)


def test_a_cancelled_call_closes_its_connection_and_the_next_call_works() -> None:
    handler = _serve([[_sized(b"never read")], [_sized(b"fine")]], stall_s=0.5)

    async def body(base: str) -> tuple[bytes, int]:
        transport = PlainHTTPTransport()
        async with httpx.AsyncClient(base_url=base, transport=transport) as client:
            with anyio.move_on_after(0.1):
                await client.get("/")
            got = await client.get("/")
        return got.content, transport.opened

    assert _run(handler, body) == (b"fine", 2)


def test_https_goes_through_httpx_own_transport() -> None:
    transport = PlainHTTPTransport(retries=0)

    async def main() -> None:
        async with httpx.AsyncClient(transport=transport, timeout=2) as client:
            with pytest.raises(httpx.ConnectError):
                await client.get("https://127.0.0.1:9/")

    anyio.run(main)
    assert transport.opened == 0 and transport._fallback is not None
