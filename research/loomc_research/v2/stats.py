"""Paired statistics over scored lanes (`statistical_analysis.py`, CONDUCTOR-V2 §5.7).

Three lanes of scored records (`deterministic`, `base`, `trained`) are paired on the sorted
intersection of their ids. Per lane and binary field: the rate and a Wilson 95% interval. Per
comparison (`trained_vs_deterministic`, `trained_vs_base`) and binary field: a paired bootstrap
of `trained_i - baseline_i` and an exact McNemar test; plus the regret and unsafe-rate
reductions (bootstrap with the arguments swapped, so `right_minus_left` = baseline − trained).

The bootstrap is the reference's, draw for draw: `random.Random(20260716 + Σ ord(c) for c in
key + field)`, each iteration the mean of N draws `d[rng.randrange(N)]`, and the CI is the sorted
means at `floor(0.025 (I-1))` and `floor(0.975 (I-1))`. With numpy installed the draws are
replayed from the same Mersenne Twister state in bulk (CPython's `randrange(N)` is
`getrandbits(k) = word >> (32 - k)` with rejection of values ≥ N), which is identical and ~50x
faster; without numpy it runs the plain loop.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from loomc.eval import stats as eval_stats
from loomc.eval.stats import Z95
from loomc_research.v2.score import InputError, iter_jsonl, r6

__all__ = [
    "BASE_SEED",
    "ITERATIONS",
    "LANES",
    "STAT_FIELDS",
    "Z95",
    "bootstrap",
    "bootstrap_seed",
    "load_scored",
    "mcnemar",
    "paired_statistics",
    "wilson",
]

BASE_SEED = 20260716
ITERATIONS = 10_000
LANES: tuple[str, ...] = ("deterministic", "base", "trained")
STAT_FIELDS: tuple[str, ...] = (
    "json_valid",
    "schema_valid",
    "plan_valid",
    "receipt_consistent",
    "constraint_satisfied",
    "policy_correct",
    "exact_plan",
    "quality_target_met",
)
COMPARISONS: tuple[tuple[str, str], ...] = (
    ("trained_vs_deterministic", "deterministic"),
    ("trained_vs_base", "base"),
)


def wilson(successes: int, n: int, z: float = Z95) -> list[float]:
    """`loomc.eval.stats.wilson` (clipped to [0, 1]) as the reference prints it: a list, r6."""
    interval = eval_stats.wilson(successes, n, z)
    if interval is None:
        raise ValueError("wilson interval needs n > 0")
    return [r6(interval[0]), r6(interval[1])]


def bootstrap_seed(key: str, field: str, base: int = BASE_SEED) -> int:
    return base + sum(ord(c) for c in key + field)


def mcnemar(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value via log-gamma, rounded to 12 dp; 1.0 when b + c = 0."""
    n = b + c
    if n == 0:
        return 1.0
    log_half_n = n * math.log(2)
    tail = 0.0
    for k in range(min(b, c) + 1):
        tail += math.exp(
            math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - log_half_n
        )
    return round(min(1.0, 2 * tail), 12)


def _seq_mean(values: Sequence[float]) -> float:
    total = 0.0
    for v in values:
        total += v
    return total / len(values)


def _means_python(d: Sequence[float], seed: int, iterations: int) -> list[float]:
    rng = random.Random(seed)
    n = len(d)
    out = []
    for _ in range(iterations):
        total = 0.0
        for _ in range(n):
            total += d[rng.randrange(n)]
        out.append(total / n)
    return out


def _means_numpy(d: Sequence[float], seed: int, iterations: int) -> list[float] | None:
    try:
        import numpy as np
    except ImportError:
        return None
    n = len(d)
    k = n.bit_length()
    if k > 32:
        return None
    state = random.Random(seed).getstate()[1]
    gen = np.random.MT19937()
    gen.state = {
        "bit_generator": "MT19937",
        "state": {"key": np.array(state[:624], dtype=np.uint32), "pos": int(state[624])},
    }
    need = iterations * n
    shift = np.uint64(32 - k)
    index = np.empty(need, dtype=np.int32)
    have = 0
    while have < need:
        raw = gen.random_raw(min(1 << 22, 2 * (need - have) + 64)) >> shift
        kept = raw[raw < n][: need - have]
        index[have : have + len(kept)] = kept
        have += len(kept)
    values = np.asarray(d, dtype=np.float64)
    means: list[float] = []
    block = max(1, (1 << 22) // max(n, 1))
    for start in range(0, iterations, block):
        drawn = values[index[start * n : (start + block) * n].reshape(-1, n)]
        # add.accumulate is a sequential left-to-right sum, like the reference's Python loop
        totals = np.add.accumulate(drawn, axis=1)[:, -1]
        means.extend(float(t) / n for t in totals)
    return means


def bootstrap(
    left: Sequence[float],
    right: Sequence[float],
    seed: int,
    iterations: int = ITERATIONS,
    *,
    use_numpy: bool = True,
) -> dict[str, Any]:
    """Paired bootstrap of `right_i - left_i` (floor-index percentiles, no interpolation)."""
    if len(left) != len(right) or not left:
        raise ValueError("bootstrap needs two non-empty paired samples")
    if iterations < 1:
        raise ValueError("bootstrap needs at least one iteration")
    d = [float(r) - float(lf) for lf, r in zip(left, right, strict=True)]
    means = (_means_numpy(d, seed, iterations) if use_numpy else None) or _means_python(
        d, seed, iterations
    )
    means.sort()
    lo = means[math.floor(0.025 * (iterations - 1))]
    hi = means[math.floor(0.975 * (iterations - 1))]
    return {
        "left_mean": r6(_seq_mean([float(x) for x in left])),
        "right_mean": r6(_seq_mean([float(x) for x in right])),
        "right_minus_left": r6(_seq_mean(d)),
        "ci95": [r6(lo), r6(hi)],
        "iterations": iterations,
        "seed": seed,
    }


_NEEDED = (*STAT_FIELDS, "unsafe_under_escalation")


def load_scored(path: str | Path) -> dict[str, dict[str, Any]]:
    """Scored records (`loomc conductor score --records`) by id; a nested `score` object is
    also accepted. Bad lines raise `InputError` naming `file:line`."""
    out: dict[str, dict[str, Any]] = {}
    for number, row in iter_jsonl(path):
        record = dict(row)
        if isinstance(row.get("score"), Mapping):
            record.update(row["score"])
        ident = record.get("id")
        if not isinstance(ident, str):
            raise InputError(f"{path}:{number}: scored record needs a string 'id'")
        for key in _NEEDED:
            if not isinstance(record.get(key), bool):
                raise InputError(f"{path}:{number}: scored record needs a boolean {key!r}")
        regret = record.get("utility_regret")
        if isinstance(regret, bool) or not isinstance(regret, int | float):
            raise InputError(f"{path}:{number}: scored record needs a numeric 'utility_regret'")
        if ident in out:
            raise InputError(f"{path}:{number}: duplicate id {ident!r}")
        out[ident] = record
    if not out:
        raise InputError(f"{path}: no scored records")
    return out


def paired_statistics(
    lanes: Mapping[str, Mapping[str, Mapping[str, Any]]],
    input_sha256: Mapping[str, str] | None = None,
    *,
    iterations: int = ITERATIONS,
    seed: int = BASE_SEED,
    use_numpy: bool = True,
) -> dict[str, Any]:
    """The `paired-statistics.json` document for lanes `deterministic`, `base`, `trained`."""
    missing = [lane for lane in LANES if lane not in lanes]
    if missing:
        raise ValueError(f"missing lanes: {', '.join(missing)}")
    ids = sorted(set.intersection(*(set(lanes[lane]) for lane in LANES)))
    if len(ids) < len(lanes["trained"]):
        raise ValueError(
            f"only {len(ids)} ids are shared by all three lanes, "
            f"fewer than the {len(lanes['trained'])} trained records"
        )
    if not ids:
        raise ValueError("no paired examples")
    n = len(ids)
    rows = {lane: [lanes[lane][i] for i in ids] for lane in LANES}

    def flags(lane: str, field: str) -> list[float]:
        return [1.0 if r[field] else 0.0 for r in rows[lane]]

    intervals: dict[str, Any] = {}
    for lane in LANES:
        intervals[lane] = {}
        for field in STAT_FIELDS:
            hits = sum(1 for r in rows[lane] if r[field])
            intervals[lane][field] = {"rate": r6(hits / n), "wilson95": wilson(hits, n)}

    comparisons: dict[str, Any] = {}
    for key, baseline in COMPARISONS:
        block: dict[str, Any] = {}
        for field in STAT_FIELDS:
            left, right = flags(baseline, field), flags("trained", field)
            entry = bootstrap(
                left, right, bootstrap_seed(key, field, seed), iterations, use_numpy=use_numpy
            )
            b = sum(1 for lf, r in zip(left, right, strict=True) if lf and not r)
            c = sum(1 for lf, r in zip(left, right, strict=True) if r and not lf)
            entry["mcnemar"] = {"baseline_only": b, "trained_only": c, "p_value": mcnemar(b, c)}
            block[field] = entry
        regret_t = [float(r["utility_regret"]) for r in rows["trained"]]
        regret_b = [float(r["utility_regret"]) for r in rows[baseline]]
        block["utility_regret_reduction"] = bootstrap(
            regret_t,
            regret_b,
            bootstrap_seed(key, "regret", seed),
            iterations,
            use_numpy=use_numpy,
        )
        block["unsafe_under_escalation_reduction"] = bootstrap(
            flags("trained", "unsafe_under_escalation"),
            flags(baseline, "unsafe_under_escalation"),
            bootstrap_seed(key, "unsafe", seed),
            iterations,
            use_numpy=use_numpy,
        )
        comparisons[key] = block

    return {
        "examples": n,
        "paired_by_example_id": True,
        "bootstrap_iterations": iterations,
        "seed": seed,
        "input_sha256": {lane: (input_sha256 or {}).get(lane) for lane in LANES},
        "lane_intervals": intervals,
        "comparisons": comparisons,
    }
