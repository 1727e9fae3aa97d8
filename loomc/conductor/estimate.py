"""The task profile a planner reads, estimated from the prompt and its risk profile.

The planners' outcome model reads six numbers per task. None of them may be a constant: a plan
is only as good as the profile it was chosen for. Each is a base from the risk profiler's
verdict (level, probability, kind, complexity, named signals), moved by cues read from the
prompt itself, clipped to [0.05, 0.95] and rounded to 4 places. `drivers` names every cue that
moved a dimension, so a receipt can say why a plan was chosen.

| dimension | base (profiler) | moved by (prompt) |
|---|---|---|
| risk | level → 0.2 / 0.5 / 0.85, or the calibrated probability | — (the profiler owns risk) |
| consequence | 0.85 with a high-consequence signal (security, identity, money, privacy, safety, legal), else the risk base | +0.15 (to ≥ 0.6) for an irreversible action |
| complexity | profiler complexity → 0.25 / 0.5 / 0.8 | +0.1 over 300 tokens, +0.1 more over 1,200; +0.1 for ≥ 3 listed requirements; +0.1 for code; +0.05 per design/multi-step cue (≤ 0.15) |
| ambiguity | 0.5 research, else 0.3 | +0.1 per vague cue (≤ 0.3); +0.1 for an ask under 6 words; −0.1 for an explicit output format or exact constraint |
| evidence need | research 0.75, code review 0.6, else 0.35 | +0.1 per evidence cue — sources, citations, current facts, figures, verification (≤ 0.3) |
| reversibility | 0.25 with an irreversible signal (money, production code, concurrency, safety), else 0.6 | 0.25 for an irreversible action verb; 0.8 for a draft/brainstorm cue with none |

Cue lists cover English plus the commonest Spanish, German and French forms; they are
deliberately short — the profiler carries the semantics, the cues only shape a profile it has
already placed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from loomc.risk.base import RiskProfile

LEVEL_RISK = {"low": 0.2, "medium": 0.5, "high": 0.85}
LEVEL_COMPLEXITY = {"low": 0.25, "medium": 0.5, "high": 0.8}
HIGH_CONSEQUENCE_SIGNALS = frozenset(
    {"security", "identity", "money", "privacy", "safety", "legal"}
)
IRREVERSIBLE_SIGNALS = frozenset({"money", "production-code", "concurrency", "safety"})
KIND_EVIDENCE = {"research": 0.75, "code-review": 0.6, "general": 0.35}


def _rx(*terms: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w-])(?:" + "|".join(terms) + r")(?![\w-])", re.IGNORECASE)


IRREVERSIBLE = _rx(
    r"delet\w*",
    r"drop(?:ping)? (?:the |a )?(?:table|database|column|index)",
    r"rm -rf",
    r"truncat\w*",
    r"wipe\w*",
    r"purg\w*",
    r"overwrit\w*",
    r"force[- ]push\w*",
    r"wire (?:the |a )?(?:money|funds|payment)",
    r"transfer\w* (?:the |a |all )?(?:money|funds|\$?\d[\d,.]*)",
    r"deploy\w* to prod\w*",
    r"in production",
    r"permanent(?:ly)?",
    r"irreversibl\w*",
    r"borrar",
    r"eliminar",
    r"löschen",
    r"supprimer",
)
DRAFT = _rx(r"draft\w*", r"brainstorm\w*", r"ideas?", r"suggest\w*", r"rough", r"sketch\w*")
VAGUE = _rx(
    r"something",
    r"somehow",
    r"whatever",
    r"maybe",
    r"kind of",
    r"sort of",
    r"best way",
    r"should i",
    r"any (?:ideas|thoughts|tips)",
    r"etc",
    r"stuff",
    r"algo",
    r"irgendwie",
    r"quelque chose",
)
EXPLICIT = _rx(
    r"return only",
    r"only (?:the|a|one)",
    r"exactly",
    r"in (?:\d+|one|two|three) (?:words|sentences|lines|bullets)",
    r"as (?:json|yaml|csv|a table|a list)",
    r"format",
    r"must",
)
EVIDENCE = _rx(
    r"cit\w*",
    r"sources?",
    r"references?",
    r"evidence",
    r"according to",
    r"latest",
    r"current(?:ly)?",
    r"statistic\w*",
    r"stud(?:y|ies)",
    r"verif\w*",
    r"fact[- ]check\w*",
    r"how many",
    r"when did",
    r"(?:19|20)\d\d",
    r"fuentes?",
    r"quellen?",
)
DESIGN = _rx(
    r"design\w*",
    r"architect\w*",
    r"step[- ]by[- ]step",
    r"migrat\w*",
    r"refactor\w*",
    r"trade-?offs?",
    r"end[- ]to[- ]end",
    r"compare",
)
# Both read a whole prompt, so each line is tried once (2026-12-06). A leading `^\s*` read
# across newlines, so every line of a long run of blank lines rescanned the rest of the run
# ("\n" * 80,000 took ~50 s in CODE, "\n" * 40,000 ~40 s in LISTED): it now stops at the end
# of its line, which finds the same bullets (a match that began on a blank line above now
# begins on the bullet's own line and ends where it did, so `findall` counts the same) and the
# same imports. And every SELECT of a line of them rescanned the rest of the line for a FROM
# ("SELECT " * 11,500, ~11 s): only the first SELECT of each line is tried now, which finds a
# FROM wherever any later one would. Old and new agree (tests/conductor/test_estimate_bounded.py).
LISTED = re.compile(r"^[^\S\n]*(?:[-*•]|\d+[.)])\s+\S", re.MULTILINE)
CODE = re.compile(
    r"```|^(?: {4}|\t)\S|\bdef \w+\(|\bclass \w+\s*[:({]|\bfunction\s*\w*\(|=>"
    r"|^[^\S\n]*(?:import|from) [\w.]+|^(?>.*?\bSELECT\b).+\bFROM\b|[{};]\s*$",
    re.MULTILINE,
)


@dataclass(frozen=True)
class Estimate:
    risk: float
    consequence: float
    complexity: float
    ambiguity: float
    evidence_need: float
    reversibility: float
    drivers: dict[str, tuple[str, ...]]


def _clip(x: float) -> float:
    return round(max(0.05, min(0.95, x)), 4)


def _hits(rx: re.Pattern[str], text: str) -> list[str]:
    """The distinct matched words, lower-cased, in the order they first appear. A dict, not a
    list, holds them: each match was looked for in the list of those seen, so distinct words
    were quadratic (80,000 characters of `delet00001 delet00002 ...`: 0.52 s, now 6 ms)."""
    seen: dict[str, None] = {}
    for m in rx.finditer(text):
        seen.setdefault(m.group(0).lower(), None)
    return list(seen)


def estimate(prompt: str, risk: RiskProfile, tokens: int) -> Estimate:
    """The six task numbers of one prompt; see the module docstring for the rules."""
    drivers: dict[str, list[str]] = {}

    def note(dim: str, why: str) -> None:
        drivers.setdefault(dim, []).append(why)

    base_risk = LEVEL_RISK[risk.level]
    if risk.probability is not None:  # a calibrated profiler: its number, not the level's
        base_risk = max(0.0, min(1.0, float(risk.probability)))
        note("risk", f"probability {base_risk:.2f}")
    else:
        note("risk", f"level {risk.level}")

    irreversible_signals = sorted(IRREVERSIBLE_SIGNALS.intersection(risk.signals))
    irreversible_words = _hits(IRREVERSIBLE, prompt)
    consequential = sorted(HIGH_CONSEQUENCE_SIGNALS.intersection(risk.signals))
    consequence = 0.85 if consequential else LEVEL_RISK[risk.level]
    if consequential:
        note("consequence", "signals " + ", ".join(consequential))
    if irreversible_words:
        consequence = max(consequence + 0.15, 0.6) if not consequential else consequence
        note("consequence", "irreversible action: " + ", ".join(irreversible_words[:3]))

    complexity = LEVEL_COMPLEXITY[risk.complexity]
    if tokens > 300:
        complexity += 0.1
        note("complexity", f"{tokens} tokens")
    if tokens > 1200:
        complexity += 0.1
    listed = len(LISTED.findall(prompt))
    if listed >= 3:
        complexity += 0.1
        note("complexity", f"{listed} listed requirements")
    if CODE.search(prompt):
        complexity += 0.1
        note("complexity", "code")
    design = _hits(DESIGN, prompt)
    if design:
        complexity += min(0.15, 0.05 * len(design))
        note("complexity", ", ".join(design[:3]))

    ambiguity = 0.5 if risk.kind == "research" else 0.3
    vague = _hits(VAGUE, prompt)
    if vague:
        ambiguity += min(0.3, 0.1 * len(vague))
        note("ambiguity", "vague: " + ", ".join(vague[:3]))
    if len(prompt.split()) < 6:
        ambiguity += 0.1
        note("ambiguity", "short ask")
    explicit = _hits(EXPLICIT, prompt)
    if explicit:
        ambiguity -= 0.1
        note("ambiguity", "explicit: " + ", ".join(explicit[:3]))

    evidence = KIND_EVIDENCE.get(risk.kind, 0.35)
    cues = _hits(EVIDENCE, prompt)
    if cues:
        evidence += min(0.3, 0.1 * len(cues))
        note("evidence_need", ", ".join(cues[:3]))

    reversibility = 0.6
    if irreversible_signals or irreversible_words:
        reversibility = 0.25
        note("reversibility", ", ".join([*irreversible_signals, *irreversible_words][:3]))
    else:
        draft = _hits(DRAFT, prompt)
        if draft:
            reversibility = 0.8
            note("reversibility", "draft: " + ", ".join(draft[:3]))

    return Estimate(
        risk=round(base_risk, 4),
        consequence=_clip(consequence),
        complexity=_clip(complexity),
        ambiguity=_clip(ambiguity),
        evidence_need=_clip(evidence),
        reversibility=_clip(reversibility),
        drivers={k: tuple(v) for k, v in drivers.items()},
    )
