"""The eval's aggregation as it was before issue 16 (loomc/eval/metrics.py and receipt.py at
05a79b1): every record in a list, grouped by strategy. Kept as the oracle that the streaming
``Tally`` must match bit for bit; not used by loomc."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from loomc.eval import stats
from loomc.eval.metrics import BASELINE, PairedDelta, StrategyMetrics
from loomc.eval.receipt import JudgeSummary
from loomc.eval.records import RunRecord


def models(records: Sequence[RunRecord]) -> list[str]:
    return sorted({s.model for r in records if r.result for s in r.result.steps})


def judge_summary(records: Sequence[RunRecord]) -> JudgeSummary | None:
    verdicts = [r.judge for r in records if r.judge is not None]
    if not verdicts:
        return None
    paid = [v for v in verdicts if v.calls]
    models = sorted({v.model for v in verdicts if v.model})
    unpriced = sorted({v.model or "?" for v in paid if v.cost is None})
    credits = [v.credits for v in paid if v.credits is not None]
    return JudgeSummary(
        model=", ".join(models) or None,
        runs=len(verdicts),
        judged=sum(v.status == "ok" for v in verdicts),
        errors=sum(v.status == "error" for v in verdicts),
        pending=sum(v.status == "budget-stopped" for v in verdicts),
        calls=sum(v.calls for v in verdicts),
        tokens=sum(int(v.usage.get("total_tokens", 0)) for v in verdicts),
        cost_usd=None
        if unpriced
        else str(sum((v.cost for v in paid if v.cost is not None), Decimal(0))),
        credits=str(sum(credits, Decimal(0))) if credits else None,
        missing_pricing=unpriced,
    )


def _rate(flags: Sequence[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def strategy_metrics(strategy: str, records: Sequence[RunRecord]) -> StrategyMetrics:
    done = [r for r in records if r.result is not None]
    results = [r.result for r in done if r.result is not None]
    m = StrategyMetrics(strategy=strategy, runs=len(records), errors=len(records) - len(done))
    qualities = [r.quality for r in records if r.quality is not None]
    m.quality_n = len(qualities)
    m.quality_mean = stats.mean(qualities)
    ci = stats.mean_ci(qualities)  # a t interval can leave the 0-100 scale: clamp it
    m.quality_ci = None if ci is None else (max(0.0, ci[0]), min(100.0, ci[1]))
    sources = {r.quality_source for r in records if r.quality is not None and r.quality_source}
    m.quality_source = None if not sources else sources.pop() if len(sources) == 1 else "mixed"
    verdicts = [r.judge for r in records if r.judge is not None]
    m.judged_n = sum(v.status == "ok" for v in verdicts)
    m.judge_errors = sum(v.status == "error" for v in verdicts)
    m.judge_pending = sum(v.status == "budget-stopped" for v in verdicts)
    passes = [r.passed for r in records if r.passed is not None]
    m.pass_n = len(passes)
    m.pass_rate = _rate(passes)
    m.pass_ci = stats.wilson(sum(passes), len(passes))
    if results:
        m.avg_calls = stats.mean([float(r.calls) for r in results])
        m.one_call_rate = _rate([r.calls == 1 for r in results])
        m.escalation_rate = _rate([r.escalated for r in results])
        m.budget_limited_rate = _rate([r.budget.limited for r in results])
        m.avg_tokens = stats.mean([float(r.tokens) for r in results])
        m.p50_ms = stats.percentile([float(r.elapsed_ms) for r in results], 50)
        m.p95_ms = stats.percentile([float(r.elapsed_ms) for r in results], 95)
    routed = [
        (r.expected_escalation, r.result.escalated)
        for r in done
        if r.expected_escalation is not None and r.result is not None
    ]
    m.route_n = len(routed)
    m.route_accuracy = _rate([want == got for want, got in routed])
    m.over_escalation_rate = _rate([got and not want for want, got in routed])
    m.under_escalation_rate = _rate([want and not got for want, got in routed])
    missing = sorted({name for r in results for name in r.missing_pricing})
    m.missing_pricing = missing
    if results and not missing and all(r.cost is not None for r in results):
        total = sum((r.cost for r in results if r.cost is not None), Decimal(0))
        m.total_cost_usd = str(total)
        m.avg_cost_usd = str(total / len(results))
    credits = [r.credits for r in results if r.credits is not None]
    if credits:
        m.total_credits = str(sum(credits, Decimal(0)))
    if m.quality_mean is None:
        m.flags.append("no-quality")
    elif m.quality_source == "checks":
        m.flags.append("checks-only")
    if m.judge_errors:
        m.flags.append("judge-errors")
    if m.avg_cost_usd is None:
        m.flags.append("unpriced")
    if m.quality_n == 1 or (m.quality_n > 1 and m.quality_ci is None):
        m.flags.append("single-sample")
    return m


def _paired(
    records: Sequence[RunRecord], baseline: Sequence[RunRecord]
) -> list[tuple[RunRecord, RunRecord]]:
    base = {(r.case_id, r.iteration): r for r in baseline}
    return [
        (r, base[(r.case_id, r.iteration)]) for r in records if (r.case_id, r.iteration) in base
    ]


def _delta(
    pairs: list[tuple[float | None, float | None]],
) -> tuple[float | None, tuple[float, float] | None]:
    diffs = [a - b for a, b in pairs if a is not None and b is not None]
    return stats.mean(diffs), stats.paired_bootstrap(diffs)


def _cost(r: RunRecord) -> float | None:
    return float(r.result.cost) if r.result is not None and r.result.cost is not None else None


def _ms(r: RunRecord) -> float | None:
    return float(r.result.elapsed_ms) if r.result is not None else None


def paired_delta(
    strategy: str, records: Sequence[RunRecord], baseline: Sequence[RunRecord]
) -> PairedDelta:
    """Deltas (strategy - baseline) over pairs matched by case id x iteration."""
    pairs = _paired(records, baseline)
    d = PairedDelta(strategy=strategy, baseline=BASELINE, pairs=len(pairs))
    d.quality, d.quality_ci = _delta([(a.quality, b.quality) for a, b in pairs])
    d.cost_usd, d.cost_ci = _delta([(_cost(a), _cost(b)) for a, b in pairs])
    d.latency_ms, d.latency_ci = _delta([(_ms(a), _ms(b)) for a, b in pairs])
    return d


def compute(records: Sequence[RunRecord]) -> tuple[list[StrategyMetrics], list[PairedDelta]]:
    by: dict[str, list[RunRecord]] = {}
    for r in records:
        by.setdefault(r.strategy, []).append(r)
    metrics = [strategy_metrics(name, rs) for name, rs in by.items()]
    base = next((m for m in metrics if m.strategy == BASELINE), None)
    if base is not None and base.avg_cost_usd is not None and Decimal(base.avg_cost_usd) > 0:
        for m in metrics:
            if m.avg_cost_usd is not None:
                m.cost_index = float(Decimal(m.avg_cost_usd) / Decimal(base.avg_cost_usd) * 100)
    deltas = (
        [paired_delta(n, rs, by[BASELINE]) for n, rs in by.items() if n != BASELINE]
        if BASELINE in by
        else []
    )
    return metrics, deltas
