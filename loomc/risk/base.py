"""The risk profile the adaptive tiers read, and the profiler interface that produces it.

Escalation is decided locally, before any paid call: a profiler maps the prompt (and the pipeline's
kind hint) to a level, a task kind, named signals and a probability. `when` guards read these as
``risk``, ``risk.kind``, ``risk.signals`` and ``risk.probability``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from loomc.errors import LoomcError

Level = Literal["low", "medium", "high"]
Kind = Literal["general", "code-review", "research"]


class RiskSettingsError(LoomcError, ValueError):
    """A policy's ``risk`` section names something the profiler cannot be built with (an unknown
    release or backend, a threshold outside 0-1): raised when the profiler is built, so a run,
    an eval or a server refuses with one line instead of a traceback from deep inside."""


@dataclass(frozen=True, slots=True)
class RiskProfile:
    level: Level
    kind: Kind = "general"
    signals: tuple[str, ...] = ()
    probability: float | None = None  # P(escalation is warranted); None for rule-only profilers
    reasons: tuple[str, ...] = field(default_factory=tuple)
    profiler: str = "keywords"
    complexity: Level = "low"

    def to_json(self) -> dict[str, object]:
        return {
            "level": self.level,
            "kind": self.kind,
            "signals": list(self.signals),
            "probability": self.probability,
            "reasons": list(self.reasons),
            "profiler": self.profiler,
            "complexity": self.complexity,
        }


@runtime_checkable
class RiskProfiler(Protocol):
    name: str

    def profile(self, prompt: str, pipeline_hint: str | None = None) -> RiskProfile: ...


def tier_for_level(level: str, tiers: Sequence[str]) -> str:
    """The ``auto`` rule shared by ``loomc serve`` and the Studio: low risk runs the cheapest tier
    (the policy's first), high risk the last (the most thorough), medium the default tier
    (``balanced`` when declared, else the middle one)."""
    if level == "low":
        return tiers[0]
    if level == "high":
        return tiers[-1]
    return "balanced" if "balanced" in tiers else tiers[len(tiers) // 2]
