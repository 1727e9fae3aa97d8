"""A lean HTTP/1.1 transport for ``http://`` upstreams: httpx's client API, no httpcore below it.

Why: at 128 streamed calls in flight, httpx's default transport (httpcore's pool, h11, anyio
sockets, two socket writes per request) was 40-60 % of a streamed run's CPU and of
``loomc serve``'s CPU per request, even sharded (``pool.py``; benchmarks/README, issue 14).
Here a connection is an asyncio protocol: the request leaves in one write, the response head
and its body (sized or chunked) are cut from one buffer, and a kept-alive connection waits in a
per-host stack (the last one returned is the next one used: sequential steps share one
connection). No per-request walk over the pool, no per-read task or cancel scope.

What it does not do, and leaves to httpx's own (sharded) transport: TLS (every ``https://``
URL), proxies (loomc's clients never trust the environment's), HTTP/2, request bodies that are
streams of unknown length, and any event loop but asyncio's. Errors are httpx's exceptions,
as the providers expect them: ``ConnectError``/``ConnectTimeout`` before anything was sent,
``ReadTimeout`` past the read timeout, ``RemoteProtocolError`` when the peer closes early or
breaks the protocol. httpx's write and pool timeouts have no counterpart: the request is handed
to the kernel in one write (a peer that never reads it runs into the read timeout), and
connections per host are not capped (the caller's concurrency bounds them: an eval's workers,
a server's requests in flight).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from typing import Any, cast

import httpx

from loomc.providers.pool import ShardedTransport

MAX_HEAD_BYTES = 64 * 1024  # a response head (status line and headers) longer is an error
MAX_IDLE_PER_HOST = 256  # kept-alive connections kept per host; more are closed
KEEPALIVE_S = 30.0  # an idle connection older than this is closed, not reused
_PAUSE_BYTES = 256 * 1024  # unread bytes past which the socket stops being read
_NO_BODY = (204, 304)
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")


class _Connection(asyncio.Protocol):
    """One TCP connection: bytes in a buffer, one reader waiting on them at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.eof = False  # the peer closed its side (or the connection was lost)
        self.error: BaseException | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.paused = False
        self.idle_since = 0.0

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > _PAUSE_BYTES and self.transport is not None and not self.paused:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.error = exc
        self._wake()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # reading
    async def more(self, wait_s: float | None, request: httpx.Request) -> None:
        """Wait for bytes past what the buffer holds (or the end of the connection)."""
        if self.eof:
            raise httpx.RemoteProtocolError("the server closed the connection", request=request)
        if self.paused and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()
        waiter = self.waiter = self.loop.create_future()
        timer = None if wait_s is None else self.loop.call_later(wait_s, _expire, waiter)
        try:
            await waiter
        except TimeoutError:
            raise httpx.ReadTimeout("no data from the server in time", request=request) from None
        finally:
            self.waiter = None
            if timer is not None:
                timer.cancel()

    def take(self, size: int) -> bytes:
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    @property
    def reusable(self) -> bool:
        return not self.eof and not self.buffer and self.transport is not None

    def close(self) -> None:
        self.eof = True
        if self.transport is None or self.loop.is_closed():
            return  # a closed loop's sockets are closed when collected
        if _asyncio_loop() is self.loop:
            self.transport.close()
        else:  # dropped by a call on another loop (``loomc.run`` starts one per call)
            self.loop.call_soon_threadsafe(self.transport.close)


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


class _Body(httpx.AsyncByteStream):
    """A response body read from its connection: ``length`` bytes, chunked, or to the close.
    Read to its end on a kept-alive connection, the connection goes back to the pool."""

    def __init__(
        self,
        transport: PlainHTTPTransport,
        key: tuple[str, int],
        conn: _Connection,
        request: httpx.Request,
        length: int | None,
        chunked: bool,
        keep_alive: bool,
        timeout: float | None,
    ) -> None:
        self.owner, self.key, self.conn, self.request = transport, key, conn, request
        self.length, self.chunked, self.keep_alive = length, chunked, keep_alive
        self.timeout = timeout
        self.complete = length == 0 and not chunked
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.chunked:
            async for part in self._chunks():
                yield part
        elif self.length is not None:
            async for part in self._exactly(self.length):
                yield part
        else:  # to the close of the connection
            while True:
                if self.conn.buffer:
                    yield self.conn.take(len(self.conn.buffer))
                elif self.conn.eof:
                    break
                else:
                    await self.conn.more(self.timeout, self.request)  # EOF is the body's end
        self.complete = True

    async def _exactly(self, size: int) -> AsyncIterator[bytes]:
        """The next ``size`` bytes, in the pieces they arrive in."""
        while size:
            if not self.conn.buffer:
                await self._more()
            part = self.conn.take(size)
            size -= len(part)
            yield part

    async def _more(self) -> None:
        try:
            await self.conn.more(self.timeout, self.request)
        except httpx.RemoteProtocolError:
            raise httpx.RemoteProtocolError(
                "the server closed the connection before the body's end", request=self.request
            ) from None

    async def _line(self) -> bytes:
        while True:
            line = self._buffered_line()
            if line is not None:
                return line
            await self._more()

    def _buffered_line(self) -> bytes | None:
        """The next line if the buffer holds all of it (taken, without its CRLF), else None."""
        end = self.conn.buffer.find(b"\r\n")
        if end >= 0:
            return self.conn.take(end + 2)[:-2]
        if len(self.conn.buffer) > MAX_HEAD_BYTES:
            raise httpx.RemoteProtocolError("chunk size line too long", request=self.request)
        return None

    async def _chunks(self) -> AsyncIterator[bytes]:
        """The chunked body's data, as much of it as has arrived in each piece: the chunks one
        socket read brought come out together (a server flushing a token per chunk has a
        burst of them land in one read; the adapter then hands them on as one event), and
        whatever is here leaves before the decoder waits for more, so nothing is delayed."""
        out: list[bytes] = []
        while True:
            line = self._buffered_line()
            if line is None:
                if out:
                    yield b"".join(out)
                    out = []
                line = await self._line()
            digits = line.split(b";", 1)[0].strip()
            if not _HEX.fullmatch(digits):  # int() would also take "-1", "0x1f" and "1_0"
                raise httpx.RemoteProtocolError(
                    "malformed chunk size in the response", request=self.request
                )
            size = int(digits, 16)
            if size == 0:
                if out:
                    yield b"".join(out)
                while await self._line():  # trailers, up to the blank line
                    pass
                return
            while size:
                if not self.conn.buffer:
                    if out:
                        yield b"".join(out)
                        out = []
                    await self._more()
                part = self.conn.take(size)
                size -= len(part)
                out.append(part)
            end = self._buffered_line()
            if end is None:
                if out:
                    yield b"".join(out)
                    out = []
                end = await self._line()
            if end:
                raise httpx.RemoteProtocolError("chunk not followed by CRLF", request=self.request)

    async def aclose(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.complete and self.keep_alive and self.conn.reusable:
            self.owner.put_back(self.key, self.conn)
        else:
            self.conn.close()


class PlainHTTPTransport(httpx.AsyncBaseTransport):
    """``http://`` on asyncio through lean connections; everything else through ``fallback``
    (httpx's own transport, sharded: ``ShardedTransport(**options)``)."""

    def __init__(self, **fallback_options: Any) -> None:
        self._fallback_options = fallback_options
        self._fallback: ShardedTransport | None = None
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self.opened = 0  # connections opened so far (tests and benchmarks read it)

    @property
    def fallback(self) -> ShardedTransport:
        if self._fallback is None:
            self._fallback = ShardedTransport(**self._fallback_options)
        return self._fallback

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        loop = _asyncio_loop()
        if url.scheme != "http" or loop is None or "transfer-encoding" in request.headers:
            return await self.fallback.handle_async_request(request)
        if loop is not self._loop:  # connections belong to the loop that opened them
            self._drop_idle()
            self._loop = loop
        timeouts = request.extensions.get("timeout", {})
        key = (url.host, url.port or 80)
        body = await request.aread()
        head = [b"%s %s HTTP/1.1\r\n" % (request.method.encode(), url.raw_path)]
        head += [b"%s: %s\r\n" % (name, value) for name, value in request.headers.raw]
        conn = self._take(key) or await self._connect(loop, key, timeouts.get("connect"), request)
        assert conn.transport is not None
        conn.transport.write(b"".join(head) + b"\r\n" + body)
        read = timeouts.get("read")
        try:
            return await self._response(key, conn, request, read)
        except BaseException:
            conn.close()
            raise

    async def _response(
        self, key: tuple[str, int], conn: _Connection, request: httpx.Request, read: float | None
    ) -> httpx.Response:
        while True:
            end = conn.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(conn.buffer) > MAX_HEAD_BYTES:
                    raise httpx.RemoteProtocolError("response head too long", request=request)
                try:
                    await conn.more(read, request)
                except httpx.RemoteProtocolError:
                    raise httpx.RemoteProtocolError(
                        "the server disconnected without sending a response", request=request
                    ) from None
                continue
            status, reason, version, headers = _head(conn.take(end + 4), request)
            if 100 <= status < 200 and status != 101:
                continue  # an interim response (100 Continue): the real one follows
            break
        values = {name.lower(): value for name, value in headers}
        connection = values.get(b"connection", b"").lower()
        keep_alive = version == b"HTTP/1.1" and b"close" not in connection
        chunked = b"chunked" in values.get(b"transfer-encoding", b"").lower()
        length: int | None = None
        if request.method == "HEAD" or status in _NO_BODY:
            length, chunked = 0, False
        elif not chunked:
            declared = values.get(b"content-length")
            if declared is not None:
                if not declared.isdigit():  # int() would also take "-5", "+5" and "1_0"
                    raise httpx.RemoteProtocolError("malformed Content-Length", request=request)
                length = int(declared)
            else:
                keep_alive = False  # the body ends when the connection does
        stream = _Body(self, key, conn, request, length, chunked, keep_alive, read)
        return httpx.Response(
            status,
            headers=headers,
            stream=stream,
            extensions={"http_version": version, "reason_phrase": reason},
        )

    def _take(self, key: tuple[str, int]) -> _Connection | None:
        idle = self._idle.get(key)
        now = time.monotonic()
        while idle:
            conn = idle.pop()
            if conn.reusable and now - conn.idle_since < KEEPALIVE_S:
                return conn
            conn.close()
        return None

    def put_back(self, key: tuple[str, int], conn: _Connection) -> None:
        idle = self._idle.setdefault(key, [])
        if len(idle) >= MAX_IDLE_PER_HOST or conn.loop is not self._loop:
            conn.close()
            return
        conn.idle_since = time.monotonic()
        idle.append(conn)

    async def _connect(
        self,
        loop: asyncio.AbstractEventLoop,
        key: tuple[str, int],
        connect_s: float | None,
        request: httpx.Request,
    ) -> _Connection:
        try:
            async with asyncio.timeout(connect_s):
                _, conn = await loop.create_connection(lambda: _Connection(loop), *key)
        except TimeoutError:
            raise httpx.ConnectTimeout("connecting took too long", request=request) from None
        except OSError as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from None
        self.opened += 1
        return conn

    def _drop_idle(self) -> None:
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()

    async def aclose(self) -> None:
        self._drop_idle()
        if self._fallback is not None:
            await self._fallback.aclose()


def _asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop; None under another event loop (trio), where httpx's own
    transport takes over."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _head(
    data: bytes, request: httpx.Request
) -> tuple[int, bytes, bytes, list[tuple[bytes, bytes]]]:
    lines = data[:-4].split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise httpx.RemoteProtocolError("malformed response status line", request=request)
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep or not name or name != name.strip():
            raise httpx.RemoteProtocolError("malformed response header", request=request)
        headers.append((name, value.strip()))
    return int(parts[1]), parts[2] if len(parts) > 2 else b"", parts[0], headers
