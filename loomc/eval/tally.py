"""The receipt's aggregates (per-strategy metrics, paired deltas, the judge's summary, the
models seen), kept as runs finish instead of from a list of every record.

A record is reduced to a few numbers on arrival: counts and exact sums where the order of
arrival cannot change the result (integers, Decimals, sets), and per-run slots of compact arrays,
addressed by the run's place in the matrix, where it can (float means, t intervals, the paired
bootstrap). Runs finish in any order at concurrency 128; reading the slots in matrix order makes
every figure the same, bit for bit, as aggregating the records in that order. Memory is a few
dozen bytes per run, not the record."""

from __future__ import annotations

import math
from array import array
from bisect import bisect_right
from dataclasses import dataclass, field
from decimal import Decimal

from loomc.eval import stats
from loomc.eval.metrics import BASELINE, PairedDelta, StrategyMetrics
from loomc.eval.records import JudgeVerdict, RunRecord

NAN = math.nan


@dataclass
class _Strategy:
    """Order-free sums of one strategy's runs."""

    runs: int = 0
    errors: int = 0
    sources: set[str] = field(default_factory=set)
    judged: int = 0
    judge_errors: int = 0
    judge_pending: int = 0
    pass_n: int = 0
    passes: int = 0
    results: int = 0
    calls: int = 0
    one_call: int = 0
    escalated: int = 0
    limited: int = 0
    tokens: int = 0
    elapsed: array[float] = field(default_factory=lambda: array("d"))
    route_n: int = 0
    route_ok: int = 0
    over: int = 0
    under: int = 0
    missing: set[str] = field(default_factory=set)
    priced: bool = True
    cost: Decimal = Decimal(0)
    credits: Decimal | None = None


@dataclass
class JudgeTally:
    runs: int = 0
    judged: int = 0
    errors: int = 0
    pending: int = 0
    calls: int = 0
    tokens: int = 0
    models: set[str] = field(default_factory=set)
    unpriced: set[str] = field(default_factory=set)
    cost: Decimal = Decimal(0)
    credits: Decimal | None = None

    def add(self, v: JudgeVerdict) -> None:
        self.runs += 1
        self.judged += v.status == "ok"
        self.errors += v.status == "error"
        self.pending += v.status == "budget-stopped"
        self.calls += v.calls
        self.tokens += int(v.usage.get("total_tokens", 0))
        if v.model:
            self.models.add(v.model)
        if v.calls:
            if v.cost is None:
                self.unpriced.add(v.model or "?")
            else:
                self.cost += v.cost
            if v.credits is not None:
                self.credits = (Decimal(0) if self.credits is None else self.credits) + v.credits


class Tally:
    """Aggregates of runs added by their index in the matrix (``size`` slots; without a size,
    runs are added in order and the slots grow)."""

    def __init__(self, size: int | None = None) -> None:
        self.fixed = size is not None
        n = size or 0
        self.count = 0
        self.strategy = array("i", [-1]) * n  # index into ``names``; -1: no run there yet
        self.quality = array("d", [NAN]) * n
        self.cost = array("d", [NAN]) * n  # float(result.cost) for the paired deltas
        self.ms = array("d", [NAN]) * n  # result.elapsed_ms for the paired deltas
        self.iteration = array("q", [0]) * n
        self.case: list[str | None] = [None] * n
        self.names: dict[str, int] = {}
        self.per: list[_Strategy] = []
        self.judge = JudgeTally()
        self.models: set[str] = set()

    def add(self, record: RunRecord, index: int | None = None) -> None:
        if index is None:
            if self.fixed:
                raise ValueError("a sized tally needs the run's index")
            index = len(self.strategy)
            self.strategy.append(-1)
            for column in (self.quality, self.cost, self.ms):
                column.append(NAN)
            self.iteration.append(0)
            self.case.append(None)
        if self.strategy[index] != -1:
            raise ValueError(f"run {index} was added twice")
        number = self.names.setdefault(record.strategy, len(self.names))
        if number == len(self.per):
            self.per.append(_Strategy())
        s = self.per[number]
        self.count += 1
        self.strategy[index] = number
        self.case[index] = record.case_id
        self.iteration[index] = record.iteration
        s.runs += 1
        if record.quality is not None:
            self.quality[index] = record.quality
            if record.quality_source:
                s.sources.add(record.quality_source)
        v = record.judge
        if v is not None:
            s.judged += v.status == "ok"
            s.judge_errors += v.status == "error"
            s.judge_pending += v.status == "budget-stopped"
            self.judge.add(v)
        if record.passed is not None:
            s.pass_n += 1
            s.passes += record.passed
        r = record.result
        if r is None:
            s.errors += 1
            return
        s.results += 1
        s.calls += r.calls
        s.one_call += r.calls == 1
        s.escalated += r.escalated
        s.limited += r.budget.limited
        s.tokens += r.tokens
        s.elapsed.append(float(r.elapsed_ms))
        self.ms[index] = float(r.elapsed_ms)
        if record.expected_escalation is not None:
            want, got = record.expected_escalation, r.escalated
            s.route_n += 1
            s.route_ok += want == got
            s.over += got and not want
            s.under += want and not got
        s.missing.update(r.missing_pricing)
        if r.cost is None:
            s.priced = False
        else:
            s.cost += r.cost
            self.cost[index] = float(r.cost)
        if r.credits is not None:
            s.credits = (Decimal(0) if s.credits is None else s.credits) + r.credits
        self.models.update(step.model for step in r.steps)

    # -- the figures -----------------------------------------------------------------------

    def metrics(self) -> tuple[list[StrategyMetrics], list[PairedDelta]]:
        """What ``metrics.compute`` gives for the runs in matrix order.

        The working sets are arrays, not lists of ints and tuples: at 100,000 runs the lists
        (slots, the baseline's pairs by case and iteration, the deltas) made a 15 MiB peak at
        the end of an eval, above everything the eval held while it ran."""
        slots: list[array[int]] = [array("q") for _ in self.per]
        order: list[int] = []  # strategies by their first run in the matrix, not to finish
        for index, number in enumerate(self.strategy):
            if number != -1:
                if not slots[number]:
                    order.append(number)
                slots[number].append(index)
        names = list(self.names)
        metrics = [self._metrics(names[n], self.per[n], slots[n]) for n in order]
        base = next((m for m in metrics if m.strategy == BASELINE), None)
        if base is not None and base.avg_cost_usd is not None and Decimal(base.avg_cost_usd) > 0:
            for m in metrics:
                if m.avg_cost_usd is not None:
                    m.cost_index = float(Decimal(m.avg_cost_usd) / Decimal(base.avg_cost_usd) * 100)
        if BASELINE not in self.names:
            return metrics, []
        pairing = _Pairing(self, slots[self.names[BASELINE]])
        deltas = [self._delta(names[n], slots[n], pairing) for n in order if names[n] != BASELINE]
        return metrics, deltas

    def _metrics(self, name: str, s: _Strategy, slots: array[int]) -> StrategyMetrics:
        m = StrategyMetrics(strategy=name, runs=s.runs, errors=s.errors)
        qualities = array("d", (q for q in (self.quality[i] for i in slots) if q == q))  # NaN: none
        m.quality_n = len(qualities)
        m.quality_mean = stats.mean(qualities)
        ci = stats.mean_ci(qualities)  # a t interval can leave the 0-100 scale: clamp it
        m.quality_ci = None if ci is None else (max(0.0, ci[0]), min(100.0, ci[1]))
        sources = s.sources
        m.quality_source = (
            None if not sources else next(iter(sources)) if len(sources) == 1 else "mixed"
        )
        m.judged_n, m.judge_errors, m.judge_pending = s.judged, s.judge_errors, s.judge_pending
        m.pass_n = s.pass_n
        m.pass_rate = s.passes / s.pass_n if s.pass_n else None
        m.pass_ci = stats.wilson(s.passes, s.pass_n)
        if s.results:
            n = s.results
            m.avg_calls = float(s.calls) / n
            m.one_call_rate = s.one_call / n
            m.escalation_rate = s.escalated / n
            m.budget_limited_rate = s.limited / n
            m.avg_tokens = float(s.tokens) / n
            m.p50_ms = stats.percentile(s.elapsed, 50)
            m.p95_ms = stats.percentile(s.elapsed, 95)
        m.route_n = s.route_n
        if s.route_n:
            m.route_accuracy = s.route_ok / s.route_n
            m.over_escalation_rate = s.over / s.route_n
            m.under_escalation_rate = s.under / s.route_n
        m.missing_pricing = sorted(s.missing)
        if s.results and not s.missing and s.priced:
            m.total_cost_usd = str(s.cost)
            m.avg_cost_usd = str(s.cost / s.results)
        if s.credits is not None:
            m.total_credits = str(s.credits)
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

    def _delta(self, name: str, slots: array[int], pairing: _Pairing) -> PairedDelta:
        ours, theirs = pairing.pairs(slots)
        d = PairedDelta(strategy=name, baseline=BASELINE, pairs=len(ours))
        for column, point, interval in (
            (self.quality, "quality", "quality_ci"),
            (self.cost, "cost_usd", "cost_ci"),
            (self.ms, "latency_ms", "latency_ci"),
        ):
            # the same floats in the same order as a list: the same sums, the same bootstrap
            diffs = array(
                "d",
                (
                    x
                    for x in (column[a] - column[b] for a, b in zip(ours, theirs, strict=True))
                    if x == x
                ),
            )  # NaN: none
            setattr(d, point, stats.mean(diffs))
            setattr(d, interval, stats.paired_bootstrap(diffs))
        return d


class _Pairing:
    """The baseline's run for each (case, iteration), as sorted arrays searched by bisection:
    a dict of 50,000 tuples cost ~7 MiB, these 0.8. When the baseline has two runs of one
    (case, iteration), the later in the matrix pairs (as a dict filled in order would)."""

    def __init__(self, tally: Tally, baseline: array[int]) -> None:
        self.tally = tally
        self.cases: dict[str | None, int] = {}
        self.stride = max(tally.iteration, default=0) + 1
        n = len(baseline)  # sorted by key, then by place in the matrix: one int for both
        packed = sorted(self._key(i) * n + k for k, i in enumerate(baseline))
        self.keys = array("q", (p // n for p in packed))
        self.runs = array("q", (baseline[p % n] for p in packed))

    def _key(self, index: int) -> int:
        case = self.tally.case[index]
        number = self.cases.setdefault(case, len(self.cases))
        return number * self.stride + self.tally.iteration[index]

    def pairs(self, slots: array[int]) -> tuple[array[int], array[int]]:
        """The runs of ``slots`` that have a baseline run, and that run, in slot order."""
        ours, theirs = array("q"), array("q")
        for i in slots:
            if self.tally.case[i] not in self.cases:
                continue
            key = self._key(i)
            at = bisect_right(self.keys, key) - 1
            if at >= 0 and self.keys[at] == key:
                ours.append(i)
                theirs.append(self.runs[at])
        return ours, theirs
