"""The executor's own overhead per step over real HTTP, against a zero-latency local server.

The baseline is a plain httpx streaming request to the same server in the same run; loomc's
1-step and 4-step runs (OpenAI-compatible adapter, ledger, guards, events) are reported as
overhead per step = (run time − steps × baseline) / steps.
Run: pytest benchmarks/bench_executor.py --benchmark-only -s
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import anyio
import httpx
import pytest

from loomc.exec.executor import execute
from loomc.ir.model import Pipeline, StepGraph, StepNode
from loomc.policy.models import ProviderConfig
from loomc.providers.registry import ProviderPool
from loomc.units import Budget

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "providers"))
from replay import ReplayServer

ROUNDS = 30
_baseline: dict[str, float] = {}


@pytest.fixture(scope="module")
def server() -> Iterator[ReplayServer]:
    srv = ReplayServer().start()
    yield srv
    srv.stop()


def _pipeline(steps: int) -> Pipeline:
    nodes = {}
    prev: tuple[str, ...] = ()
    for i in range(steps):
        sid = f"s{i}"
        nodes[sid] = StepNode(
            id=sid,
            role="writer",
            worker="w",
            model="gw/zero",
            provider="gw",
            provider_type="openai-compatible",
            group="g",
            task="t",
            max_tokens=50,
            timeout_ms=5000,
            retries=0,
            credits=Decimal(1),
            p95_ms=None,
            pricing=None,
            sees=prev,
        )
        prev = (sid,)
    return Pipeline(
        name=f"p{steps}",
        tier=None,
        policy="bench",
        instruction="",
        graph=StepGraph(nodes),
        answer=(f"s{steps - 1}",),
        budget=Budget(calls=steps),
        pipeline_budget=Budget(),
        tier_budget=Budget(),
    )


def _time(fn: object, rounds: int = ROUNDS) -> float:
    async def go() -> float:
        start = time.perf_counter()
        for _ in range(rounds):
            await fn()  # type: ignore[operator]
        return (time.perf_counter() - start) / rounds

    return anyio.run(go)


def _plain(server: ReplayServer, steps: int) -> float:
    """One client per run (as loomc opens one pool per run), `steps` sequential requests."""
    body = {"model": "zero", "stream": True, "messages": [{"role": "user", "content": "hello"}]}

    async def once() -> None:
        async with httpx.AsyncClient(base_url=server.base_url) as client:
            for _ in range(steps):
                async with client.stream("POST", "/v1/chat/completions", json=body) as response:
                    async for _line in response.aiter_lines():
                        pass

    return _time(once)


@pytest.mark.parametrize("steps", [1, 4])
def test_plain_httpx(benchmark, server: ReplayServer, steps: int) -> None:  # type: ignore[no-untyped-def]
    per_run = benchmark.pedantic(lambda: _plain(server, steps), rounds=3, iterations=1)
    _baseline[f"plain{steps}"] = per_run
    benchmark.extra_info.update(steps=steps, per_run_ms=per_run * 1000)


@pytest.mark.parametrize("steps", [1, 4])
def test_executor_overhead(benchmark, server: ReplayServer, steps: int) -> None:  # type: ignore[no-untyped-def]
    pipeline = _pipeline(steps)
    cfg = {"gw": ProviderConfig(type="openai-compatible", base_url=f"{server.base_url}/v1")}

    def run_all() -> float:
        async def once() -> None:
            async with ProviderPool(cfg) as pool:
                result = await execute(pipeline, "hello", pool=pool)
            assert result.calls == steps

        return _time(once)

    per_run = benchmark.pedantic(run_all, rounds=3, iterations=1)
    baseline = _baseline.get(f"plain{steps}") or _plain(server, steps)
    overhead = (per_run - baseline) / steps
    benchmark.extra_info.update(
        steps=steps,
        per_run_ms=per_run * 1000,
        plain_httpx_ms=baseline * 1000,
        overhead_per_step_ms=overhead * 1000,
        ratio_vs_plain=per_run / baseline,
    )
    print(
        f"\n{steps}-step: loomc {per_run * 1000:.2f} ms, plain httpx {baseline * 1000:.2f} ms, "
        f"overhead {overhead * 1000:.2f} ms/step ({per_run / baseline:.2f}x)"
    )
