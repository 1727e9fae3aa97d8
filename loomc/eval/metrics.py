"""Per-strategy metrics and paired deltas of eval RunRecords (computed by ``loomc.eval.tally``).

A metric is ``None`` whenever it was not measured (no judge, no pricing, no baseline, too few
samples); the report layer renders ``None`` as a blank with a footnote, never as 0.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from loomc.eval.records import RunRecord

BASELINE = "baseline"


class StrategyMetrics(BaseModel):
    strategy: str
    runs: int
    errors: int = 0
    quality_mean: float | None = None
    quality_ci: tuple[float, float] | None = None
    quality_n: int = 0
    quality_source: str | None = None  # judge | checks | mixed; None when nothing was scored
    judged_n: int = 0  # runs the judge scored
    judge_errors: int = 0  # runs whose judging failed: quality missing, run not passed
    judge_pending: int = 0  # runs the eval-wide budget left unjudged (resumable)
    pass_rate: float | None = None
    pass_ci: tuple[float, float] | None = None
    pass_n: int = 0
    avg_calls: float | None = None
    one_call_rate: float | None = None
    escalation_rate: float | None = None
    budget_limited_rate: float | None = None
    route_accuracy: float | None = None
    over_escalation_rate: float | None = None
    under_escalation_rate: float | None = None
    route_n: int = 0
    avg_tokens: float | None = None
    avg_cost_usd: str | None = None  # exact Decimal string; None unless every model is priced
    total_cost_usd: str | None = None
    missing_pricing: list[str] = Field(default_factory=list)
    total_credits: str | None = None  # None when no native receipt was seen
    cost_index: float | None = None  # baseline = 100
    p50_ms: float | None = None
    p95_ms: float | None = None
    flags: list[str] = Field(default_factory=list)


class PairedDelta(BaseModel):
    strategy: str
    baseline: str
    pairs: int
    quality: float | None = None
    quality_ci: tuple[float, float] | None = None
    cost_usd: float | None = None
    cost_ci: tuple[float, float] | None = None
    latency_ms: float | None = None
    latency_ci: tuple[float, float] | None = None


def compute(records: Sequence[RunRecord]) -> tuple[list[StrategyMetrics], list[PairedDelta]]:
    """Per-strategy metrics (in order of first appearance) and deltas against the baseline,
    over pairs matched by case id x iteration (``loomc.eval.tally`` keeps them as runs finish)."""
    from loomc.eval.tally import Tally

    tally = Tally()
    for r in records:
        tally.add(r)
    return tally.metrics()
