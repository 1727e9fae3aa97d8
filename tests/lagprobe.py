"""How long the event loop stalls while a coroutine runs: the worst lag of a probe beside it.

Why one helper: "runs off the event loop" is a promise several stages make (the semantic
profiler's first load, a guard whose pattern takes a second) and each test of it needs the same
probe, a task that sleeps 5 ms and records how late it wakes. Run on the loop, the work would
wake it that late; off the loop the probe keeps ticking.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

T = TypeVar("T")
TICK = 0.005


def worst_lag(work: Callable[[], Awaitable[T]]) -> tuple[float, float, T]:
    """Run ``work()`` on a fresh event loop beside the probe: (worst lag in s, seconds ``work``
    took, what it returned)."""

    async def main() -> tuple[float, float, T]:
        lags: list[float] = []
        done = anyio.Event()

        async def probe() -> None:
            while not done.is_set():
                t = time.perf_counter()
                await anyio.sleep(TICK)
                lags.append(time.perf_counter() - t - TICK)

        async with anyio.create_task_group() as tg:
            tg.start_soon(probe)
            await anyio.sleep(0.02)
            start = time.perf_counter()
            result = await work()
            elapsed = time.perf_counter() - start
            done.set()
        return max(lags), elapsed, result

    return anyio.run(main)
