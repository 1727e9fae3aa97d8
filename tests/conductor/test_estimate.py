"""The task profile is estimated from the prompt: each dimension moves with the cues that drive
it (loomc.conductor.estimate), through the policy's real profiler."""

from __future__ import annotations

from pathlib import Path

import pytest

from loomc.conductor.mapping import task_estimate
from loomc.conductor.plan import TaskProfile
from loomc.project import load_project
from loomc.risk.base import RiskProfile, RiskProfiler
from loomc.risk.factory import make_profiler

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def profiler() -> RiskProfiler:
    return make_profiler(load_project(ROOT).policy.risk)


@pytest.fixture(scope="module")
def keywords() -> RiskProfiler:
    """The policy's risk settings with the profiler pinned to the keyword rules (levels, no
    probability: the task's risk is the level's number)."""
    settings = load_project(ROOT).policy.risk
    return make_profiler(settings.model_copy(update={"profiler": "keywords"}))


def est(profiler: RiskProfiler, prompt: str) -> tuple[TaskProfile, dict[str, tuple[str, ...]]]:
    return task_estimate(prompt, profiler.profile(prompt, "general"))


def test_every_dimension_moves_with_its_cues(profiler: RiskProfiler) -> None:
    plain, _ = est(profiler, "Write a short poem about autumn leaves for my class.")
    vague, why = est(profiler, "Maybe do something with the stuff, whatever works best way?")
    assert vague.ambiguity >= plain.ambiguity + 0.2 and "vague" in why["ambiguity"][0]
    exact, _ = est(profiler, "Return only the capital of Poland, exactly one word.")
    assert exact.ambiguity < plain.ambiguity
    sourced, why = est(profiler, "Cite sources and the latest statistics from 2024 on poem use.")
    assert sourced.evidence_need >= plain.evidence_need + 0.2 and why["evidence_need"]
    listed = "Write a poem.\n1. rhyme\n2. four lines\n3. about autumn\n"
    assert est(profiler, listed)[0].complexity > plain.complexity
    code = "Explain this:\n```\ndef f(x):\n    return x * 2\n```"
    assert est(profiler, code)[0].complexity > plain.complexity
    draft, _ = est(profiler, "Brainstorm a rough draft of ideas for a poem.")
    assert draft.reversibility > plain.reversibility
    wipe, why = est(profiler, "Delete all rows in the customers table permanently tonight.")
    assert wipe.reversibility < plain.reversibility and "delete" in why["reversibility"][0]
    assert wipe.consequence >= 0.6 > plain.consequence


def test_risk_and_consequence_come_from_the_profiler(
    profiler: RiskProfiler, keywords: RiskProfiler
) -> None:
    low, why = est(keywords, "What is the capital of Poland? Return only the city.")
    high, _ = est(keywords, "Review this payment webhook for double-spend races and auth bugs.")
    assert (low.risk, high.risk) == (0.2, 0.85) and why["risk"] == ("level low",)
    assert high.consequence == 0.85 and high.reversibility == 0.25  # money: irreversible
    # the policy's own profiler (auto: semantic where installed) gives its probability
    for prompt in ("What is the capital of Poland?", "Review this payment webhook for races."):
        seen = profiler.profile(prompt, "general")
        task, why = task_estimate(prompt, seen)
        if seen.probability is None:
            assert task.risk == {"low": 0.2, "medium": 0.5, "high": 0.85}[seen.level]
        else:
            assert task.risk == round(seen.probability, 4)
            assert why["risk"] == (f"probability {seen.probability:.2f}",)
    calibrated = RiskProfile("medium", probability=0.63, profiler="semantic")
    task, why = task_estimate("Plan the offsite.", calibrated)
    assert task.risk == 0.63 and why["risk"] == ("probability 0.63",)


def test_cues_in_other_languages(profiler: RiskProfiler) -> None:
    for prompt in ("Borrar la base de datos de clientes.", "Bitte alle Daten löschen."):
        assert est(profiler, prompt)[0].reversibility == 0.25


def test_dimensions_stay_in_range(profiler: RiskProfiler) -> None:
    noisy = " ".join(["maybe something stuff whatever etc cite sources latest 2024 design"] * 80)
    task, _ = est(profiler, noisy)
    for name in ("complexity", "consequence", "ambiguity", "evidence_need", "reversibility"):
        assert 0.05 <= getattr(task, name) <= 0.95
