"""A lean HTTP/1.1 transport for ``http://`` upstreams: httpx's client API, no httpcore below it.

Why: at 128 streamed calls in flight, httpx's default transport (httpcore's pool, h11, anyio
sockets, two socket writes per request) was 40-60 % of a streamed run's CPU and of
``loomc serve``'s CPU per request, even sharded (``pool.py``; benchmarks/README, issue 14).
Here a connection is an asyncio protocol: the request leaves in one write, the response head
and its body (sized or chunked) are cut from one buffer, and a kept-alive connection waits in a
per-host stack (the last one returned is the next one used: sequential steps share one
connection). No per-request walk over the pool, no per-read task or cancel scope.

Two ways in: ``handle_async_request`` (httpx's client API: a ``Response`` built over the body)
and ``send`` (the providers' lean path, ``HTTPProvider.exchange``: the request's bytes in, a
``Reply`` out, no httpx ``Request``/``Response`` per call, optionally one deadline for the
whole call). The connection and the body's decoding live in ``connection.py``.

What it does not do, and leaves to httpx's own (sharded) transport: TLS (every ``https://``
URL), proxies (loomc's clients never trust the environment's), HTTP/2, request bodies that are
streams of unknown length, and any event loop but asyncio's. Errors are httpx's exceptions,
as the providers expect them: ``ConnectError``/``ConnectTimeout`` before anything was sent,
``ReadTimeout`` past the read timeout (or the call's deadline), ``RemoteProtocolError`` when the peer closes early or
breaks the protocol. httpx's write and pool timeouts have no counterpart: the request is handed
to the kernel in one write (a peer that never reads it runs into the read timeout), and
connections per host are not capped (the caller's concurrency bounds them: an eval's workers,
a server's requests in flight).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from loomc.providers.connection import MAX_HEAD_BYTES, Connection, ResponseBody, running_loop
from loomc.providers.pool import ShardedTransport

__all__ = ["MAX_HEAD_BYTES", "PlainHTTPTransport", "Reply"]

MAX_IDLE_PER_HOST = 256  # kept-alive connections kept per host; more are closed
KEEPALIVE_S = 30.0  # an idle connection older than this is closed, not reused
_NO_BODY = (204, 304)


class Reply:
    """A response as the lean path gives it: status, raw headers and the body still on its
    connection (``body.take``/``body.wait``); no httpx ``Response`` built unless asked
    (``response``). Closing it returns a connection read to the body's end to the pool."""

    __slots__ = ("body", "headers", "reason", "request", "status_code", "version")

    def __init__(
        self,
        status: int,
        reason: bytes,
        version: bytes,
        headers: list[tuple[bytes, bytes]],
        body: ResponseBody,
    ) -> None:
        self.status_code, self.reason, self.version = status, reason, version
        self.headers, self.body, self.request = headers, body, body.request

    def header(self, name: bytes) -> bytes | None:
        """The first value of header ``name`` (lower case), as sent."""
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None

    def response(self) -> httpx.Response:
        """This reply as httpx's ``Response``, its body still unread (error pages, encoded
        bodies: read through httpx's decoders)."""
        response = httpx.Response(
            self.status_code,
            headers=self.headers,
            stream=self.body,
            extensions={"http_version": self.version, "reason_phrase": self.reason},
        )
        response.request = self.request
        return response


class PlainHTTPTransport(httpx.AsyncBaseTransport):
    """``http://`` on asyncio through lean connections; everything else through ``fallback``
    (httpx's own transport, sharded: ``ShardedTransport(**options)``)."""

    def __init__(self, **fallback_options: Any) -> None:
        self._fallback_options = fallback_options
        self._fallback: ShardedTransport | None = None
        self._idle: dict[tuple[str, int], list[Connection]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self.opened = 0  # connections opened so far (tests and benchmarks read it)

    @property
    def fallback(self) -> ShardedTransport:
        if self._fallback is None:
            self._fallback = ShardedTransport(**self._fallback_options)
        return self._fallback

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        loop = running_loop()
        if url.scheme != "http" or loop is None or "transfer-encoding" in request.headers:
            return await self.fallback.handle_async_request(request)
        body = await request.aread()
        head = [b"%s %s HTTP/1.1\r\n" % (request.method.encode(), url.raw_path)]
        head += [b"%s: %s\r\n" % (name, value) for name, value in request.headers.raw]
        timeouts = request.extensions.get("timeout", {})
        key = (url.host, url.port or 80)
        data = b"".join(head) + b"\r\n" + body
        connect_s, read_s = timeouts.get("connect"), timeouts.get("read")
        reply = await self.send(loop, key, data, request, connect_s, None, read_s)
        return reply.response()

    def lean(self, url: httpx.URL) -> asyncio.AbstractEventLoop | None:
        """The running loop when a request to ``url`` can take ``send`` (plain http on
        asyncio), else None: httpx's client and, below it, the fallback then serve it."""
        if url.scheme != "http":
            return None
        return running_loop()

    async def send(
        self,
        loop: asyncio.AbstractEventLoop,
        key: tuple[str, int],
        data: bytes,
        request: httpx.Request,
        connect_s: float | None,
        deadline: float | None,
        read_s: float | None = None,
    ) -> Reply:
        """Send ``data`` (a whole HTTP/1.1 request) to ``key`` and read the response's head.

        ``request`` is what the errors carry (its URL). ``deadline`` (the loop's clock): every
        wait of the call, the body's included, ends in ``ReadTimeout`` past it, with one
        timer for the call; ``read_s``: each wait's own bound instead (httpx's read timeout).
        A reply whose body is read to its end on a kept-alive connection gives it back to the
        pool when closed; one given up before closes its connection."""
        if loop is not self._loop:  # connections belong to the loop that opened them
            self._drop_idle()
            self._loop = loop
        conn = self._take(key) or await self._connect(loop, key, connect_s, request)
        assert conn.transport is not None
        if deadline is not None:
            conn.arm(deadline)
        conn.transport.write(data)
        try:
            return await self._response(key, conn, request, read_s)
        except BaseException:
            conn.close()
            raise

    async def _response(
        self, key: tuple[str, int], conn: Connection, request: httpx.Request, read: float | None
    ) -> Reply:
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
        connection = transfer = declared = None
        for name, value in headers:  # the last of each counts (as in a dict of them)
            lower = name.lower()
            if lower == b"connection":
                connection = value
            elif lower == b"transfer-encoding":
                transfer = value
            elif lower == b"content-length":
                declared = value
        keep_alive = version == b"HTTP/1.1" and b"close" not in (connection or b"").lower()
        chunked = b"chunked" in (transfer or b"").lower()
        length: int | None = None
        if request.method == "HEAD" or status in _NO_BODY:
            length, chunked = 0, False
        elif not chunked:
            if declared is not None:
                if not declared.isdigit():  # int() would also take "-5", "+5" and "1_0"
                    raise httpx.RemoteProtocolError("malformed Content-Length", request=request)
                length = int(declared)
            else:
                keep_alive = False  # the body ends when the connection does
        body = ResponseBody(self, key, conn, request, length, chunked, keep_alive, read)
        return Reply(status, reason, version, headers, body)

    def _take(self, key: tuple[str, int]) -> Connection | None:
        idle = self._idle.get(key)
        now = time.monotonic()
        while idle:
            conn = idle.pop()
            if conn.reusable and now - conn.idle_since < KEEPALIVE_S:
                return conn
            conn.close()
        return None

    def put_back(self, key: tuple[str, int], conn: Connection) -> None:
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
    ) -> Connection:
        try:
            async with asyncio.timeout(connect_s):
                _, conn = await loop.create_connection(lambda: Connection(loop), *key)
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
