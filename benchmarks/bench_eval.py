"""Eval throughput against a mock provider with a fixed 50 ms latency, at concurrency 1, 8, 32,
128: achieved runs per second against the ideal (concurrency / latency), in the same run.
Run: pytest benchmarks/bench_eval.py --benchmark-only -s"""

from __future__ import annotations

import time
from decimal import Decimal
from pathlib import Path

import anyio
import pytest

from loomc.eval.dataset import Case
from loomc.eval.runner import Job, Journal, run_matrix
from loomc.eval.strategies import Strategy
from loomc.ir.model import Pipeline, StepGraph, StepNode
from loomc.policy.models import MockScript, ProviderConfig, RiskSettings
from loomc.providers.registry import ProviderPool
from loomc.risk.factory import make_profiler
from loomc.units import Budget

LATENCY_MS = 50


def _pipeline() -> Pipeline:
    step = StepNode(
        id="a",
        role="writer",
        worker="w",
        model="mock/m",
        provider="mock",
        provider_type="mock",
        group="g",
        task="t",
        max_tokens=50,
        timeout_ms=5000,
        retries=0,
        credits=Decimal(0),
        p95_ms=None,
        pricing=None,
    )
    return Pipeline(
        name="one",
        tier=None,
        policy="bench",
        instruction="",
        graph=StepGraph({"a": step}),
        answer=("a",),
        budget=Budget(),
        pipeline_budget=Budget(),
        tier_budget=Budget(),
    )


@pytest.mark.parametrize("concurrency", [1, 8, 32, 128])
def test_eval_throughput(benchmark, tmp_path: Path, concurrency: int) -> None:  # type: ignore[no-untyped-def]
    runs = max(16, concurrency * 4)
    pipeline = _pipeline()
    strategy = Strategy("one", "one", None)
    jobs = [Job(Case(id=f"c{i}", prompt=f"p{i}"), strategy, 0, pipeline) for i in range(runs)]
    profiler = make_profiler(RiskSettings())

    def once() -> float:
        journal = Journal(tmp_path / f"j{time.monotonic_ns()}.jsonl")

        async def go() -> None:
            pool = ProviderPool(
                {"mock": ProviderConfig(type="mock", mock=MockScript(latency_ms=LATENCY_MS))}
            )
            async with pool:
                await run_matrix(
                    jobs,
                    policy_pool=pool,
                    profilers={False: profiler, True: profiler},
                    concurrency=concurrency,
                    journal=journal,
                    total=Budget(),
                    include_answers=False,
                )

        start = time.perf_counter()
        anyio.run(go)
        return time.perf_counter() - start

    elapsed = benchmark.pedantic(once, rounds=3, iterations=1)
    achieved = runs / elapsed
    ideal = concurrency / (LATENCY_MS / 1000)
    benchmark.extra_info.update(
        runs=runs, achieved_rps=achieved, ideal_rps=ideal, ratio=achieved / ideal
    )
    print(
        f"\nconcurrency {concurrency}: {achieved:.1f} runs/s vs ideal {ideal:.1f} ({achieved / ideal:.0%})"
    )
