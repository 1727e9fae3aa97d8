"""One httpx pool vs loomc's sharded pool (``loomc.providers.pool``) at high concurrency.

    python benchmarks/bench_pool.py [REQUESTS] [CONCURRENCY] [DELAY_MS]   # 1280 128 50

The upstream (``serve_upstream.py``, streamed answers after DELAY_MS) runs in its own process;
the client sends REQUESTS streamed requests, CONCURRENCY at a time, through an ``httpx.
AsyncClient`` over one ``AsyncHTTPTransport`` (512 connections, 256 kept alive: loomc's pool
before) or over ``ShardedTransport``. The two arms alternate in a shuffled order in each of
the repeats; the figures are the client process's CPU per request and requests per second,
median (min / max), and the ratio of the medians.
"""

from __future__ import annotations

import asyncio
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from loomc.providers.pool import ShardedTransport  # noqa: E402

ONE_POOL = httpx.Limits(max_connections=512, max_keepalive_connections=256, keepalive_expiry=30)
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


async def _arm(port: int, transport: httpx.AsyncBaseTransport, n: int, conc: int) -> list[float]:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}/", transport=transport) as c:
        gate = asyncio.Semaphore(conc)

        async def one() -> None:
            async with gate, c.stream("POST", "v1/chat/completions", json=BODY) as r:
                async for _ in r.aiter_lines():
                    pass

        await asyncio.gather(*(one() for _ in range(conc)))  # connections opened, warm
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.gather(*(one() for _ in range(n)))
        return [(time.process_time() - cpu) / n * 1e3, n / (time.perf_counter() - wall)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _fmt(values: list[float], digits: int) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f} / {max(values):.{digits}f})"


async def main(n: int, conc: int, repeats: int, port: int) -> None:
    arms: dict[str, list[list[float]]] = {"one pool": [], "sharded": []}
    for _ in range(repeats):
        order = list(arms)
        random.shuffle(order)
        for name in order:
            transport: httpx.AsyncBaseTransport = (
                httpx.AsyncHTTPTransport(limits=ONE_POOL, retries=0)
                if name == "one pool"
                else ShardedTransport(retries=0)
            )
            arms[name].append(await _arm(port, transport, n, conc))
    print(f"{n} streamed requests, {conc} in flight, {repeats} repeats: median (min / max)")
    for name, runs in arms.items():
        cpu, rate = [r[0] for r in runs], [r[1] for r in runs]
        print(f"  {name:9} client CPU ms/request {_fmt(cpu, 2)}   requests/s {_fmt(rate, 0)}")
    one = statistics.median(r[0] for r in arms["one pool"])
    sharded = statistics.median(r[0] for r in arms["sharded"])
    print(f"  CPU per request, sharded / one pool: {sharded / one:.2f}")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:4]]
    n, conc, delay = (args + [1280, 128, 50][len(args) :])[:3]
    port = _free_port()
    upstream = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "serve_upstream.py"),
            "--port",
            str(port),
            "--delay-ms",
            str(delay),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        asyncio.run(main(n, conc, 5, port))
    finally:
        upstream.terminate()
