"""research/weighted_report.py: the weighted cost is the weighted per-stratum mean, its interval
is bootstrapped within each stratum, and a bad command line ends in one line before any
profiling (round 40's and 41's rule, evals/routing/README.md)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from research_script import research_script

wr = research_script("weighted_report")

costs = st.lists(st.sampled_from((0, 1, 2, 6)), min_size=1, max_size=30)


def test_the_weighted_cost_is_the_weighted_mean_of_each_strata_mean() -> None:
    # ordinary: 3 over-escalations in 4 prompts; hard: one high miss in 3 prompts
    got = wr.weighted_mean([[1, 1, 0, 1], [6, 0, 0]], [0.5, 0.5])
    assert abs(got - (0.5 * 3 / 4 + 0.5 * 6 / 3)) < 1e-12
    assert abs(wr.weighted_mean([[1, 1, 0, 1], [6, 0, 0]], [1.0, 0.0]) - 0.75) < 1e-12


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_stratum_whose_deltas_are_all_equal_adds_no_spread(data: Any) -> None:
    """Resampling stays inside each stratum: with every delta of a stratum equal, every
    resample's weighted difference is w1 * d1 + w2 * d2 exactly, whatever the sizes."""
    n1, n2 = data.draw(st.integers(1, 40)), data.draw(st.integers(1, 40))
    d1, d2 = data.draw(st.sampled_from((-6, -1, 0, 1, 6))), data.draw(st.sampled_from((-1, 0, 2)))
    w1 = data.draw(st.sampled_from((0.2, 0.5, 0.8)))
    a = [[6] * n1, [2] * n2]
    b = [[6 + d1] * n1, [2 + d2] * n2]
    got = wr.compare(a, b, [w1, 1 - w1], resamples=200, seed=0)
    expected = w1 * d1 + (1 - w1) * d2
    assert abs(got.difference - expected) < 1e-12
    assert all(abs(edge - expected) < 1e-12 for edge in got.interval)
    assert got.b_cheaper == (1.0 if expected < -1e-12 else 0.0)


@settings(max_examples=60, deadline=None)
@given(costs, costs, st.data())
def test_the_interval_lies_between_the_extreme_deltas_and_is_repeatable(
    a1: list[int], a2: list[int], data: Any
) -> None:
    b1 = data.draw(st.lists(st.sampled_from((0, 1, 2, 6)), min_size=len(a1), max_size=len(a1)))
    b2 = data.draw(st.lists(st.sampled_from((0, 1, 2, 6)), min_size=len(a2), max_size=len(a2)))
    got = wr.compare([a1, a2], [b1, b2], [0.5, 0.5], resamples=300, seed=3)
    d1 = [y - x for x, y in zip(a1, b1, strict=True)]
    d2 = [y - x for x, y in zip(a2, b2, strict=True)]
    lo, hi = got.interval
    assert 0.5 * min(d1) + 0.5 * min(d2) - 1e-9 <= lo <= hi <= 0.5 * max(d1) + 0.5 * max(d2) + 1e-9
    assert got == wr.compare([a1, a2], [b1, b2], [0.5, 0.5], resamples=300, seed=3)
    if all(d <= 0 for d in d1 + d2) and any(d < 0 for d in d1 + d2):
        assert hi <= 0


@pytest.mark.parametrize(
    ("weights", "match"),
    [([0.7, 0.7], "summing to 1"), ([1.2, -0.2], "summing to 1"), ([1.0], "one weight each")],
)
def test_weights_that_are_not_shares_are_refused(weights: list[float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        wr.compare([[1], [0]], [[0], [0]], weights, resamples=10, seed=0)


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--weights", "0.7", "0.7"], "the weights must be shares summing to 1"),
        (["--weights", "1"], "--weights needs 2 shares"),
    ],
)
def test_a_bad_command_line_ends_in_one_line_before_any_profiling(
    extra: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--compare", "v26", "v27", "--stratum", "o", "no-such-file"]
    argv += ["--stratum", "h", "no-such-file-either", *extra]
    with pytest.raises(SystemExit) as exc:
        wr.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert says in err  # refused before reading a file (neither exists)


def test_a_file_that_cannot_be_read_ends_the_run_in_one_line() -> None:
    argv = ["--compare", "v26", "v27", "--stratum", "o", "no-such-file", "--stratum", "h", "x"]
    with pytest.raises(SystemExit) as exc:
        wr.main(argv)
    message = str(exc.value.code)
    assert message.endswith("no-such-file.jsonl: cannot read: No such file or directory")
    assert "\n" not in message
