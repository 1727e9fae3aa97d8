"""What a semantic profiler's settings resolve to (loomc.risk.semantic_plan), without a profiler.

Why: the thresholds a policy fixes decide every escalation of both stages; a default that leaked
in as "explicit" would silently override every release's trained thresholds, and a signal
threshold above the plain one would make a risk signal *harder* to escalate on."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loomc.policy.models import RiskSettings
from loomc.risk.semantic_plan import Thresholds, plan_minilm

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


class Trained(NamedTuple):
    threshold: float
    signal_threshold: float
    medium_threshold: float


class Head(NamedTuple):
    encoder: str
    cascade: str | None


def test_unset_settings_keep_the_release_thresholds() -> None:
    """RiskSettings' default high/medium thresholds (0.5, 0.3) are not the policy's choice."""
    plan = Thresholds.of(RiskSettings(), {})
    assert plan.fixed == {}
    assert plan.limits(Trained(0.19, 0.12, 0.07)) == (0.19, 0.12, 0.07)


def test_options_win_over_settings_fields_and_fields_count_when_set() -> None:
    settings = RiskSettings(high_threshold=0.4, medium_threshold=0.2, options={"threshold": 0.3})
    plan = Thresholds.of(settings, dict(settings.options))
    assert plan.fixed == {"threshold": 0.3, "medium_threshold": 0.2}
    assert plan.limits(Trained(0.19, 0.12, 0.07)) == (0.3, 0.12, 0.2)


@given(unit, unit, unit, st.one_of(st.none(), unit), st.one_of(st.none(), unit))
def test_the_signal_threshold_is_never_above_the_threshold(
    t: float, ts: float, m: float, fixed_t: float | None, fixed_ts: float | None
) -> None:
    opts = {"threshold": fixed_t, "signal_threshold": fixed_ts}
    threshold, signal = Thresholds.of(RiskSettings(options=opts), opts).escalation(
        Trained(t, ts, m)
    )
    assert signal <= threshold
    assert threshold == (t if fixed_t is None else fixed_t)


class Band(NamedTuple):
    cascade_low: float
    cascade_high: float


@given(unit, unit, st.one_of(st.none(), unit), st.one_of(st.none(), unit))
def test_each_band_edge_is_the_policys_where_fixed_else_the_releases(
    low: float, high: float, fixed_low: float | None, fixed_high: float | None
) -> None:
    opts = {"band_low": fixed_low, "band_high": fixed_high}
    plan = Thresholds.of(RiskSettings(options=opts), opts)
    assert plan.band(Band(low, high)) == (
        low if fixed_low is None else fixed_low,
        high if fixed_high is None else fixed_high,
    )
    # a band edge is not an escalation threshold: the decision's limits stay the release's
    assert plan.limits(Trained(0.19, 0.12, 0.07)) == (0.19, 0.12, 0.07)


def test_a_minilm_only_router_without_weights_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ImportError, match="MiniLM weights not installed"):
        plan_minilm({}, "v12", tmp_path / "r.npz", Head("minilm", None), lambda: None)


def test_a_cascade_without_weights_runs_its_static_stage(tmp_path: Path) -> None:
    plan = plan_minilm({}, "v12", tmp_path / "r.npz", Head("static", "second.npz"), lambda: None)
    assert plan.missing == "MiniLM weights not installed"
    assert plan.second_path is None  # the static stage decides every prompt


def test_cascade_false_never_looks_for_minilm(tmp_path: Path) -> None:
    def finder() -> Path | None:
        raise AssertionError("looked for MiniLM's weights though the cascade is off")

    plan = plan_minilm(
        {"cascade": False}, "v12", tmp_path / "r.npz", Head("static", "s.npz"), finder
    )
    assert plan.missing is None and plan.folder is None and plan.second_path is None


def test_a_missing_second_file_is_named(tmp_path: Path) -> None:
    weights = tmp_path / "minilm"
    weights.mkdir()
    with pytest.raises(FileNotFoundError, match=r"second\.npz"):
        plan_minilm(
            {"data": str(tmp_path / "r.npz")},
            "v12",
            tmp_path / "r.npz",
            Head("static", "second.npz"),
            lambda: weights,
        )
