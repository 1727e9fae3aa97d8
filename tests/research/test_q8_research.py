"""The q8 research scripts' pure parts: the outlier-channel rule (``calibrate_q8.py``) and the
LOSO file list (``loso_q8.py``): what a fold may learn from, in the trainer's order."""

from __future__ import annotations

import numpy as np
from research_script import research_script


def test_outliers_are_the_channels_far_above_the_median_largest_first() -> None:
    cal = research_script("calibrate_q8")
    m = np.ones(32)
    m[7], m[3], m[20] = 30.0, 5.0, 3.9  # 30x and 5x the median: out; 3.9x: stays int8
    table = cal.outliers({"0.inter": m, "0.qkv": np.ones(32), "1.out": np.arange(1, 33.0)})
    assert table == {"0.inter": (7, 3)}
    many = np.ones(16)
    many[:6] = [50, 40, 30, 20, 10, 9]
    assert cal.outliers({"2.inter": many})["2.inter"] == (0, 1, 2, 3)  # at most TOP


def test_loso_folds_learn_from_v8s_files_and_the_spent_splits() -> None:
    loso = research_script("loso_q8")
    names = loso.files("v10")
    assert names[: len(loso.V8_FILES) - 5] == loso.V8_FILES[:5]
    held = loso.RUNS["v10"].held_out
    assert set(held) <= set(names) and "hard-test-7" in names
    assert not any(n.startswith("hard-test-8") for n in names)
    extra = (loso.lr.CORPUS / f"{loso.EXTRA}.jsonl").exists()
    assert (loso.EXTRA in names) == extra


def test_route11_folds_learn_from_v9s_files_and_both_spent_splits_never_the_extra() -> None:
    """F14: v9's twelve (its meta's order), then hard-test-7 and -8; every spent hard split is a
    fold; the four recipes differ from v11 in one thing each (encoder, columns+rules, cap)."""
    loso = research_script("loso_q8")
    run = loso.RUNS["v11"]
    assert loso.files("v11") == (*loso.V9_FILES, "hard-test-7", "hard-test-8")
    assert loso.EXTRA not in loso.files("v11") and len(set(run.files)) == 14
    assert run.held_out == tuple(n for n in run.files if n.startswith("hard-test"))
    v9, v10, v11, fast = run.recipes.values()
    assert v11 == loso.V11 and (v11.second, v11.signals, v11.rules) == (
        "minilm-q8",
        "v9",
        ("hazard-floor",),
    )
    assert v9.second == "minilm" and (v9.signals, v9.rules, v9.delta) == (
        v11.signals,
        v11.rules,
        v11.delta,
    )
    assert v10.second == v11.second and (v10.signals, v10.rules, v10.delta) == (
        False,
        ("situation-floor",),
        0.02,
    )
    assert (fast.cap, v11.cap) == (0.20, 0.35) and fast.second == v11.second


def test_the_error_list_is_exactly_the_wrong_decisions() -> None:
    loso = research_script("loso_q8")
    lr = loso.lr
    n = 4
    y = np.array([True, True, False, False])
    no = np.zeros(n, dtype=bool)
    stage = lr.Stage(np.array([0.9, 0.1, 0.8, 0.2]), 0.5, 0.5)
    s = lr.Scored(y, no, no, no, stage, stage, 0.0, 0.0, "static", no, no, no, no, ())
    rows = [{"id": f"r{i}", "level": "low", "prompt": f"p{i}"} for i in range(n)]
    got = list(loso.wrong("arm", "fold", rows, s, 0.0))
    assert [(g["id"], g["escalated"]) for g in got] == [("r1", False), ("r2", True)]
    hazard = np.array([False, True, False, False])  # a floor that catches the missed row
    s2 = lr.Scored(
        y, no, no, no, stage, stage, 0.0, 0.0, "static", hazard, no, no, no, ("hazard-floor",)
    )
    assert [g["id"] for g in loso.wrong("arm", "fold", rows, s2, 0.0)] == ["r2"]
