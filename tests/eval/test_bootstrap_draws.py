"""The paired bootstrap draws its resamples in bulk (``loomc.eval.stats.resample_rows``) but
must give, bit for bit, what drawing each index with ``randrange`` gave: receipts are pinned."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.eval import stats


def _old_bootstrap(deltas: list[float], resamples: int, seed: int) -> tuple[float, float] | None:
    """``paired_bootstrap`` as it was: one ``randrange`` per drawn pair."""
    n = len(deltas)
    if n < 2:
        return None
    rng = random.Random(seed)
    means = sorted(sum(deltas[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    lo, hi = stats.percentile(means, 2.5), stats.percentile(means, 97.5)
    assert lo is not None and hi is not None
    return (lo, hi)


sizes = st.integers(2, 600) | st.sampled_from([2, 3, 4, 63, 64, 65, 127, 128, 129, 1024, 1025])


@settings(max_examples=150, deadline=None)
@given(sizes, st.integers(1, 12), st.integers(0, 2**64), st.booleans())
def test_rows_are_the_indices_randrange_draws(
    n: int, resamples: int, seed: int, use_numpy: bool
) -> None:
    rng = random.Random(seed)
    want = [[rng.randrange(n) for _ in range(n)] for _ in range(resamples)]
    assert [list(row) for row in stats.resample_rows(n, resamples, seed, use_numpy)] == want


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=0, max_size=300),
    st.integers(1, 50),
    st.integers(0, 2**32),
)
def test_the_interval_is_the_old_one_bit_for_bit(
    deltas: list[float], resamples: int, seed: int
) -> None:
    assert stats.paired_bootstrap(deltas, resamples, seed) == _old_bootstrap(
        deltas, resamples, seed
    )


def test_the_default_interval_of_many_pairs_is_unchanged() -> None:
    rng = random.Random(7)
    deltas = [rng.gauss(0.0, 1.0) for _ in range(3000)]
    assert stats.paired_bootstrap(deltas, 200) == _old_bootstrap(deltas, 200, stats.BOOTSTRAP_SEED)
