"""``research/band_for_keep.py``: a release's band re-chosen so that the reference seed suite is
decided right as served (round 42).

Why these checks: the band it reports must be the one ``train_router.py`` chose when the suite
does not bind (v27, which keeps the suite), a different one where it binds (v28, which decides
"List two benefits of version control." wrong in its own band), and that band, served through
``risk.options``, must actually keep the suite, with hints and without. Writing it must change
the two edges and nothing else. Needs the semantic extra (MiniLM's weights).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from release_checks import assert_seed_suite, need_semantic_extra
from research_script import research_script

from loomc.policy.models import RiskSettings
from loomc.risk.factory import make_keywords, make_profiler
from loomc.risk.files import DATA

keep = research_script("band_for_keep")
fit = research_script("router_fit")


@pytest.fixture(scope="module")
def seed(shared_dir: Path) -> Path:
    need_semantic_extra()
    return shared_dir / "reference" / "seed-evals" / "adaptive-routing-v1.jsonl"


def test_a_release_that_keeps_the_suite_keeps_its_band(seed: Path) -> None:
    free, kept = keep.band_for_keep("v27", seed)
    assert free == kept and free[:2] == (0.08, 0.43)  # v27's band, as trained


@pytest.mark.parametrize("hints", [True, False])
def test_where_the_suite_binds_the_new_band_keeps_it_as_served(
    seed: Path, shared_dir: Path, hints: bool
) -> None:
    free, kept = keep.band_for_keep("v28", seed)
    assert free[:2] == (0.10, 0.40) and kept[:2] == (0.16, 0.53)
    assert kept[2] > free[2] and kept[3] <= 0.20  # dearer on the training rows, within the cap
    v28 = make_profiler(RiskSettings(profiler="semantic", options={"release": "v28"}))
    assert_seed_suite(v28, shared_dir, hints, ("version-control-benefits",))
    low, high = kept[:2]
    served = make_profiler(
        RiskSettings(
            profiler="semantic",
            options={"release": "v28", "band_low": low, "band_high": high},
        )
    )
    assert_seed_suite(served, shared_dir, hints)


def test_writing_the_band_changes_its_edges_and_nothing_else(seed: Path, tmp_path: Path) -> None:
    path = shutil.copy(DATA / "router-static-v28.npz", tmp_path / "router-static-v28.npz")
    keep.write_band(Path(path), (0.16, 0.53), seed)
    before, after = keep.read(DATA / "router-static-v28.npz"), keep.read(Path(path))
    assert (float(after["cascade_low"]), float(after["cascade_high"])) == (0.16, 0.53)
    for name in before:
        if name not in ("cascade_low", "cascade_high", "meta"):
            np.testing.assert_array_equal(after[name], before[name], err_msg=name)
    old, new = json.loads(str(before["meta"])), json.loads(str(after["meta"]))
    assert new.pop("band_keep") == seed.name and len(new.pop("band_keep_sha256")) == 64
    assert new == old


def test_no_band_that_keeps_a_prompt_both_stages_get_wrong() -> None:
    """``choose_band``'s constraint: with one keep prompt wrong under both stages, no band
    is allowed, and the refusal says so instead of returning a band that breaks it."""
    rows = [
        {"prompt": "summarise this memo", "expectedEscalation": i >= 3, "level": "high"}
        for i in range(6)
    ]
    head = {
        "cv_prob": np.array([0.1, 0.2, 0.3, 0.7, 0.8, 0.9]),
        "threshold": np.float64(0.5),
        "signal_threshold": np.float64(0.5),
    }
    kw = make_keywords(RiskSettings())
    wrong = np.array([False])
    with pytest.raises(ValueError, match="no band"):
        fit.choose_band(head, head, rows, kw, keep=(np.array([0.5]), wrong, wrong))
    with pytest.raises(ValueError, match="second stage decides"):  # "or" would not honour it
        fit.choose_band(head, head, rows, kw, mode="or", keep=(np.array([0.5]), wrong, wrong))
    # right in the second stage only: every allowed band holds it
    lo, hi, _, _ = fit.choose_band(
        head, head, rows, kw, max_defer=1.0, keep=(np.array([0.5]), wrong, np.array([True]))
    )
    assert lo < 0.5 < hi


def test_the_band_for_a_cap_reads_a_weighted_releases_weights() -> None:
    """``band_for_cap.py`` and this script read a release's settings alike
    (``band_for_cap.release_band_inputs``): at v28's own cap it gives v28's band back, which it
    can only do by weighing the ordinary rows as v28's meta records."""
    bc = research_script("band_for_cap")
    (low, high, _, share), (_, _, _, narrower) = bc.bands("v28", [0.20, 0.10])
    assert (low, high) == (0.10, 0.40) and share <= 0.20 and narrower <= 0.10
    _, _, _, settings = bc.release_band_inputs("v28")
    assert settings["weight"] is not None and settings["max_defer"] == 0.20


def test_an_unknown_release_is_refused_in_one_line() -> None:
    with pytest.raises(SystemExit, match="v99: not a release with a cascade band here"):
        research_script("band_for_cap").release_band_inputs("v99")
