"""One lean HTTP/1.1 connection and the response body read off it (``transport.py`` owns both).

A connection is an asyncio protocol: bytes land in one buffer, one reader waits on them at a
time. A body is cut from that buffer without awaiting anything while the buffer holds it
(``ResponseBody.take``: sized, chunked or to the close); only an empty buffer waits. Both
httpx's ``Response`` (as its byte stream) and the providers' lean reply (``loomc.providers.
lean``) read bodies through the same ``take``.

Timeouts: a wait gives up after its own ``wait_s`` (httpx's read timeout, one timer per wait),
or at the call's deadline (``arm``: one ``loop.call_at`` for the whole call, which wakes the
waiter of the moment). The lean reply uses the deadline alone: the step's timeout bounds the
whole call, so the per-read timer it subsumes is never set.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Protocol, cast

import httpx

MAX_HEAD_BYTES = 64 * 1024  # a response head (or a chunk's size line) longer is an error
_PAUSE_BYTES = 256 * 1024  # unread bytes past which the socket stops being read
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")


class Connection(asyncio.Protocol):
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
        self.timer: asyncio.TimerHandle | None = None  # the armed call's deadline
        self.expired = False  # that deadline passed

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

    # the call's deadline
    def arm(self, deadline: float) -> None:
        """Every wait on this connection ends in ``ReadTimeout`` once the loop's clock passes
        ``deadline`` (until ``disarm``): one timer for the call, not one per read."""
        self.expired = False
        self.timer = self.loop.call_at(deadline, self._expire)

    def disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.expired = False

    def _expire(self) -> None:
        self.timer = None
        self.expired = True
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(TimeoutError())

    # reading
    async def more(self, wait_s: float | None, request: httpx.Request) -> None:
        """Wait for bytes past what the buffer holds (or the end of the connection)."""
        if self.eof:
            raise httpx.RemoteProtocolError("the server closed the connection", request=request)
        if self.expired:
            raise httpx.ReadTimeout("no data from the server in time", request=request)
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
        self.disarm()
        if self.transport is None or self.loop.is_closed():
            return  # a closed loop's sockets are closed when collected
        if running_loop() is self.loop:
            self.transport.close()
        else:  # dropped by a call on another loop (``loomc.run`` starts one per call)
            self.loop.call_soon_threadsafe(self.transport.close)


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop; None under another event loop (trio), where httpx's own
    transport takes over."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class Pool(Protocol):
    """Where a connection read to the end of its body goes back (the transport)."""

    def put_back(self, key: tuple[str, int], conn: Connection) -> None: ...


class ResponseBody(httpx.AsyncByteStream):
    """A response body read from its connection: ``length`` bytes, chunked, or to the close.
    Read to its end on a kept-alive connection, the connection goes back to the pool."""

    def __init__(
        self,
        pool: Pool,
        key: tuple[str, int],
        conn: Connection,
        request: httpx.Request,
        length: int | None,
        chunked: bool,
        keep_alive: bool,
        timeout: float | None,
    ) -> None:
        self.pool, self.key, self.conn, self.request = pool, key, conn, request
        self.length, self.chunked, self.keep_alive = length, chunked, keep_alive
        self.timeout = timeout
        self.complete = length == 0 and not chunked
        self.closed = False
        self._left = 0  # bytes of the current chunk still to come
        self._crlf = False  # a chunk's data ended: its CRLF comes next
        self._trailers = False  # the last chunk came: trailer lines up to a blank one

    def take(self) -> bytes:
        """The body's bytes the buffer holds now (b"" if none), without waiting; sets
        ``complete`` once the body's end is read. A chunked body's framing is consumed as far
        as the buffer goes, so a body whose end has arrived is complete when its last data
        is taken (no wait, and no drain, after the answer's end marker)."""
        buffer = self.conn.buffer
        if self.complete:
            return b""
        if not self.chunked:
            if self.length is None:  # to the close of the connection: EOF is the body's end
                if not buffer:
                    if self.conn.eof:
                        self.complete = True
                    return b""
                return self.conn.take(len(buffer))
            part = self.conn.take(self.length)
            self.length -= len(part)
            self.complete = self.length == 0
            return part
        out: list[bytes] = []
        while True:
            if self._left:
                if not buffer:
                    break
                part = self.conn.take(self._left)
                self._left -= len(part)
                out.append(part)
                if self._left:
                    break
                self._crlf = True
            line = self._buffered_line()
            if line is None:
                break
            if self._crlf:
                self._crlf = False
                if line:
                    raise httpx.RemoteProtocolError(
                        "chunk not followed by CRLF", request=self.request
                    )
            elif self._trailers:
                if not line:  # the blank line after the trailers: the body's end
                    self.complete = True
                    break
            else:
                digits = line.split(b";", 1)[0].strip()
                if not _HEX.fullmatch(digits):  # int() would also take "-1", "0x1f" and "1_0"
                    raise httpx.RemoteProtocolError(
                        "malformed chunk size in the response", request=self.request
                    )
                self._left = int(digits, 16)
                self._trailers = self._left == 0
        return out[0] if len(out) == 1 else b"".join(out)

    def _buffered_line(self) -> bytes | None:
        """The next line if the buffer holds all of it (taken, without its CRLF), else None."""
        buffer = self.conn.buffer
        end = buffer.find(b"\r\n")
        if end >= 0:
            line = bytes(buffer[:end])
            del buffer[: end + 2]
            return line
        if len(buffer) > MAX_HEAD_BYTES:
            raise httpx.RemoteProtocolError("chunk size line too long", request=self.request)
        return None

    async def wait(self) -> None:
        """Wait for more of the body (after ``take`` came back short of its end)."""
        if self.length is None and not self.chunked:
            await self.conn.more(self.timeout, self.request)  # EOF is the body's end
            return
        try:
            await self.conn.more(self.timeout, self.request)
        except httpx.RemoteProtocolError:
            raise httpx.RemoteProtocolError(
                "the server closed the connection before the body's end", request=self.request
            ) from None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        """httpx's byte stream: what each read brought (the chunks of one read together)."""
        while True:
            part = self.take()
            if part:
                yield part
            elif self.complete:
                return
            else:
                await self.wait()

    async def aclose(self) -> None:
        self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        conn = self.conn
        if self.complete and self.keep_alive and conn.reusable:
            conn.disarm()
            self.pool.put_back(self.key, conn)
        else:
            conn.close()
