"""Route accuracy of a profiler on labelled rows, with the costly error reported on its own.

Rows carry ``prompt``, ``expectedEscalation`` and a difficulty: ``level`` (routing corpus) or
``difficulty`` (seed suites). ``pipeline`` is used as the hint when ``use_hints`` is set.
Profilers with a ``profile_many(prompts, hints)`` method are called once for all rows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from loomc.risk.base import RiskProfile, RiskProfiler
from loomc.sources import read_jsonl

VERBS = re.compile(r"review|audit|investigate|research|compare|verify|debug|design", re.IGNORECASE)
_VERBS = VERBS  # old name


def escalates(risk: RiskProfile, prompt: str) -> bool:
    """The balanced tier's decision before the direct answer is seen (refusals aside)."""
    if risk.level == "high" or risk.kind == "research":
        return True
    return risk.level == "medium" and VERBS.search(prompt) is not None


def load_rows(path: str | Path) -> list[dict[str, Any]]:
    """JSONL rows, blank lines skipped; a bad line raises ValueError naming `file:line`."""
    return read_jsonl(path)


def row_level(row: Mapping[str, Any]) -> str | None:
    value = row.get("level", row.get("difficulty"))
    return None if value is None else str(value)


def profile_rows(
    profiler: RiskProfiler, rows: Sequence[Mapping[str, Any]], *, use_hints: bool = False
) -> list[RiskProfile]:
    prompts = [str(r["prompt"]) for r in rows]
    hints = [
        (str(r["pipeline"]) if use_hints and r.get("pipeline") is not None else None) for r in rows
    ]
    many = getattr(profiler, "profile_many", None)
    if callable(many):
        return list(many(prompts, hints))
    return [profiler.profile(p, h) for p, h in zip(prompts, hints, strict=True)]


def expected_calibration_error(
    probs: Sequence[float], labels: Sequence[bool], bins: int = 10
) -> float:
    """Mean |accuracy - confidence| over equal-width probability bins, weighted by bin size."""
    if not probs:
        return 0.0
    total = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        idx = [i for i, p in enumerate(probs) if lo <= p < hi or (b == bins - 1 and p == 1.0)]
        if idx:
            conf = sum(probs[i] for i in idx) / len(idx)
            freq = sum(labels[i] for i in idx) / len(idx)
            total += len(idx) * abs(conf - freq)
    return total / len(probs)


def evaluate_profiler(
    profiler: RiskProfiler, rows: Iterable[Mapping[str, Any]], *, use_hints: bool = False
) -> dict[str, Any]:
    """Accuracy, over- and under-escalation rates; under-escalation of high-difficulty rows apart.

    ``over_escalation`` is over non-escalation rows, ``under_escalation`` over escalation rows,
    ``high_risk_under_escalation`` over high rows that expect escalation (every row counts when
    the denominators are empty, the rate is 0). Probabilistic profilers also get ``ece`` and
    ``brier``.
    """
    rows = list(rows)
    risks = profile_rows(profiler, rows, use_hints=use_hints)
    n = correct = over = under = high_n = high_under = neg_n = pos_n = 0
    misses: list[str] = []
    probs: list[float] = []
    labels: list[bool] = []
    for row, risk in zip(rows, risks, strict=True):
        prompt = str(row["prompt"])
        got = escalates(risk, prompt)
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
        if row_level(row) == "high" and want:
            high_n += 1
            high_under += not got
        if risk.probability is not None:
            probs.append(risk.probability)
            labels.append(want)
    out: dict[str, Any] = {
        "profiler": profiler.name,
        "n": n,
        "accuracy": correct / n if n else 0.0,
        "over_escalation": over / neg_n if neg_n else 0.0,
        "under_escalation": under / pos_n if pos_n else 0.0,
        "high_risk_under_escalation": high_under / high_n if high_n else 0.0,
        "high_n": high_n,
        "misses": misses,
    }
    if probs and len(probs) == n:
        out["ece"] = expected_calibration_error(probs, labels)
        out["brier"] = sum((p - y) ** 2 for p, y in zip(probs, labels, strict=True)) / n
    return out
