"""Prometheus text exposition (format 0.0.4) of the server's counters and latency histograms.

A small writer rather than ``prometheus_client``: a dozen series per pipeline x tier, updated
from one event loop, need no registry, no locks and no dependency. Labels never carry key
material: runs are counted per pipeline x tier, refusals per kind.
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

from loomc.exec.result import RunResult

BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)

_HELP = {
    "loomc_runs_total": ("counter", "Runs finished, by pipeline, tier and stop reason."),
    "loomc_calls_total": ("counter", "Provider calls made by runs."),
    "loomc_tokens_total": ("counter", "Tokens used by runs (prompt and completion)."),
    "loomc_credits_total": ("counter", "Native credits reported by providers."),
    "loomc_cost_usd_total": ("counter", "Cost in USD of priced calls."),
    "loomc_requests_total": ("counter", "HTTP requests to /v1 answered, by status code."),
    "loomc_run_latency_seconds": ("histogram", "Wall time of a run, by pipeline and tier."),
}


def _labels(**labels: str) -> str:
    def esc(v: str) -> str:
        return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    return "{" + ",".join(f'{k}="{esc(v)}"' for k, v in labels.items()) + "}"


class Metrics:
    def __init__(self) -> None:
        self.counters: dict[str, dict[str, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
        self.hist: dict[str, list[int]] = {}
        self.hist_sum: dict[str, float] = defaultdict(float)
        self._status: dict[int, str] = {}
        self._series: dict[tuple[str, str | None, object], tuple[str, str]] = {}

    def add(self, name: str, value: int | Decimal, **labels: str) -> None:
        self.counters[name][_labels(**labels)] += Decimal(value)

    def request(self, status: int) -> None:
        labels = self._status.get(status)
        if labels is None:
            labels = self._status[status] = _labels(status=str(status))
        self.counters["loomc_requests_total"][labels] += 1

    def run(self, result: RunResult) -> None:
        where = {"pipeline": result.pipeline, "tier": result.tier or ""}
        key = (result.pipeline, result.tier, result.stop_reason)
        labels = self._series.get(key)
        if labels is None:  # label strings built once per pipeline x tier x stop reason
            stop = _labels(**where, stop_reason=str(result.stop_reason))
            labels = self._series[key] = (stop, _labels(**where))
        stop, series = labels
        counters = self.counters
        counters["loomc_runs_total"][stop] += 1
        counters["loomc_calls_total"][series] += result.calls
        counters["loomc_tokens_total"][series] += result.tokens
        counters["loomc_credits_total"][series] += result.credits or 0
        counters["loomc_cost_usd_total"][series] += result.cost or 0
        counts = self.hist.setdefault(series, [0] * (len(BUCKETS_S) + 1))
        seconds = result.elapsed_ms / 1000
        for i, bound in enumerate(BUCKETS_S):
            if seconds <= bound:
                counts[i] += 1
        counts[-1] += 1
        self.hist_sum[series] += seconds

    def render(self) -> str:
        lines: list[str] = []
        for name, (kind, text) in _HELP.items():
            lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
            if kind == "counter":
                for labels, value in sorted(self.counters.get(name, {}).items()):
                    lines.append(f"{name}{labels} {_num(value)}")
                continue
            for series, counts in sorted(self.hist.items()):
                inner = series[1:-1]
                for bound, count in zip((*map(str, BUCKETS_S), "+Inf"), counts, strict=True):
                    lines.append(f'{name}_bucket{{{inner},le="{bound}"}} {count}')
                lines.append(f"{name}_sum{series} {self.hist_sum[series]:.6f}")
                lines.append(f"{name}_count{series} {counts[-1]}")
        return "\n".join(lines) + "\n"


def _num(value: Decimal) -> str:
    return str(int(value)) if value == value.to_integral_value() else format(value.normalize(), "f")
