"""research/loso_router.py's pre-registered rule (semantic-v8, route9): the routing cost of a
held-out file and the ranking by it, on decisions built here (no training, no encoder)."""

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
        0.0,
        0.0,
        "static",
        kw.get("hazard", none),
        kw.get("calm", none),
        kw.get("situation", none),
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


def test_rank_puts_the_lowest_total_cost_first() -> None:
    lso = _loso()
    cheap = _scored(lso, [0.1, 0.9], [False, True], [False, True])
    dear = _scored(lso, [0.9, 0.1], [False, True], [False, True])
    keys = [("v6", "none", 6.0, "static"), ("v8", "none", 6.0, "static")]
    folds = {h: {keys[0]: dear, keys[1]: cheap} for h in lso.HELD_OUT}
    order, name, figs = lso.rank(folds)[0]
    assert name.startswith("v8, none, static, cost 6, delta 0.00")
    assert order[0] == 0 and all(f["cost"] == 0 for f in figs)
    assert "hard-test-5" in lso.HELD_OUT and "hard-test-6" not in lso.FILES
