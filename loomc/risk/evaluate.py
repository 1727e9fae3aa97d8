"""Route accuracy of a profiler on labelled rows, with the costly error reported on its own."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from loomc.risk.base import RiskProfile, RiskProfiler

_VERBS = re.compile(r"review|audit|investigate|research|compare|verify|debug|design", re.IGNORECASE)


def escalates(risk: RiskProfile, prompt: str) -> bool:
    """The balanced tier's decision before the direct answer is seen (refusals aside)."""
    if risk.level == "high" or risk.kind == "research":
        return True
    return risk.level == "medium" and _VERBS.search(prompt) is not None


def evaluate_profiler(
    profiler: RiskProfiler, rows: Iterable[Mapping[str, Any]], *, use_hints: bool = False
) -> dict[str, Any]:
    """Accuracy, over- and under-escalation rates; under-escalation of high-difficulty rows apart."""
    n = correct = over = under = high_n = high_under = neg_n = pos_n = 0
    misses: list[str] = []
    for row in rows:
        prompt = str(row["prompt"])
        hint = row.get("pipeline") if use_hints else None
        got = escalates(profiler.profile(prompt, hint), prompt)
        want = bool(row["expectedEscalation"])
        n += 1
        pos_n += want
        neg_n += not want
        if got == want:
            correct += 1
        else:
            misses.append(str(row.get("id", n)))
            over += got and not want
            under += want and not got
        if row.get("difficulty") == "high":
            high_n += 1
            high_under += want and not got
    return {
        "profiler": profiler.name,
        "n": n,
        "accuracy": correct / n if n else 0.0,
        "over_escalation": over / neg_n if neg_n else 0.0,
        "under_escalation": under / pos_n if pos_n else 0.0,
        "high_risk_under_escalation": high_under / high_n if high_n else 0.0,
        "misses": misses,
    }
