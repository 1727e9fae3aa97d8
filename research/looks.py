"""What repeated looks at a growing pool cost: the chance that at least one look crosses its
boundary when the two releases being compared are in truth equal (issue 17).

    PYTHONPATH=$PWD:$PWD/research python research/looks.py 180 360 540 1380
    PYTHONPATH=$PWD:$PWD/research python research/looks.py 180 360 540 1380 --target 0.05

Why: from round 33 the v22 question pooled fresh files and looked at the paired interval after
each round (180, 360, 540 prompts, then 1,380 planned). Each look alone has a one-sided 2.5 %
chance of a false "cheaper" (the 95 % interval's upper edge below zero), but four looks at the
same growing pool have more, and a rule must state how much before its files exist. The pooled
difference is a sum of independent per-prompt differences, so under "no difference" its
standardised value at n prompts follows Brownian motion at time n: looks at n_1 < n_2 < ...
are correlated by sqrt(n_i / n_j). This simulates those paths (a fixed seed, so the printed
figures repeat) and gives the family-wise rate of the boundaries, and, for ``--target``, the
one boundary the last look would need to hold the family at that rate, or that none can
(the earlier looks alone already spent more). Round 36's rule quotes its first figure.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np

Z_975 = 1.959963984540054  # the 95 % interval's edge: a one-sided 2.5 % look
DRAWS = 400_000
SEED = 20240917  # the eval's bootstrap seed (loomc.eval.stats.BOOTSTRAP_SEED)


def null_paths(ns: Sequence[int], draws: int = DRAWS, seed: int = SEED) -> np.ndarray:
    """``draws`` standardised pooled differences at each look (rows: paths; columns: looks) when
    each prompt's difference has mean zero: independent increments, the sum over n prompts
    scaled by sqrt(n)."""
    sizes = np.asarray(ns, dtype=float)
    if sizes.ndim != 1 or sizes.size == 0 or np.any(sizes <= 0) or np.any(np.diff(sizes) <= 0):
        raise ValueError(f"looks must be increasing positive prompt counts, got {list(ns)}")
    steps = np.diff(np.concatenate(([0.0], sizes)))
    rng = np.random.default_rng(seed)
    sums = np.cumsum(rng.standard_normal((draws, sizes.size)) * np.sqrt(steps), axis=1)
    return np.asarray(sums / np.sqrt(sizes))


def crossing_rate(paths: np.ndarray, bounds: Sequence[float]) -> float:
    """The share of paths whose value crosses the look's bound at one look or more."""
    limits = np.asarray(bounds, dtype=float)
    if limits.shape != (paths.shape[1],):
        raise ValueError(f"one bound a look: {paths.shape[1]} looks, {limits.size} bounds")
    return float(np.mean(np.any(paths > limits, axis=1)))


def last_bound(paths: np.ndarray, earlier: Sequence[float], target: float) -> float | None:
    """The bound the last look needs so that all looks together cross at ``target`` (the
    earlier looks keeping theirs); ``None`` when the earlier looks alone cross more often."""
    head = np.asarray(earlier, dtype=float)
    if head.shape != (paths.shape[1] - 1,):
        raise ValueError(f"{paths.shape[1] - 1} earlier bounds needed, got {head.size}")
    crossed = np.any(paths[:, :-1] > head, axis=1)
    spent = float(np.mean(crossed))
    if spent >= target:
        return None
    # Paths not yet crossed cross at the last look above the bound; the share wanted among all
    # paths is target - spent, so the bound is that upper quantile of the survivors' last value.
    last = np.sort(paths[~crossed, -1])
    k = round((target - spent) * paths.shape[0])
    return float(last[-k]) if k > 0 else float("inf")


def constant_bound(paths: np.ndarray, target: float) -> float:
    """One bound for every look that crosses at ``target`` (Pocock's design, by bisection)."""
    lo, hi = 0.0, 6.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if crossing_rate(paths, [mid] * paths.shape[1]) > target:
            lo = mid
        else:
            hi = mid
    return hi


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("looks", nargs="+", type=int, help="pooled prompts at each look, increasing")
    ap.add_argument("--z", type=float, default=Z_975, help="every look's bound (default 1.96)")
    ap.add_argument("--target", type=float, help="a family-wise rate the last look must hold")
    ap.add_argument("--draws", type=int, default=DRAWS)
    ap.add_argument("--seed", type=int, default=SEED)
    args = ap.parse_args(argv)
    try:
        paths = null_paths(args.looks, args.draws, args.seed)
    except ValueError as err:
        print(f"looks: {err}", file=sys.stderr)
        return 2
    k = len(args.looks)
    print(f"{k} looks at {', '.join(str(n) for n in args.looks)} prompts, each at z > {args.z:.3f}")
    print(f"  one look alone: {crossing_rate(paths[:, -1:], [args.z]):.4f}")
    if k > 1:
        print(f"  the earlier looks: {crossing_rate(paths[:, :-1], [args.z] * (k - 1)):.4f}")
    print(f"  all {k} looks: {crossing_rate(paths, [args.z] * k):.4f}")
    if args.target is not None:
        bound = last_bound(paths, [args.z] * (k - 1), args.target)
        held = "none: the earlier looks alone exceed it" if bound is None else f"z > {bound:.3f}"
        print(f"  the last look's bound for {args.target:.4f} in all: {held}")
        print(f"  one bound for every look (Pocock): z > {constant_bound(paths, args.target):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
