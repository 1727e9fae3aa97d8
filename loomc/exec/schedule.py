"""What a run settles before its first step, once: the risk profile and how steps are scheduled.

The risk profile is a function of the profiler, the prompt and the pipeline's kind hint alone
(``RiskProfile`` is frozen), and the same prompt comes back often (a chat client retrying, an
eval's strategies and iterations, a server's repeated system prompts), so the profiles of the
last prompts are kept in a small bounded cache: a repeated prompt costs a dict lookup instead of
a keyword scan (~0.1 ms) or the semantic profiler's features and kNN (~2 ms of CPU).

A run whose graph is a chain (each step, in topological order, waits on the one before it: a
direct answer, draft -> review) runs its steps inline, one after the other, as the dependencies
would order them anyway: no task, no event and no extra trip through the event loop per step.
Any other graph gets one task per step, each waiting on its own dependencies, so independent
branches overlap.
"""

from __future__ import annotations

import functools
import itertools
import threading
import weakref
from collections import OrderedDict
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


class ProfileCache:
    """The last ``entries`` risk profiles by (profiler, prompt, kind hint), least recently used
    out first. Bounded twice so memory stays flat whatever the prompts: by entries and by the
    characters of the prompts it holds (a prompt longer than ``longest`` is never kept). The
    profiler is part of the key by identity, checked through a weak reference: two profilers
    never share a profile (an id reused after a profiler died finds its reference dead), and
    the cache never keeps a profiler (and its weights) alive. A profiler that cannot be weakly
    referenced is not cached."""

    def __init__(self, entries: int = 1024, chars: int = 1 << 22, longest: int = 1 << 16) -> None:
        self.entries, self.chars, self.longest = entries, chars, longest
        self._held = 0  # characters of the prompts held
        self.hits = 0  # profiles served from the cache, for tests and diagnostics
        self._lock = threading.Lock()  # event loops in other threads (serve, Studio) share it
        self._seen: OrderedDict[
            tuple[int, str, str | None], tuple[weakref.ref[RiskProfiler], RiskProfile]
        ]
        self._seen = OrderedDict()

    def __len__(self) -> int:
        return len(self._seen)

    @property
    def held_chars(self) -> int:
        return self._held

    def get(self, profiler: RiskProfiler, prompt: str, kind: str | None) -> RiskProfile | None:
        key = (id(profiler), prompt, kind)
        with self._lock:
            found = self._seen.get(key)
            if found is None or found[0]() is not profiler:
                return None
            self._seen.move_to_end(key)
            self.hits += 1
            return found[1]

    def put(self, profiler: RiskProfiler, prompt: str, kind: str | None, risk: RiskProfile) -> None:
        if len(prompt) > self.longest:
            return
        try:
            ref = weakref.ref(profiler)
        except TypeError:  # no __weakref__ slot: never cached
            return
        key = (id(profiler), prompt, kind)
        with self._lock:
            if self._seen.pop(key, None) is not None:
                self._held -= len(prompt)
            self._seen[key] = (ref, risk)
            self._held += len(prompt)
            while len(self._seen) > self.entries or self._held > self.chars:
                (_, oldest, _), _ = self._seen.popitem(last=False)
                self._held -= len(oldest)

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()
            self._held = 0


PROFILES = ProfileCache()  # one per process: runs on the event loop's thread read and fill it


async def profile(profiler: RiskProfiler | None, prompt: str, kind: str) -> RiskProfile:
    """The run's risk profile, from ``PROFILES`` when this profiler saw the prompt lately; a
    blocking profiler (a forward pass) runs in a worker thread so concurrent runs on the event
    loop never wait on it."""
    chosen = profiler or default_profiler()
    if getattr(chosen, "remembers", False):  # it keeps its own profiles (an eval's cache)
        return chosen.profile(prompt, kind)
    found = PROFILES.get(chosen, prompt, kind)
    if found is not None:
        return found
    if getattr(chosen, "blocking", False):
        risk = await anyio.to_thread.run_sync(chosen.profile, prompt, kind)
    else:
        risk = chosen.profile(prompt, kind)
    PROFILES.put(chosen, prompt, kind, risk)
    return risk


def input_tokens(pipeline: Pipeline, prompt: str) -> int:
    """The estimate checked against the pipeline's input bound before anything is sent."""
    longest_task = max((len(s.task) for s in pipeline.graph.steps()), default=0)
    return estimate_tokens(pipeline.instruction) + estimate_tokens(prompt) + longest_task // 3 + 64


def is_chain(pipeline: Pipeline, order: Sequence[str]) -> bool:
    """Whether every step (in topological order) depends on the step before it."""
    graph = pipeline.graph
    return all(prev in graph.step(sid).dependencies for prev, sid in itertools.pairwise(order))
