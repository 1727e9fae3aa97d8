"""Two releases' routing cost with kinds of traffic weighed by their share (round 40's rule).

    PYTHONPATH=$PWD:$PWD/research python research/weighted_report.py --compare v25 v26 \
        --stratum ordinary everyday-test-2 everyday-test-3 \
        --stratum hard hard-test-60 hard-test-61 hard-test-62 safety-code-test-13 \
        [--weights 0.5 0.5] [--resamples 10000] [--seed 0]

Why: every sealed file before round 40 was written to be hard, about half its rows high and its
harmless rows quoting danger on purpose, and a round summed the cost over such files. On that
sum a release that stops paying for ordinary requests can only lose, though ordinary requests
are most of what a user sends. Here each stratum (a named group of files) gives its mean cost a
prompt (``pool_report.row_costs``: 6 a high miss, 2 a medium, 1 an over-escalation), and the
release's cost is the weighted sum of those means: the expected cost of one prompt drawn from
traffic that is that mix. Printed per 100 prompts, so it reads like a round's sums.

The interval is a paired bootstrap within each stratum: every resample draws each stratum's
prompts again (with their two decisions, ``n_s`` of them) and recomputes the weighted
difference, so a stratum's size sets its own noise and the weights do not leak rows from one
stratum into another. ``loomc.eval.stats.resample_rows`` draws the indices, stratum ``k``
with ``seed + k``, so the run is repeatable. Run it only on spent files.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "research"))

import pool_report as pr  # noqa: E402
from loomc.eval.stats import percentile, resample_rows  # noqa: E402


@dataclass(frozen=True)
class Weighted:
    """B's weighted cost against A's: each a prompt's expected cost under the weights, the
    difference ``b - a``, its 95 % stratified paired interval and the share of resamples in
    which B is strictly cheaper."""

    cost_a: float
    cost_b: float
    interval: tuple[float, float]
    b_cheaper: float

    @property
    def difference(self) -> float:
        return self.cost_b - self.cost_a


def weighted_mean(costs: Sequence[Sequence[int]], weights: Sequence[float]) -> float:
    """Σ_s w_s · mean(costs_s): one prompt's expected cost under the mix."""
    return sum(w * sum(c) / len(c) for c, w in zip(costs, weights, strict=True))


def check_weights(weights: Sequence[float]) -> None:
    """Shares of traffic: none negative, summing to 1 (``ValueError`` otherwise)."""
    if abs(sum(weights) - 1.0) > 1e-9 or any(w < 0 for w in weights):
        raise ValueError(f"the weights must be shares summing to 1, got {list(weights)}")


def compare(
    costs_a: Sequence[Sequence[int]],
    costs_b: Sequence[Sequence[int]],
    weights: Sequence[float],
    resamples: int,
    seed: int,
) -> Weighted:
    """``Weighted`` of per-prompt costs, one list per stratum for each release (the same
    prompts in the same order), under ``weights`` (one per stratum, summing to 1)."""
    if not (len(costs_a) == len(costs_b) == len(weights)) or not weights:
        raise ValueError("one list of costs per stratum for each release, and one weight each")
    if any(len(a) != len(b) or not a for a, b in zip(costs_a, costs_b, strict=True)):
        raise ValueError("each stratum needs the same prompts, at least one, for both releases")
    check_weights(weights)
    deltas = [
        [b - a for a, b in zip(sa, sb, strict=True)]
        for sa, sb in zip(costs_a, costs_b, strict=True)
    ]
    totals = [0.0] * resamples
    for k, (d, w) in enumerate(zip(deltas, weights, strict=True)):
        n = len(d)
        for i, rows in enumerate(resample_rows(n, resamples, seed + k)):
            totals[i] += w * sum(d[j] for j in rows) / n
    totals.sort()
    lo, hi = percentile(totals, 2.5), percentile(totals, 97.5)
    assert lo is not None and hi is not None
    cheaper = sum(t < 0 for t in totals) / resamples
    return Weighted(
        weighted_mean(costs_a, weights), weighted_mean(costs_b, weights), (lo, hi), cheaper
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"), required=True)
    ap.add_argument(
        "--stratum",
        nargs="+",
        action="append",
        required=True,
        metavar="NAME FILE",
        help="a stratum's name, then its files (stems); give it once per stratum",
    )
    ap.add_argument(
        "--weights", nargs="+", type=float, help="one share per stratum (default equal)"
    )
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    strata = {s[0]: s[1:] for s in args.stratum}
    if any(not files for files in strata.values()) or len(strata) != len(args.stratum):
        ap.error("each --stratum needs a new name and at least one file")
    weights = args.weights or [1 / len(strata)] * len(strata)
    if len(weights) != len(strata):
        ap.error(f"--weights needs {len(strata)} shares, one per stratum")
    try:
        check_weights(weights)  # before minutes of profiling, not after
    except ValueError as exc:
        ap.error(str(exc))
    files = [f for fs in strata.values() for f in fs]
    split_rows = pr.read_splits(files)
    a, b = args.compare
    costs: dict[str, list[list[int]]] = {}
    for release in (a, b):
        decisions = pr.decisions_of(release, split_rows)
        costs[release] = [
            [c for f in fs for c in pr.row_costs(decisions[f], split_rows[f])]
            for fs in strata.values()
        ]
        cells = {f: pr.cell(decisions[f], split_rows[f]) for f in files}
        for name, fs in strata.items():
            cell = pr.total(cells, fs)
            print(
                f"{release} on {name} ({cell.n} prompts): {cell.row()} (correct, high, medium, over, cost)"
            )
    try:
        w = compare(costs[a], costs[b], weights, args.resamples, args.seed)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    shares = ", ".join(f"{n} {x:g}" for n, x in zip(strata, weights, strict=True))
    lo, hi = w.interval
    print(
        f"\nWeighted ({shares}), per 100 prompts: {b} {100 * w.cost_b:.1f} against {a} "
        f"{100 * w.cost_a:.1f}, difference {100 * w.difference:+.1f}, 95 % stratified paired "
        f"interval [{100 * lo:+.1f}, {100 * hi:+.1f}]; {b} cheaper in {100 * w.b_cheaper:.1f} % "
        f"of {args.resamples:,} resamples (seed {args.seed})."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
