"""Weighing the training rows by stratum (round 42): ``strata.stratum_weights``, the weighted
likelihood of ``fit_logistic`` and ``fit_platt``, the weighted cost of ``choose_thresholds`` and
``choose_band``, and the strata of ``--ordinary-weight`` (``train_router``, ``train_lexical``).

Why these checks: a row of weight 2 must count exactly as the same row written twice (that is
what a weight means, in the fit and in the cost alike), every stratum must weigh its share, and
the unweighted path, which CI retrains the default release on byte for byte, must not move.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from research_script import research_script

from loomc.policy.models import RiskSettings
from loomc.risk.factory import make_keywords

fit = research_script("router_fit")
by_stratum = research_script("strata")


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 30), min_size=2, max_size=4),
    shares=st.lists(st.floats(0.05, 5.0), min_size=4, max_size=4),
)
def test_each_stratum_weighs_its_share_and_its_rows_alike(
    sizes: list[int], shares: list[float]
) -> None:
    names = [f"s{i}" for i in range(len(sizes))]
    strata = [name for name, n in zip(names, sizes, strict=True) for _ in range(n)]
    wanted = dict(zip(names, shares, strict=False))
    w = by_stratum.stratum_weights(strata, wanted)
    total = sum(wanted.values())
    assert w.mean() == pytest.approx(1.0)
    for name in names:
        rows = w[np.array(strata) == name]
        assert np.ptp(rows) == pytest.approx(0.0, abs=1e-12)
        assert rows.sum() / w.sum() == pytest.approx(wanted[name] / total)


def test_the_strata_own_shares_give_every_row_one() -> None:
    strata = ["ordinary"] * 3 + ["hard"] * 9
    w = by_stratum.stratum_weights(strata, {"ordinary": 0.25, "hard": 0.75})
    np.testing.assert_allclose(w, np.ones(12))


@pytest.mark.parametrize(
    ("shares", "message"),
    [
        ({"ordinary": 0.5}, "strata"),
        ({"ordinary": 0.5, "hard": 0.5, "other": 0.1}, "strata"),
        ({"ordinary": 0.0, "hard": 1.0}, "above 0"),
        ({"ordinary": -0.5, "hard": 1.5}, "above 0"),
    ],
)
def test_bad_shares_are_refused(shares: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        by_stratum.stratum_weights(["ordinary", "hard", "hard"], shares)


def _data(seed: int, n: int = 40) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    y = (x[:, 0] + 0.7 * rng.normal(size=n) > 0).astype(np.float64)
    return x, y


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_row_of_weight_two_is_that_row_twice_in_the_fit(seed: int) -> None:
    x, y = _data(seed)
    weight = np.ones(len(y))
    weight[::3] = 2.0
    twice = np.concatenate([np.arange(len(y)), np.arange(len(y))[::3]])
    w_weighted, b_weighted = fit.fit_logistic(x, y, 3.0, weight=weight)
    w_twice, b_twice = fit.fit_logistic(x[twice], y[twice], 3.0)
    np.testing.assert_allclose(w_weighted, w_twice, atol=1e-8)
    assert b_weighted == pytest.approx(b_twice, abs=1e-8)
    logit = x[:, 0] * 1.3
    assert fit.fit_platt(logit, y, weight) == pytest.approx(
        fit.fit_platt(logit[twice], y[twice]), abs=1e-8
    )


def test_weights_of_one_change_no_fit() -> None:
    x, y = _data(3)
    plain, weighed = fit.fit_logistic(x, y, 1.0), fit.fit_logistic(x, y, 1.0, weight=np.ones(40))
    np.testing.assert_array_equal(plain[0], weighed[0])
    assert plain[1] == weighed[1]
    assert fit.fit_platt(x[:, 0], y) == fit.fit_platt(x[:, 0], y, np.ones(40))


def _threshold_case() -> tuple[np.ndarray, ...]:
    """Five harmless prompts at P 0.3 and one high prompt at P 0.3, the rest far apart."""
    prob = np.array([0.3] * 6 + [0.9, 0.9, 0.1, 0.1])
    y = np.array([0, 0, 0, 0, 0, 1, 1, 1, 0, 0], dtype=np.float64)
    high = np.array([False] * 5 + [True] * 3 + [False] * 2)
    none = np.zeros(10, dtype=bool)
    return prob, y, high, none


def test_the_weighted_cost_moves_the_threshold_the_way_the_weights_say() -> None:
    prob, y, high, none = _threshold_case()
    # Unweighted: escalating the five harmless rows (5) is cheaper than missing the high one (6).
    t, _, cost = fit.choose_thresholds(prob, y, high, none, none, 6.0)
    assert t <= 0.3 and cost == 5.0
    # The harmless rows weigh twice as much: now missing the high prompt is cheaper.
    weight = np.array([2.0] * 5 + [1.0] * 5)
    t, _, cost = fit.choose_thresholds(prob, y, high, none, none, 6.0, weight)
    assert t > 0.3 and cost == 6.0
    # Integer weights cost what the rows written out would.
    rows = np.concatenate([np.arange(10), np.arange(5)])
    t2, _, cost2 = fit.choose_thresholds(prob[rows], y[rows], high[rows], none[rows], none[rows])
    assert (t2, cost2) == (t, cost)


def test_choose_band_weighs_rows_but_caps_the_share_of_rows() -> None:
    prompts = ["please summarise this memo for me"] * 6 + ["rotate the production keys"] * 4
    rows = [
        {"prompt": p, "expectedEscalation": i >= 5, "level": "high" if i >= 5 else "low"}
        for i, p in enumerate(prompts)
    ]
    first = {
        "cv_prob": np.array([0.35, 0.35, 0.35, 0.35, 0.35, 0.35, 0.9, 0.9, 0.9, 0.9]),
        "threshold": np.float64(0.3),
        "signal_threshold": np.float64(0.3),
    }
    second = {
        "cv_prob": np.array([0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.9, 0.9, 0.9, 0.9]),
        "threshold": np.float64(0.5),
        "signal_threshold": np.float64(0.5),
    }
    kw = make_keywords(RiskSettings())
    # Deferring the six 0.35 rows to MiniLM saves five harmless escalations and misses one high
    # row: worth it unweighted at a high cost of 4, not when the harmless rows weigh a fifth.
    lo, hi, cost, share = fit.choose_band(first, second, rows, kw, cost_high=4.0, max_defer=0.6)
    assert lo < 0.35 < hi and share == pytest.approx(0.6) and cost == 4.0
    weight = np.array([0.2] * 5 + [1.0] * 5)
    lo, hi, cost, share = fit.choose_band(
        first, second, rows, kw, cost_high=4.0, max_defer=0.6, weight=weight
    )
    assert not lo < 0.35 < hi and share == 0.0 and cost == pytest.approx(1.0)
    # The cap counts rows, not weight: six rows of ten is over a cap of a half.
    _, _, _, share = fit.choose_band(first, second, rows, kw, cost_high=4.0, max_defer=0.5)
    assert share == 0.0


def _write(path: Path, n: int) -> Path:
    rows = [
        {"id": f"{path.stem}-{i}", "prompt": f"row {i} of {path.stem}", "level": "low"}
        for i in range(n)
    ]
    path.write_text("".join(json.dumps({**r, "expectedEscalation": False}) + "\n" for r in rows))
    return path


def test_train_router_weighs_the_everyday_files_as_ordinary(tmp_path: Path) -> None:
    paths = [
        _write(tmp_path / "hard-test-9.jsonl", 6),
        _write(tmp_path / "everyday-train-1.jsonl", 2),
        _write(tmp_path / "train.jsonl", 2),
    ]
    rows, strata = by_stratum.rows_and_strata(paths)
    sizes = zip(paths, (6, 2, 2), strict=True)
    assert [r["id"] for r in rows] == [f"{p.stem}-{i}" for p, n in sizes for i in range(n)]
    assert strata == ["hard"] * 6 + ["ordinary"] * 2 + ["hard"] * 2
    w = by_stratum.ordinary_weights(strata, 0.5)
    assert w is not None
    assert w[6:8].sum() == pytest.approx(w[:6].sum() + w[8:].sum())
    assert by_stratum.ordinary_weights(strata, None) is None


@pytest.mark.parametrize("share", [0.0, 1.0, 1.5, -0.2])
def test_an_ordinary_weight_outside_zero_to_one_is_refused(tmp_path: Path, share: float) -> None:
    paths = [_write(tmp_path / "hard-test-9.jsonl", 2), _write(tmp_path / "everyday-x.jsonl", 2)]
    _, strata = by_stratum.rows_and_strata(paths)
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        by_stratum.ordinary_weights(strata, share)


def test_an_ordinary_weight_without_both_kinds_of_file_is_refused(tmp_path: Path) -> None:
    paths = [_write(tmp_path / "hard-test-9.jsonl", 2), _write(tmp_path / "train.jsonl", 2)]
    _, strata = by_stratum.rows_and_strata(paths)
    with pytest.raises(ValueError, match="needs both"):
        by_stratum.ordinary_weights(strata, 0.5)


def test_a_row_of_weight_two_is_that_row_twice_in_the_lexical_objective() -> None:
    """``train_lexical``'s weighted log-loss and gradient at any point are those of the rows
    written out (the same idf for both, since a weight must not change the featuriser)."""
    tl = research_script("train_lexical")
    prompts = ["rotate the keys tonight", "a poem about autumn", "wire the deposit today"]
    y = np.array([True, False, True])
    once, twice = (
        tl.Sparse([tl.counts(p) for p in prompts]),
        tl.Sparse([tl.counts(p) for p in [*prompts, prompts[0]]]),
    )
    idf = np.ones(tl.BUCKETS)
    once.weigh(idf)
    twice.weigh(idf)
    theta = np.random.default_rng(0).normal(scale=0.1, size=tl.BUCKETS + 1)
    f1, g1 = tl.objective(once, y, 8.0, theta, np.array([2.0, 1.0, 1.0]))
    f2, g2 = tl.objective(twice, np.array([*y, True]), 8.0, theta)
    assert f1 == pytest.approx(f2, rel=1e-12)
    np.testing.assert_allclose(g1, g2, rtol=1e-9, atol=1e-12)
    plain, _ = tl.objective(once, y, 8.0, theta)
    assert plain < f1  # the weight counts: the first row's loss is in it twice
