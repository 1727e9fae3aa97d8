"""The semantic profiler's decision: a calibrated probability, the keyword view and the cues in,
a ``RiskProfile`` with its level and the reasons behind it out.

Why apart from ``loomc.risk.semantic``: the profiler's job is to get a probability (which stage,
which encoder, numpy or plain Python); what the probability *means* for the balanced guard is
one rule the same for every stage and every release, easier to read and test on its own.

Escalate when the probability reaches the threshold (the lower ``signal_threshold`` when the
keyword rules see a risk signal in the prompt), or when a floor cue fires; then the release's
rules (``loomc.risk.signals.apply_rules``). Below it, the level is ``medium`` or ``low``, chosen
so that the standard balanced guard does not escalate. Pipeline hints keep their meaning:
``code-review`` is always high, ``research`` is research. The reasons name the deciding stage
(``note``), the probability, the keyword signals, the cues and the nearest train prompts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol

from loomc.risk.base import Kind, Level, RiskProfile
from loomc.risk.cues import cues_of, floors_of
from loomc.risk.evaluate import VERBS
from loomc.risk.keywords import KeywordProfiler
from loomc.risk.reference import KNOWN_PIPELINES
from loomc.risk.signals import apply_rules


class Labelled(Protocol):
    """What an explanation reads of a router: its train prompts' ids, labels and levels."""

    @property
    def train_ids(self) -> tuple[str, ...]: ...
    @property
    def train_labels(self) -> tuple[bool, ...]: ...
    @property
    def train_levels(self) -> tuple[str, ...]: ...


def nearest_lines(router: Labelled, idx: Sequence[int], sims: Sequence[float]) -> list[str]:
    """The reasons' lines for the nearest train prompts ``idx`` at similarities ``sims``."""
    return [
        f"nearest: {router.train_ids[i]} "
        f"({'escalate' if router.train_labels[i] else 'direct'}/{router.train_levels[i]}, "
        f"sim {s:.2f})"
        for i, s in zip(idx, sims, strict=True)
    ]


class Limits(NamedTuple):
    """The deciding stage's thresholds (a policy's explicit ones already applied)."""

    threshold: float
    signal_threshold: float
    medium_threshold: float


def decide(
    keywords: KeywordProfiler,
    prompt: str,
    hint: str | None,
    prob: float,
    limits: Limits,
    nearest: list[str],
    note: str = "",
    rules: tuple[str, ...] = (),
    name: str = "semantic",
) -> RiskProfile:
    """The profile of ``prompt`` given its calibrated P(escalate) ``prob`` (see the module doc)."""
    kw = keywords.profile(prompt, hint)
    pipeline = hint if hint in KNOWN_PIPELINES else "general"
    signals = kw.signals
    kw_prompt_high = bool(keywords.signals_of(prompt)) and kw.level == "high"
    limit = limits.signal_threshold if kw_prompt_high else limits.threshold
    floors = floors_of(prompt)
    escalate = prob >= limit or bool(floors)
    ruled: str | None = None
    if rules:
        escalate, ruled = apply_rules(escalate, prompt, rules)
    level: Level
    kind: Kind = kw.kind
    complexity: Level = kw.complexity
    reasons: list[str] = []
    if pipeline == "code-review":
        level, kind, complexity = "high", "code-review", "high"
        reasons.append("code-review pipeline")
    elif pipeline == "research":
        level, kind = ("high" if escalate else "medium"), "research"
        reasons.append("research pipeline")
    elif escalate:
        level = "high"
        if kind == "general":
            complexity = "medium" if complexity == "low" else complexity
    else:
        # Below the threshold: keep the balanced guard from escalating on kind or verbs.
        if kind == "research":
            kind = "general"
        leaning = prob >= limits.medium_threshold or kw.level != "low"
        level = "medium" if leaning and VERBS.search(prompt) is None else "low"
    verdict = "escalate" if escalate else "no escalation"
    if note:
        reasons.append(note)
    if ruled is not None:
        above = ">=" if prob >= limit else "<"
        reasons.append(f"P(escalate)={prob:.2f} {above} {limit:.2f}, but {ruled}")
    elif floors and prob < limit:
        reasons.append(f"P(escalate)={prob:.2f} < {limit:.2f}, but {', '.join(floors)}: escalate")
    else:
        above = ">=" if prob >= limit else "<"
        reasons.append(f"P(escalate)={prob:.2f} {above} {limit:.2f}: {verdict}")
    if signals:
        reasons.append("keyword signals: " + ", ".join(signals))
    cues = cues_of(prompt)
    if cues:
        reasons.append("cues: " + ", ".join(cues))
    reasons.extend(nearest)
    return RiskProfile(
        level=level,
        kind=kind,
        signals=signals,
        probability=prob,
        reasons=tuple(reasons),
        profiler=name,
        complexity=complexity,
    )
