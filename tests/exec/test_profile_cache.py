"""The executor's risk-profile cache: a repeated prompt is profiled once, per profiler and kind
hint, and the cache stays bounded whatever the prompts."""

from __future__ import annotations

from pathlib import Path

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.exec.executor import execute
from loomc.exec.schedule import PROFILES, ProfileCache
from loomc.policy.models import RiskSettings
from loomc.project import load_project
from loomc.providers.registry import ProviderPool
from loomc.risk.base import RiskProfile
from loomc.risk.factory import make_keywords

ROOT = Path(__file__).resolve().parents[2]
HIGH = "Review this payment webhook handler for double-spend races and missing auth checks."


class Counting:
    """The keyword profiler, counting the prompts it is really asked to profile."""

    name = "keywords"

    def __init__(self) -> None:
        self.inner = make_keywords(RiskSettings())
        self.asked: list[tuple[str, str | None]] = []

    def profile(self, prompt: str, pipeline_hint: str | None = None) -> RiskProfile:
        self.asked.append((prompt, pipeline_hint))
        return self.inner.profile(prompt, pipeline_hint)


def _runs(profiler: Counting, prompts: list[str], pipeline: str = "general") -> list[object]:
    project = load_project(ROOT)
    compiled = project.compile(pipeline, "balanced")

    async def go() -> list[object]:
        async with ProviderPool(project.policy) as pool:
            return [await execute(compiled, p, pool=pool, profiler=profiler) for p in prompts]

    return anyio.run(go)


def test_a_repeated_prompt_is_profiled_once_with_the_same_result() -> None:
    counting = Counting()
    first, second = _runs(counting, [HIGH, HIGH])
    assert counting.asked == [(HIGH, "general")]
    # the cached profile is the one the profiler gave: same escalation, same receipt
    assert first.risk == second.risk == counting.inner.profile(HIGH, "general").to_json()  # type: ignore[attr-defined]
    assert first.calls == second.calls == 2  # type: ignore[attr-defined]
    assert first.receipt_hash == second.receipt_hash  # type: ignore[attr-defined]


def test_profilers_and_prompts_never_share_an_entry() -> None:
    one, other = Counting(), Counting()
    _runs(one, [HIGH, "What is 2 + 2?", HIGH])
    _runs(other, [HIGH])
    assert one.asked == [(HIGH, "general"), ("What is 2 + 2?", "general")]
    assert other.asked == [(HIGH, "general")]  # a new profiler is asked anew


def test_the_kind_hint_is_part_of_the_key() -> None:
    cache, counting = ProfileCache(), Counting()
    low = counting.profile("fix this", "code")
    cache.put(counting, "fix this", "code", low)
    assert cache.get(counting, "fix this", "code") is low
    assert cache.get(counting, "fix this", "general") is None
    assert cache.get(Counting(), "fix this", "code") is None


def test_the_process_cache_is_bounded() -> None:
    assert PROFILES.entries <= 4096 and PROFILES.chars <= 1 << 24


@settings(max_examples=60, deadline=None)
@given(
    prompts=st.lists(st.text(max_size=40), max_size=60),
    entries=st.integers(1, 8),
    chars=st.integers(0, 100),
)
def test_bounded_by_entries_and_characters(prompts: list[str], entries: int, chars: int) -> None:
    counting = Counting()
    cache = ProfileCache(entries=entries, chars=chars, longest=30)
    kept: dict[str, RiskProfile] = {}
    for prompt in prompts:
        risk = RiskProfile(level="low", signals=(prompt[:5],))
        cache.put(counting, prompt, None, risk)
        kept[prompt] = risk
        assert len(cache) <= entries
        assert cache.held_chars <= chars
        held = [p for p in kept if cache.get(counting, p, None) is not None]
        assert cache.held_chars == sum(len(p) for p in held)
        assert all(cache.get(counting, p, None) is kept[p] for p in held)
    if prompts and len(prompts[-1]) <= min(30, chars):
        assert cache.get(counting, prompts[-1], None) is kept[prompts[-1]]  # the latest is kept


def test_the_cache_never_keeps_a_profiler_alive() -> None:
    import gc
    import weakref

    cache, counting = ProfileCache(), Counting()
    cache.put(counting, "hello", None, counting.profile("hello"))
    ref = weakref.ref(counting)
    del counting
    gc.collect()
    assert ref() is None  # a server building a profiler per request never piles them up
    fresh = Counting()  # may reuse the dead one's id: its entry must not answer for it
    assert cache.get(fresh, "hello", None) is None


def test_a_profiler_without_weak_references_is_not_cached() -> None:
    class Slotted:
        __slots__ = ()
        name = "slotted"

        def profile(self, prompt: str, pipeline_hint: str | None = None) -> RiskProfile:
            return RiskProfile(level="low")

    cache, slotted = ProfileCache(), Slotted()
    cache.put(slotted, "hello", None, slotted.profile("hello"))
    assert len(cache) == 0 and cache.get(slotted, "hello", None) is None


def test_an_eval_s_own_cache_is_asked_directly_not_the_process_cache() -> None:
    """The eval's ``PromptCache`` remembers its profiles: the executor leaves the process-wide
    cache alone for it (two caches of the same profile missed twice per new prompt)."""
    from loomc.eval.profiling import PromptCache

    counting = Counting()
    cache = PromptCache(counting)
    entries, hits = len(PROFILES), PROFILES.hits
    prompt = HIGH + " (asked through an eval's cache)"
    first, second = _runs(cache, [prompt, prompt])  # type: ignore[arg-type]
    assert counting.asked == [(prompt, "general")]  # profiled once, by the eval's cache
    assert first.risk == second.risk  # type: ignore[attr-defined]
    assert (len(PROFILES), PROFILES.hits) == (entries, hits)  # never looked up, never filled
