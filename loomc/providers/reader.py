"""A provider's response body as the OpenAI-compatible adapter reads it: line batches, the
whole text, the drain after the answer's end. Two readers behind one interface:

- ``ReplyReader``: the lean path (plain ``http://`` on asyncio, ``loomc.providers.transport``'s
  ``Reply``): bytes cut from the connection's buffer, no httpx ``Response``, no byte iterators,
  no async generator per call. Why: httpx's per-response layers were ~0.1 ms of a streamed
  run's ~0.5 ms at 128 calls in flight (benchmarks/README, serve12).
- ``ResponseReader``: httpx's ``Response`` through ``loomc.providers.body`` (https, encoded
  bodies, a client holding cookies, any loop but asyncio's).

Both give the same lines, in the same batches (one per network read that completed any), and
refuse a body past ``limit`` the same way; see ``loomc.providers.body``.
"""

from __future__ import annotations

import codecs
from collections.abc import AsyncIterator
from typing import Protocol

import anyio
import httpx

from loomc.providers.base import MalformedResponse
from loomc.providers.body import (
    DRAIN_BYTES,
    DRAIN_S,
    LineSplitter,
    drain,
    read_body,
    read_line_batches,
    too_large,
)
from loomc.providers.transport import Reply


class BodyReader(Protocol):
    content_type: str

    async def batch(self) -> list[str] | None:
        """The lines the next network read completed; None at the body's end."""

    async def text(self) -> str:
        """The rest of the body as text (UTF-8, undecodable bytes replaced)."""

    async def drain(self) -> bool:
        """Read what is left after the answer's end marker (``body.drain``'s bounds)."""


class ResponseReader:
    """httpx's ``Response`` as a ``BodyReader``."""

    def __init__(self, response: httpx.Response, limit: int, provider: str, model: str) -> None:
        self.response, self.limit, self.ids = response, limit, (provider, model)
        self.content_type = response.headers.get("content-type", "")
        self._lines: AsyncIterator[list[str]] | None = None

    async def batch(self) -> list[str] | None:
        if self._lines is None:
            provider, model = self.ids
            self._lines = read_line_batches(
                self.response, self.limit, provider=provider, model=model
            )
        try:
            return await anext(self._lines)
        except StopAsyncIteration:
            return None

    async def text(self) -> str:
        provider, model = self.ids
        return await read_body(self.response, self.limit, provider=provider, model=model)

    async def drain(self) -> bool:
        assert self._lines is not None
        return await drain(self.response, self._lines)


class ReplyReader:
    """The lean ``Reply`` as a ``BodyReader``: each ``batch`` takes what the buffer holds, waits
    only when it holds nothing, and checks the call's deadline (``Connection.arm``) first, so
    a deadline that passed while a sink held the call ends it at the next read."""

    __slots__ = ("_decoder", "_ended", "_error", "_size", "_splitter", "body", "content_type",
                 "ids", "limit")  # fmt: skip

    def __init__(self, reply: Reply, limit: int, provider: str, model: str) -> None:
        self.body, self.limit, self.ids = reply.body, limit, (provider, model)
        self.content_type = (reply.header(b"content-type") or b"").decode("latin-1")
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._splitter = LineSplitter()
        self._size = 0
        self._ended = False
        self._error: MalformedResponse | None = None

    def _check(self) -> None:
        if self._error is not None:
            raise self._error
        if self.body.conn.expired:
            raise httpx.ReadTimeout("no data from the server in time", request=self.body.request)

    async def batch(self) -> list[str] | None:
        self._check()
        body = self.body
        while True:
            part = body.take()
            if part:
                self._size += len(part)
                if self._size > self.limit:
                    # the lines the bytes within the bound completed still go out first
                    within = part[: len(part) - (self._size - self.limit)]
                    lines = self._splitter.feed(self._decoder.decode(within))
                    self._error = too_large(self.limit, *self.ids)
                    if lines:
                        return lines
                    raise self._error
                lines = self._splitter.feed(self._decoder.decode(part))
                if lines:
                    return lines
            elif body.complete:
                if self._ended:
                    return None
                self._ended = True
                last = self._splitter.feed(self._decoder.decode(b"", final=True))
                last += self._splitter.end()
                return last or None
            else:
                await body.wait()

    async def text(self) -> str:
        self._check()
        body = self.body
        parts: list[bytes] = []
        while True:
            part = body.take()
            if part:
                self._size += len(part)
                if self._size > self.limit:
                    raise too_large(self.limit, *self.ids)
                parts.append(part)
            elif body.complete:
                return b"".join(parts).decode("utf-8", errors="replace")
            else:
                await body.wait()

    async def drain(self) -> bool:
        """Nothing to do when the body's end came with the answer (the common case: no cancel
        scope, no wait); otherwise ``body.drain``'s bounded, shielded read, the call's own
        deadline lifted (the answer is complete and paid for)."""
        body = self.body
        taken = len(body.take())
        if body.complete:
            return taken <= DRAIN_BYTES and self._size + taken <= self.limit
        body.conn.disarm()
        try:
            with anyio.move_on_after(DRAIN_S, shield=True):
                while not body.complete:
                    part = body.take()
                    taken += len(part)
                    if taken > DRAIN_BYTES or self._size + taken > self.limit:
                        return False
                    if not part and not body.complete:
                        await body.wait()
                return True
        except httpx.HTTPError:
            return False
        return False
