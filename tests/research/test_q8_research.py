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
    names = loso.files()
    assert names[: len(loso.V8_FILES) - 5] == loso.V8_FILES[:5]
    assert set(loso.HELD_OUT) <= set(names) and "hard-test-7" in names
    assert not any(n.startswith("hard-test-8") for n in names)
    extra = (loso.lr.CORPUS / f"{loso.EXTRA}.jsonl").exists()
    assert (loso.EXTRA in names) == extra
