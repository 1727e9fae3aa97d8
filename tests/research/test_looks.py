"""research/looks.py: repeated looks cross as often as the group-sequential tables say, a later
look never lowers the family's rate, and the last look's bound holds the rate it was asked for."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from research_script import research_script

looks = research_script("looks")


@pytest.fixture(scope="module")
def five_equal() -> np.ndarray:
    return np.asarray(looks.null_paths([100, 200, 300, 400, 500]))


def test_one_look_at_the_intervals_edge_crosses_two_and_a_half_percent() -> None:
    paths = looks.null_paths([250])
    assert abs(looks.crossing_rate(paths, [looks.Z_975]) - 0.025) < 0.0015


def test_two_equal_looks_at_196_cross_as_armitage_mcpherson_and_rowe_found(
    five_equal: np.ndarray,
) -> None:
    """Two equally spaced looks at the nominal 5 % two-sided edge: 8.3 % two-sided (Armitage,
    McPherson and Rowe 1969), so about 4.15 % on one side; five looks 14.2 %, so about 7.1 %."""
    two = five_equal[:, [0, 1]]
    assert abs(looks.crossing_rate(two, [looks.Z_975] * 2) - 0.0415) < 0.002
    assert abs(looks.crossing_rate(five_equal, [looks.Z_975] * 5) - 0.071) < 0.003


@pytest.mark.parametrize(("k", "pocock"), [(2, 2.178), (3, 2.289), (5, 2.413)])
def test_one_bound_for_every_look_is_pococks(five_equal: np.ndarray, k: int, pocock: float) -> None:
    """Pocock's constants for K equally spaced looks at a two-sided 5 % (one-sided 2.5 % each
    side; Jennison and Turnbull, table 2.1)."""
    assert abs(looks.constant_bound(five_equal[:, :k], 0.025) - pocock) < 0.02


def test_the_last_bound_holds_the_family_at_the_rate_asked(five_equal: np.ndarray) -> None:
    earlier = [3.0, 3.0, 3.0, 3.0]
    bound = looks.last_bound(five_equal, earlier, 0.025)
    assert bound is not None and bound > looks.Z_975
    rate = looks.crossing_rate(five_equal, [*earlier, bound])
    assert abs(rate - 0.025) <= 2 / five_equal.shape[0]


def test_no_last_bound_when_the_earlier_looks_already_spent_the_rate() -> None:
    """Round 36's case: three looks at 1.96 had spent more than 5 % before the fourth."""
    paths = looks.null_paths([180, 360, 540, 1360])
    assert looks.crossing_rate(paths[:, :3], [looks.Z_975] * 3) > 0.05
    assert looks.last_bound(paths, [looks.Z_975] * 3, 0.05) is None
    assert 0.065 < looks.crossing_rate(paths, [looks.Z_975] * 4) < 0.075


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 400), min_size=1, max_size=5, unique=True),
    st.lists(st.floats(0.5, 3.5), min_size=5, max_size=5),
    st.integers(0, 2**31 - 1),
)
def test_another_look_never_lowers_the_rate_and_a_higher_bound_never_raises_it(
    sizes: list[int], bounds: list[float], seed: int
) -> None:
    ns = sorted(sizes)
    paths = looks.null_paths(ns, draws=2_000, seed=seed)
    mine = bounds[: len(ns)]
    rate = looks.crossing_rate(paths, mine)
    for drop in range(len(ns)):
        keep = [i for i in range(len(ns)) if i != drop]
        if keep:
            assert looks.crossing_rate(paths[:, keep], [mine[i] for i in keep]) <= rate
    assert looks.crossing_rate(paths, [b + 0.25 for b in mine]) <= rate


@pytest.mark.parametrize("bad", [["5", "3"], ["0", "10"], ["7", "7"]])
def test_looks_that_do_not_grow_end_in_one_line(
    bad: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert looks.main(bad) == 2
    err = capsys.readouterr().err
    assert err.startswith("looks: looks must be increasing") and err.count("\n") == 1
