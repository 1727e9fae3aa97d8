"""Small, dependency-free statistics for eval reports.

Every function returns ``None`` when the number cannot be computed from the data (too few
samples), so reports can show a blank instead of an invented value.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

# Two-sided 97.5% Student t quantiles for df = 1..30; beyond that the normal value is close enough.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
Z95 = 1.959963984540054
BOOTSTRAP_SEED = 20240917
BOOTSTRAP_RESAMPLES = 2000


def t975(df: int) -> float:
    return _T975[df - 1] if df <= len(_T975) else Z95


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def mean_ci(values: Sequence[float]) -> tuple[float, float] | None:
    """95% t interval for the mean; None below two samples (no spread is measurable)."""
    n = len(values)
    if n < 2:
        return None
    m = sum(values) / n
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1))
    half = t975(n - 1) * sd / math.sqrt(n)
    return (m - half, m + half)


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval for a proportion; None when there are no trials."""
    if n <= 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (numpy's default method); q in [0, 100]."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def paired_bootstrap(
    deltas: Sequence[float],
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float] | None:
    """95% percentile interval of the mean paired delta, resampling pairs with a fixed seed.

    None below two pairs: one pair cannot show how much the delta varies."""
    n = len(deltas)
    if n < 2:
        return None
    rng = random.Random(seed)
    means = sorted(sum(deltas[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    lo = percentile(means, 2.5)
    hi = percentile(means, 97.5)
    assert lo is not None and hi is not None
    return (lo, hi)
