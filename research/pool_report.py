"""The sealed-split rule's tables, recomputed from the shipped releases (issue 17).

    PYTHONPATH=$PWD:$PWD/research python research/pool_report.py \
        --pool v8 v9 v10 v11 v12 --incumbent v12 --splits hard-test-10 ... hard-test-18 \
        --default v13 --unseen hard-test-15 ... hard-test-18

Why: from hard-test-12 on, each round's rule pools the spent splits (the pool's pick, W, is
the release with the lowest routing cost that meets the goal, or else no more high misses
than the incumbent) and, from hard-test-16 on, judges the default on every split it was not
trained on against W. The lead added each new split's cells to the last pooled sums by hand.
This recomputes every cell from the releases as shipped (numpy backend, prompts only, the
balanced tier's decision: ``loomc.risk.evaluate``), so the README's tables can be checked
rather than trusted. Run it only on spent splits: it prints every release's figures. The seed
suite, the gates and the CPU tie-break are the rule's other conditions and are not checked
here (``eval_routers.py --seed`` and ``benchmarks/`` measure them).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from loomc.eval.stats import (  # noqa: E402
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    percentile,
    resample_rows,
    wilson,
)
from loomc.policy.models import RiskSettings  # noqa: E402
from loomc.risk.base import RiskSettingsError  # noqa: E402
from loomc.risk.evaluate import escalates, load_rows, profile_rows, row_level  # noqa: E402
from loomc.risk.factory import make_profiler  # noqa: E402

COST_HIGH, COST_MEDIUM, COST_OVER = 6, 2, 1  # a missed high prompt, a missed medium, an over
GOAL_ACCURACY = 0.90


@dataclass(frozen=True)
class Cell:
    """One release's decisions on some prompts, as the rule counts them (summable); how many
    there are and how many were right follow from the counts by level."""

    high_n: int = 0
    high_missed: int = 0
    medium_n: int = 0
    medium_missed: int = 0
    low_n: int = 0
    over: int = 0

    def __add__(self, other: Cell) -> Cell:
        return Cell(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    @property
    def n(self) -> int:
        return self.high_n + self.medium_n + self.low_n

    @property
    def correct(self) -> int:
        return self.n - self.high_missed - self.medium_missed - self.over

    @property
    def cost(self) -> int:
        return COST_HIGH * self.high_missed + COST_MEDIUM * self.medium_missed + self.over

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else 0.0

    @property
    def meets_goal(self) -> bool:
        """Issue 17's goal on these prompts (the seed suite is the rule's separate check)."""
        return self.high_missed == 0 and self.accuracy >= GOAL_ACCURACY

    def row(self) -> str:
        return f"{self.correct}, {self.high_missed}, {self.medium_missed}, {self.over}, {self.cost}"


def cell(decisions: Sequence[bool], rows: Sequence[Mapping[str, Any]]) -> Cell:
    """The cell of ``decisions`` (escalate or not, one per row) against the rows' labels: a row
    that expects escalation is high or medium by its level, one that does not is low."""
    counts = {f.name: 0 for f in fields(Cell)}
    for got, row in zip(decisions, rows, strict=True):
        if not row["expectedEscalation"]:
            counts["low_n"] += 1
            counts["over"] += got
        else:
            kind = "high" if row_level(row) == "high" else "medium"
            counts[f"{kind}_n"] += 1
            counts[f"{kind}_missed"] += not got
    return Cell(**counts)


def row_costs(decisions: Sequence[bool], rows: Sequence[Mapping[str, Any]]) -> list[int]:
    """Each prompt's routing cost: what its cell would add (``cell`` of that one row)."""
    return [cell([got], [row]).cost for got, row in zip(decisions, rows, strict=True)]


@dataclass(frozen=True)
class Comparison:
    """Two releases' summed routing costs on the same prompts, and how sure the difference is.

    Why: a round's verdict compares two sums over 120 to 180 prompts (29 against 27, 26 against
    26), and one high miss is 6 of them. ``interval`` is the 95 % paired-bootstrap interval of
    the difference ``cost_b - cost_a`` (prompts resampled with their two decisions, the eval's
    fixed seed and 2,000 draws), so a reader sees whether the data could tell the two apart."""

    n: int
    cost_a: int
    cost_b: int
    interval: tuple[float, float] | None
    b_cheaper: float  # the share of resamples in which B's sum is strictly below A's
    tied: float  # the share in which the two sums are equal

    @property
    def difference(self) -> int:
        return self.cost_b - self.cost_a


def compare(
    costs_a: Sequence[int],
    costs_b: Sequence[int],
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> Comparison:
    """``Comparison`` of per-prompt costs (``row_costs``) of A and B on the same prompts."""
    if len(costs_a) != len(costs_b):
        raise ValueError("the two releases must be scored on the same prompts")
    n = len(costs_a)
    deltas = [b - a for a, b in zip(costs_a, costs_b, strict=True)]
    if n < 2:
        return Comparison(n, sum(costs_a), sum(costs_b), None, 0.0, 0.0)
    sums = sorted(sum(deltas[i] for i in row) for row in resample_rows(n, resamples, seed))
    lo, hi = percentile(sums, 2.5), percentile(sums, 97.5)
    assert lo is not None and hi is not None
    cheaper = sum(d < 0 for d in sums) / len(sums)
    tied = sum(d == 0 for d in sums) / len(sums)
    return Comparison(n, sum(costs_a), sum(costs_b), (lo, hi), cheaper, tied)


def high_miss_bound(c: Cell) -> float | None:
    """The Wilson 95 % upper bound on the rate of high prompts left unescalated: with 0 of 40
    missed, the data still allow ~8.8 %. None without high prompts."""
    interval = wilson(c.high_missed, c.high_n)
    return interval[1] if interval else None


def pick(pooled: Mapping[str, Cell], incumbent: str) -> list[str]:
    """The pool's pick by the rule: among the releases that meet the goal, the lowest cost;
    when none does, the lowest cost among those with no more high misses than the incumbent.
    Returns every release tied at that cost (the rule breaks a tie on CPU, measured apart)."""
    eligible = [r for r, c in pooled.items() if c.meets_goal]
    if not eligible:
        limit = pooled[incumbent].high_missed
        eligible = [r for r, c in pooled.items() if c.high_missed <= limit]
    best = min(pooled[r].cost for r in eligible)
    return [r for r in eligible if pooled[r].cost == best]


def replaces(challenger: Cell, default: Cell) -> bool:
    """Whether the challenger takes the default's place on the same prompts: a strictly lower
    cost with no more high misses (the seed suite is the rule's separate check)."""
    return challenger.cost < default.cost and challenger.high_missed <= default.high_missed


def decisions_of(
    release: str, split_rows: Mapping[str, list[dict[str, Any]]], **extra: float
) -> dict[str, list[bool]]:
    """One release's decisions (escalate or not) on each split's prompts, as shipped on numpy
    (with ``extra`` risk.options, e.g. a narrower band), prompts only."""
    opts = {"release": release, "backend": "numpy", **extra}
    try:
        prof = make_profiler(RiskSettings(profiler="semantic", options=opts))
    except RiskSettingsError as exc:  # a bad --set: one line, as loomc run says it
        raise SystemExit(f"{release}: {exc}") from None
    if prof.name != "semantic":
        raise SystemExit(f"{release}: {getattr(prof, 'notice', None) or 'not available'}")
    out: dict[str, list[bool]] = {}
    for split, rows in split_rows.items():
        risks = profile_rows(prof, rows, use_hints=False)
        out[split] = [escalates(r, str(row["prompt"])) for r, row in zip(risks, rows, strict=True)]
    return out


def cells_of(
    release: str, split_rows: Mapping[str, list[dict[str, Any]]], **extra: float
) -> dict[str, Cell]:
    """One release's cell on each split (``decisions_of``)."""
    decisions = decisions_of(release, split_rows, **extra)
    return {split: cell(decisions[split], split_rows[split]) for split in split_rows}


def read_splits(names: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """Each named split's rows (``evals/routing/<name>.jsonl``); a split that cannot be read
    ends the run with load_rows' one line, not a traceback."""
    try:
        return {name: load_rows(ROOT / "evals" / "routing" / f"{name}.jsonl") for name in names}
    except ValueError as exc:
        raise SystemExit(str(exc)) from None


def total(cells: Mapping[str, Cell], splits: Sequence[str]) -> Cell:
    return sum((cells[split] for split in splits), Cell())


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pool", nargs="+", help="the releases pooled")
    ap.add_argument("--incumbent", help="the pool's incumbent (the ties clause)")
    ap.add_argument("--splits", nargs="+", help="the pooled splits (file stems)")
    ap.add_argument("--default", help="the default, judged against the pick on --unseen")
    ap.add_argument("--unseen", nargs="*", default=[], help="the splits the default never saw")
    ap.add_argument(
        "--set", nargs="*", default=[], metavar="KEY=NUMBER", help="risk.options for every release"
    )
    ap.add_argument(
        "--compare",
        nargs=2,
        metavar=("A", "B"),
        help="instead of the pool: B's summed cost against A's on --on, with a paired interval",
    )
    ap.add_argument("--on", nargs="+", default=[], help="--compare's splits (file stems)")
    args = ap.parse_args(argv)
    extra: dict[str, float] = {}
    for item in args.set:
        key, _, value = item.partition("=")
        try:
            extra[key] = float(value)
        except ValueError:
            ap.error(f"--set {item}: not KEY=NUMBER")
    if args.compare:
        if not args.on:
            ap.error("--compare needs --on SPLIT ...")
        return print_comparison(args.compare, args.on, extra)
    if not (args.pool and args.incumbent and args.splits):
        ap.error("give --pool, --incumbent and --splits, or --compare A B --on SPLIT ...")
    if args.incumbent not in args.pool:
        ap.error("--incumbent must be one of --pool")
    names = list(dict.fromkeys([*args.splits, *args.unseen]))
    split_rows = read_splits(names)
    releases = [*args.pool, *([args.default] if args.default else [])]
    cells = {
        r: cells_of(
            r, split_rows if r in args.pool else {s: split_rows[s] for s in args.unseen}, **extra
        )
        for r in releases
    }
    print("Cells: correct, high missed, medium missed, over-escalated, cost.\n")
    print(f"| release | {' | '.join(names)} | pooled: accuracy | high | medium | over | cost |")
    print("|---|" + "---|" * len(names) + "---:|---:|---:|---:|---:|")
    pooled = {r: total(cells[r], args.splits) for r in args.pool}
    for r in releases:
        seen = names if r in args.pool else args.unseen  # the default: only what it never saw
        row = " | ".join(cells[r][s].row() if s in seen else "(trained on it)" for s in names)
        p = pooled.get(r)
        tail = (
            (
                f"{100 * p.accuracy:.1f} % ({p.correct} of {p.n}) | {p.high_missed} | "
                f"{p.medium_missed} | {p.over} | {p.cost}"
            )
            if p
            else "(not pooled) | | | |"
        )
        print(f"| {r} | {row} | {tail} |")
    w = pick(pooled, args.incumbent)
    met = [r for r in args.pool if pooled[r].meets_goal]
    print(
        f"\nThe pool ({len(args.splits)} splits): goal met by {', '.join(met) or 'none'}; "
        f"pick W = {' or '.join(w)}" + (" (a tie: the rule's CPU tie-break)" if len(w) > 1 else "")
    )
    if args.default and args.unseen:
        d = total(cells[args.default], args.unseen)
        for r in w:
            c = total(cells[r], args.unseen)
            verdict = f"{r} replaces {args.default}" if replaces(c, d) else f"{args.default} stays"
            print(
                f"On {', '.join(args.unseen)} ({d.n} prompts): {args.default} {d.row()} "
                f"({100 * d.accuracy:.1f} %); {r} {c.row()} ({100 * c.accuracy:.1f} %): "
                f"{verdict} (seed suite and gates apart)."
            )
    return 0


def print_comparison(
    releases: Sequence[str], splits: Sequence[str], extra: Mapping[str, float]
) -> int:
    """``--compare A B``: each release's cells and high-miss bound on every split and pooled,
    then B's cost against A's with its paired interval (``compare``)."""
    split_rows = read_splits(splits)
    rows = [row for s in splits for row in split_rows[s]]
    decisions = {r: decisions_of(r, split_rows, **extra) for r in releases}
    print("Cells: correct, high missed, medium missed, over-escalated, cost.\n")
    print(f"| release | {' | '.join(splits)} | pooled | high missed: 95 % upper bound |")
    print("|---|" + "---|" * len(splits) + "---:|---:|")
    for r in releases:
        cells = [cell(decisions[r][s], split_rows[s]) for s in splits]
        pooled = sum(cells, Cell())
        bound = high_miss_bound(pooled)
        shown = (
            f"{100 * bound:.1f} % ({pooled.high_missed} of {pooled.high_n})"
            if bound is not None
            else "-"
        )
        print(f"| {r} | {' | '.join(c.row() for c in cells)} | {pooled.row()} | {shown} |")
    a, b = releases
    flat = {r: [d for s in splits for d in decisions[r][s]] for r in releases}
    c = compare(row_costs(flat[a], rows), row_costs(flat[b], rows))
    span = f"[{c.interval[0]:+.0f}, {c.interval[1]:+.0f}]" if c.interval else "(too few prompts)"
    print(
        f"\n{b} against {a} on {c.n} prompts: cost {c.cost_b} against {c.cost_a}, difference "
        f"{c.difference:+d}, 95 % paired-bootstrap interval {span}; {b} cheaper in "
        f"{100 * c.b_cheaper:.1f} % of {BOOTSTRAP_RESAMPLES:,} resamples, tied in "
        f"{100 * c.tied:.1f} %."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
