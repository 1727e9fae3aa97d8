"""Small, dependency-free statistics for eval reports.

Every function returns ``None`` when the number cannot be computed from the data (too few
samples), so reports can show a blank instead of an invented value.
"""

from __future__ import annotations

import math
import random
import sys
from array import array
from collections.abc import Iterator, Sequence

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
    pick = deltas.__getitem__
    means = sorted(sum(map(pick, row)) / n for row in resample_rows(n, resamples, seed))
    lo = percentile(means, 2.5)
    hi = percentile(means, 97.5)
    assert lo is not None and hi is not None
    return (lo, hi)


def resample_rows(
    n: int, resamples: int, seed: int, use_numpy: bool | None = None
) -> Iterator[Sequence[int]]:
    """The indices ``random.Random(seed).randrange(n)`` draws, ``n`` per resample, in order.

    Why not ``randrange`` itself: at 50,000 pairs x 2,000 resamples, ~0.3 us a draw made each
    interval of a 100,000-run eval's receipt cost ~30 s of CPU. CPython draws ``randrange(n)``
    as ``getrandbits(k)`` (k = n's bit length, at most 32: one 32-bit Mersenne Twister word
    shifted right by 32 - k), drawn again while not below n; and ``getrandbits(32 * m)`` is
    the next m words, little-endian. So the words come in bulk, and the shift and the
    rejection run over them (in numpy when the process has it loaded: ``use_numpy`` None),
    giving the same indices. The first draws are checked against ``randrange``; where they
    differ (another implementation), ``randrange`` draws them all. A row is an array of
    8-byte ints, and words come 8,192 at a time: the receipt's end of a 100,000-run eval is
    its peak of memory, and lists of int objects there cost ~4 MiB."""
    rng = random.Random(seed)
    k = n.bit_length()
    if use_numpy is None:
        use_numpy = "numpy" in sys.modules  # never imported for this
    accepted = _accepted_numpy if use_numpy else _accepted
    if k > 32 or list(accepted(random.Random(seed), 256, 32 - k, n))[:64] != _first(n, seed):
        for _ in range(resamples):
            yield [rng.randrange(n) for _ in range(n)]
        return
    shift = 32 - k
    pending = array("q")
    for _ in range(resamples):
        while len(pending) < n:
            pending.extend(accepted(rng, _CHUNK, shift, n))
        row, pending = pending[:n], pending[n:]
        yield row


_CHUNK = 8192  # words drawn at a time


def _first(n: int, seed: int, draws: int = 64) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(n) for _ in range(draws)]


def _accepted(rng: random.Random, words: int, shift: int, n: int) -> array[int]:
    """The next ``words`` 32-bit outputs of ``rng``, shifted, those below ``n``, in order."""
    out = array(_WORD, rng.getrandbits(32 * words).to_bytes(4 * words, "little"))
    if sys.byteorder == "big":
        out.byteswap()
    return array("q", [r for r in (w >> shift for w in out) if r < n])


def _accepted_numpy(rng: random.Random, words: int, shift: int, n: int) -> array[int]:
    import numpy as np

    raw = np.frombuffer(rng.getrandbits(32 * words).to_bytes(4 * words, "little"), "<u4")
    raw = raw >> shift
    return array("q", raw[raw < n].astype("=i8").tobytes())


_WORD = "I" if array("I").itemsize == 4 else "L"  # a C type of 32 bits
