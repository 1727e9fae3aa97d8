"""The provider's sharded connection pool against a real server: concurrent calls spread over
the shards (each pool stays small, so its per-call bookkeeping stays cheap), every closed or
failed call is counted out, and sequential calls keep reusing one connection."""

from __future__ import annotations

import socket
from contextlib import AsyncExitStack

import anyio
import httpx
import pytest
from replay import ReplayServer

from loomc.providers.pool import SHARDS, ShardedTransport

BODY = {"model": "litellm-usage", "messages": [{"role": "user", "content": "hi"}], "stream": True}


def test_concurrent_calls_spread_evenly_and_are_counted_out_when_closed(
    replay: ReplayServer,
) -> None:
    async def main() -> tuple[list[int], list[int], int]:
        transport = ShardedTransport(retries=0)
        async with httpx.AsyncClient(base_url=replay.base_url, transport=transport) as client:
            async with AsyncExitStack() as stack:
                for _ in range(3 * SHARDS + 5):  # held open: each keeps its connection busy
                    await stack.enter_async_context(
                        client.stream("POST", "/v1/chat/completions", json=BODY)
                    )
                held = list(transport.in_flight)
                pools = sum(1 for s in transport.shards if s._pool.connections)
            after = list(transport.in_flight)
        return held, after, pools

    held, after, pools = anyio.run(main)
    assert sum(held) == 3 * SHARDS + 5 and max(held) - min(held) <= 1
    assert after == [0] * SHARDS
    assert pools == SHARDS  # every shard opened connections of its own


def test_sequential_calls_reuse_one_connection_in_the_first_shard(replay: ReplayServer) -> None:
    since = len(replay.requests)

    async def main() -> list[int]:
        transport = ShardedTransport(retries=0)
        async with httpx.AsyncClient(base_url=replay.base_url, transport=transport) as client:
            for _ in range(5):
                async with client.stream("POST", "/v1/chat/completions", json=BODY) as r:
                    async for _ in r.aiter_bytes():
                        pass
            return [len(s._pool.connections) for s in transport.shards]

    per_shard = anyio.run(main)
    assert per_shard[0] == 1 and sum(per_shard) == 1
    assert len({tuple(r["client"]) for r in replay.requests[since:]}) == 1


def test_a_refused_or_unread_call_is_counted_out() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there

    async def main() -> list[int]:
        transport = ShardedTransport(retries=0)
        async with httpx.AsyncClient(transport=transport) as client:
            for _ in range(3):
                with pytest.raises(httpx.ConnectError):
                    await client.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=BODY)
        return list(transport.in_flight)

    assert anyio.run(main) == [0] * SHARDS


def test_a_response_closed_before_its_body_is_read_is_counted_out(replay: ReplayServer) -> None:
    async def main() -> list[int]:
        transport = ShardedTransport(retries=0)
        async with httpx.AsyncClient(base_url=replay.base_url, transport=transport) as client:
            for _ in range(4):
                async with client.stream("POST", "/v1/chat/completions", json=BODY) as r:
                    assert r.status_code == 200  # closed without reading a byte
            return list(transport.in_flight)

    assert anyio.run(main) == [0] * SHARDS
