"""The reference runtime guard (`apply_runtime_guard.py`, CONDUCTOR-V2 §4).

For each raw prediction: no JSON object → `invalid_json`; a plan that cannot be rebuilt from
policy/writer/reviewer/finalizer (§5.2) → `invalid_plan`; a rebuilt plan over the hard call,
credit or latency limits → `over_budget`. A flagged prediction is replaced by the deterministic
router's canonical-JSON plan (§3); anything else passes through as the **unchanged raw text**.

Like the reference it does not check or rewrite declared fields (`estimated_*`, the `max_*`
echoes, `access`, `independent_verification`, `reason_codes`) and runs no schema check, so a
proposal with an inconsistent declared receipt is accepted (CONDUCTOR-V2 §10.6).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loomc.conductor.outcome import feasible
from loomc.conductor.prompt_format import extract_first_json
from loomc_research.v2.router import route_json
from loomc_research.v2.score import FALLBACK_REASONS, Example, r6, rebuild_plan

__all__ = ["GuardDecision", "guard_prediction", "guard_rows", "guard_summary"]


@dataclass(frozen=True)
class GuardDecision:
    prediction: str
    reason: str | None

    @property
    def fallback_used(self) -> bool:
        return self.reason is not None


def fallback_reason(example: Example, text: str) -> str | None:
    parsed = extract_first_json(text)
    if parsed is None:
        return "invalid_json"
    plan = rebuild_plan(parsed, example)
    if plan is None:
        return "invalid_plan"
    if not feasible(plan, example.constraints):
        return "over_budget"
    return None


def guard_prediction(example: Example, text: str) -> GuardDecision:
    reason = fallback_reason(example, text)
    if reason is None:
        return GuardDecision(text, None)
    return GuardDecision(
        route_json(example.task, example.constraints, list(example.workers)), reason
    )


def guard_rows(
    examples: Mapping[str, Example], predictions: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Output rows: the input record + `prediction` (maybe replaced), `raw_prediction`,
    `runtime_fallback_used`, `runtime_fallback_reason`."""
    out = []
    for row in predictions:
        raw = str(row["prediction"])
        decision = guard_prediction(examples[str(row["id"])], raw)
        guarded = dict(row)
        guarded.update(
            prediction=decision.prediction,
            raw_prediction=raw,
            runtime_fallback_used=decision.fallback_used,
            runtime_fallback_reason=decision.reason,
        )
        out.append(guarded)
    return out


def guard_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """`<output>.guard.json`: examples, accepted, fallback_count, fallback_rate (6 dp), reasons."""
    reasons = dict.fromkeys(FALLBACK_REASONS, 0)
    for row in rows:
        reason = row.get("runtime_fallback_reason")
        if reason is not None:
            reasons[str(reason)] = reasons.get(str(reason), 0) + 1
    fallbacks = sum(1 for row in rows if row.get("runtime_fallback_used"))
    n = len(rows)
    return {
        "examples": n,
        "accepted": n - fallbacks,
        "fallback_count": fallbacks,
        "fallback_rate": r6(fallbacks / n) if n else 0.0,
        "reasons": reasons,
    }
