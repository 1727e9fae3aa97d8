"""research/loso_router.py's pre-registered rule (semantic-v9, route10): the routing cost of a
held-out file, the seed gate and the ranking by them, on decisions built here (no training, no
encoder)."""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import numpy as np
from research_script import RESEARCH


def _loso() -> Any:
    """The script as a module, registered under its name *before* it runs: its dataclasses look
    their module up in ``sys.modules`` while they are created (``research_script`` does not)."""
    if "loso_router" not in sys.modules:
        spec = importlib.util.spec_from_file_location("loso_router", RESEARCH / "loso_router.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules["loso_router"] = mod
        spec.loader.exec_module(mod)
    return sys.modules["loso_router"]


def _scored(lso: Any, prob: list[float], y: list[bool], high: list[bool], **kw: Any) -> Any:
    n = len(prob)
    p = np.array(prob)
    none = np.zeros(n, dtype=bool)
    stage = lso.Stage(p, 0.5, 0.5)
    return lso.Scored(
        np.array(y),
        np.array(high),
        none,
        none,
        stage,
        stage,
        kw.get("low", 0.0),
        kw.get("high_edge", 0.0),
        kw.get("mode", "static"),
        kw.get("hazard", none),
        kw.get("calm", none),
        kw.get("situation", none),
        kw.get("purpose", none),
        kw.get("rules", ()),
    )


def test_cost_counts_over_medium_and_high_as_eval_routers_does() -> None:
    lso = _loso()
    # one low escalated (1), one medium missed (2), one high missed (6), one high caught
    s = _scored(lso, [0.9, 0.1, 0.1, 0.9], [False, True, True, True], [False, False, True, True])
    f = s.figures(0.0)
    assert (f["over"], f["med_missed"], f["high_missed"], f["cost"]) == (1, 1, 1, 9)
    assert f["acc"] == 0.25
    # a shift of 0.45 escalates everything: three escalating rows caught, the low one over
    assert s.figures(0.45)["cost"] == 1


def test_situation_floor_escalates_only_what_it_names() -> None:
    lso = _loso()
    situation = np.array([False, True])
    s = _scored(
        lso,
        [0.1, 0.1],
        [False, True],
        [False, True],
        situation=situation,
        rules=("situation-floor",),
    )
    assert list(s.escalate(0.0)) == [False, True]


def test_purpose_floor_escalates_and_play_calm_lowers_only_what_they_name() -> None:
    lso = _loso()
    purpose = np.array([False, True, False])
    quiet = np.array([False, False, True])
    s = _scored(
        lso,
        [0.1, 0.1, 0.9],
        [False, True, False],
        [False, True, False],
        purpose=purpose,
        calm=quiet,
        rules=("purpose-floor", "play-calm"),
    )
    assert list(s.escalate(0.0)) == [False, True, False]
    assert list(_scored(lso, [0.1, 0.1, 0.9], [False] * 3, [False] * 3).escalate(0.0)) == [
        False,
        False,
        True,
    ]


def test_rank_puts_the_lowest_total_cost_first() -> None:
    lso = _loso()
    cheap = _scored(lso, [0.1, 0.9], [False, True], [False, True])
    dear = _scored(lso, [0.9, 0.1], [False, True], [False, True])
    keys = [("v6", "none", 6.0, "static", 0.0), ("v9", "none", 6.0, "static", 0.0)]
    folds = {h: {keys[0]: dear, keys[1]: cheap} for h in lso.HELD_OUT}
    order, name, figs = lso.rank(folds)[0]
    assert name.startswith("v9, none, static, cost 6, delta 0.00")
    assert order[1] == 0 and all(f["cost"] == 0 for f in figs)
    assert "hard-test-6" in lso.HELD_OUT and "hard-test-7" not in lso.FILES
    assert len(lso.HELD_OUT) == 6


def test_the_seed_gate_comes_before_the_cost() -> None:
    """A candidate whose all-files retrain over-escalates a seed prompt ranks after every one
    that routes the seed suite, however cheap its folds are."""
    lso = _loso()
    cheap = _scored(lso, [0.1, 0.9], [False, True], [False, True])
    dear = _scored(lso, [0.9, 0.1], [False, True], [False, True])
    keys = [("v6", "none", 6.0, "static", 0.0), ("v9", "none", 6.0, "static", 0.0)]
    folds = {h: {keys[0]: dear, keys[1]: cheap} for h in lso.HELD_OUT}
    seed_ok = _scored(lso, [0.1], [False], [False])
    seed_bad = _scored(lso, [0.9], [False], [False])
    order, name, _ = lso.rank(folds, {keys[0]: seed_ok, keys[1]: seed_bad})[0]
    assert name.startswith("v6, none, static") and order[0] == 0


def test_at_equal_cost_the_band_that_defers_less_ranks_first() -> None:
    lso = _loso()
    wide = _scored(lso, [0.1, 0.9], [False, True], [False, True], mode="cascade", high_edge=1.0)
    narrow = _scored(
        lso, [0.1, 0.9], [False, True], [False, True], mode="cascade", low=0.2, high_edge=0.3
    )
    assert wide.figures(0.0)["deferred"] == 1.0 and narrow.figures(0.0)["deferred"] == 0.0
    keys = [("v6", "none", 6.0, "cascade", 0.35), ("v9", "none", 6.0, "cascade", 0.1)]
    folds = {h: {keys[0]: wide, keys[1]: narrow} for h in lso.HELD_OUT}
    assert lso.rank(folds)[0][1].startswith("v9, none, cascade (defer <= 0.10)")
