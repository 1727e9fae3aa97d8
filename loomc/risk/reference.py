"""Exact port of the reference runtime's task assessment (CONDUCTOR-V2 §7.2), bugs included.

This is the compatibility baseline: its misses (stems behind a trailing ``\\b``, plurals) are
reproduced on purpose so routing can be compared against what the reference actually does.
"""

from __future__ import annotations

import re

from loomc.risk.base import Kind, Level, RiskProfile
from loomc.risk.prescan import Prescanned

REFERENCE_SIGNALS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "security",
        (
            "security",
            "vulnerab",
            "exploit",
            "attack",
            "ssrf",
            "xss",
            "csrf",
            "injection",
            "secret",
            "credential",
        ),
    ),
    (
        "identity",
        ("auth", "authorization", "permission", "tenant", "access control", "token", "session"),
    ),
    (
        "money",
        ("billing", "payment", "credit", "wallet", "spend", "refund", "invoice", "double-spend"),
    ),
    ("privacy", ("privacy", "pii", "personal data", "retention", "redact", "data leak")),
    ("concurrency", ("race", "concurren", "idempot", "replay", "transaction", "atomic")),
    (
        "production-code",
        ("api", "database", "migration", "deploy", "production", "code review", "github", "repo"),
    ),
)

# re.ASCII makes \b an ASCII word boundary, matching JS regex semantics. Each is compiled for
# the first text holding one of its words (every run imports this module: the keyword rules use
# its helpers, and few runs use these patterns).
_SIGNAL_RES = tuple(
    (name, Prescanned(r"\b(" + "|".join(alts) + r")\b", re.ASCII, alts))
    for name, alts in REFERENCE_SIGNALS
)
_RESEARCH_WORDS = ("research", "paper", "benchmark", "evidence", "study", "compare")
_RESEARCH_RE = Prescanned(r"\b(" + "|".join(_RESEARCH_WORDS) + r")\b", re.ASCII, _RESEARCH_WORDS)
KNOWN_PIPELINES = ("general", "research", "code-review")
LONG_PROMPT_UNITS = 180


def js_length(text: str) -> int:
    """JS ``String.length``: UTF-16 code units, so astral characters count twice."""
    return len(text.encode("utf-16-le")) // 2


class ReferenceProfiler:
    """The reference keyword rules, verbatim."""

    name = "reference"

    def profile(self, prompt: str, pipeline_hint: str | None = None) -> RiskProfile:
        pipeline = pipeline_hint if pipeline_hint in KNOWN_PIPELINES else "general"
        text = (pipeline + "\n" + prompt).lower()
        signals = tuple(name for name, rx in _SIGNAL_RES if rx.search(text))
        research = pipeline == "research" or _RESEARCH_RE.search(text) is not None
        kind: Kind
        complexity: Level
        level: Level
        if pipeline == "code-review" or signals:
            kind, complexity, level = "code-review", "high", "high"
            reason = "risk signals: " + ", ".join(signals) if signals else "code-review pipeline"
        elif research:
            kind, complexity, level = "research", "medium", "medium"
            reason = "research task"
        elif js_length(prompt) < LONG_PROMPT_UNITS:
            kind, complexity, level = "general", "low", "low"
            reason = "short general prompt"
        else:
            kind, complexity, level = "general", "medium", "medium"
            reason = "long general prompt"
        return RiskProfile(
            level=level,
            kind=kind,
            signals=signals,
            probability=None,
            reasons=(reason,),
            profiler=self.name,
            complexity=complexity,
        )
