"""What a run settles before its first step, once: the risk profile and how steps are scheduled.

A run whose graph is a chain (each step, in topological order, waits on the one before it: a
direct answer, draft -> review) runs its steps inline, one after the other, as the dependencies
would order them anyway: no task, no event and no extra trip through the event loop per step.
Any other graph gets one task per step, each waiting on its own dependencies, so independent
branches overlap.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence

import anyio

from loomc.ir.model import Pipeline
from loomc.providers.base import estimate_tokens
from loomc.risk.base import RiskProfile, RiskProfiler


@functools.cache
def default_profiler() -> RiskProfiler:
    """The profiler of default risk settings, built once (it compiles its term patterns)."""
    from loomc.policy.models import RiskSettings
    from loomc.risk.factory import make_profiler

    return make_profiler(RiskSettings())


async def profile(profiler: RiskProfiler | None, prompt: str, kind: str) -> RiskProfile:
    """The run's risk profile; a blocking profiler (a forward pass) runs in a worker thread so
    concurrent runs on the event loop never wait on it."""
    chosen = profiler or default_profiler()
    if getattr(chosen, "blocking", False):
        return await anyio.to_thread.run_sync(chosen.profile, prompt, kind)
    return chosen.profile(prompt, kind)


def input_tokens(pipeline: Pipeline, prompt: str) -> int:
    """The estimate checked against the pipeline's input bound before anything is sent."""
    longest_task = max((len(s.task) for s in pipeline.graph.steps()), default=0)
    return estimate_tokens(pipeline.instruction) + estimate_tokens(prompt) + longest_task // 3 + 64


def is_chain(pipeline: Pipeline, order: Sequence[str]) -> bool:
    """Whether every step (in topological order) depends on the step before it."""
    graph = pipeline.graph
    return all(prev in graph.step(sid).dependencies for prev, sid in itertools.pairwise(order))
