"""One profiler per distinct risk settings per process: ``loomc.run`` without ``profiler=``
reuses it, so the executor's profile cache (keyed by the profiler) and the semantic profiler's
caches serve a repeated prompt instead of starting empty on every run."""

from __future__ import annotations

from pathlib import Path

import loomc
from loomc.api.profiling import policy_profiler
from loomc.exec.schedule import PROFILES
from loomc.policy.models import RiskSettings

ROOT = Path(__file__).resolve().parents[2]


def test_equal_settings_share_one_profiler_and_different_ones_do_not() -> None:
    a = policy_profiler(RiskSettings(profiler="keywords"))
    assert policy_profiler(RiskSettings(profiler="keywords")) is a
    assert policy_profiler(RiskSettings(profiler="keywords", long_prompt_chars=99)) is not a


def test_a_repeated_prompt_is_profiled_once_across_runs() -> None:
    prompt = "Audit the refund flow for a double-spend race, please (policy profiler test)."
    first = loomc.run(prompt, project=ROOT, pipeline="general", tier="balanced")
    hits = PROFILES.hits
    second = loomc.run(prompt, project=ROOT, pipeline="general", tier="balanced")
    assert PROFILES.hits == hits + 1  # the second run's profile came from the cache
    assert first.risk == second.risk
