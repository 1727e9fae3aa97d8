"""One provider's HTTP connection pool, split in shards so that its bookkeeping stays cheap
when an eval or a server keeps a hundred calls in flight.

Why: httpcore's pool walks every connection it holds on each request and on each response
close (``_assign_requests_to_connections``), so with N calls in flight each call costs O(N):
at 128 concurrent streamed calls to a 50 ms loopback upstream, ~13-16 ms of client CPU per
call, most of the CPU of a busy ``loomc serve`` or ``loomc eval`` (the upstream issue:
encode/httpcore#1035, pydantic/httpx2#1169). Sixteen pools of at most 32 connections each
bring it to ~1.4-1.9 ms per call (``benchmarks/bench_pool.py``). Each request goes to the
shard with the fewest requests in flight, the first one on a tie, so sequential calls (one
run's steps) keep reusing one kept-alive connection in shard 0.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx

SHARDS = 16
SHARD_LIMITS = httpx.Limits(max_connections=32, max_keepalive_connections=16, keepalive_expiry=30)


class _Counted(httpx.AsyncByteStream):
    """A response body that tells its shard when it is closed (read to the end or dropped)."""

    def __init__(self, inner: httpx.AsyncByteStream, done: Callable[[], None]) -> None:
        self._inner = inner
        self._done: Callable[[], None] | None = done

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            done, self._done = self._done, None
            if done is not None:
                done()


class ShardedTransport(httpx.AsyncBaseTransport):
    """``shards`` httpx transports, each its own pool, behind one transport."""

    def __init__(self, shards: int = SHARDS, **transport_options: object) -> None:
        self.shards = [
            httpx.AsyncHTTPTransport(limits=SHARD_LIMITS, **transport_options)  # type: ignore[arg-type]
            for _ in range(shards)
        ]
        self.in_flight = [0] * shards

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        counts = self.in_flight
        index = counts.index(min(counts))
        counts[index] += 1

        def done() -> None:
            counts[index] -= 1

        try:
            response = await self.shards[index].handle_async_request(request)
        except BaseException:
            done()
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _Counted(response.stream, done)
        return response

    async def aclose(self) -> None:
        for shard in self.shards:
            await shard.aclose()
