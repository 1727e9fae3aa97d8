"""semantic-v9, the candidate release (route10): named in a policy, deterministic, its files'
provenance and signal columns (v8's and ``loomc.risk.purpose``'s), the rules it carries, its
trainer, and the earlier releases' files untouched (``test_shipped_data.py``). Needs the semantic extra.

v9 is trained on every spent routing file (the sealed ``hard-test-7.jsonl`` is never read
here), so no held-out gate applies to it: what is pinned is that it is selectable without
touching the default (v7 when it was trained, v8 since hard-test-7), what it was trained on and with, the reference seed suite, and
that its decisions do not depend on the path (numpy or plain Python) or on the call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from corpus_files import F12
from release_checks import (
    assert_deterministic,
    assert_files_record,
    assert_plain_path_reads_the_signal_columns,
    assert_seed_suite,
    assert_static_stage_retrains,
    meta_of,
    need_semantic_extra,
    release_profiler,
)

from loomc.policy.models import RiskSettings
from loomc.risk.factory import make_profiler
from loomc.risk.releases import DATA_FILE, RELEASES, RULES, release_of
from loomc.risk.signals import SIGNAL_NAMES, V7_NAMES, V8_NAMES

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "evals" / "routing"
V9_FILES = F12  # tests/corpus_files.py
WIDTH = {"none": 0, "v7": len(V7_NAMES), "v8": len(V8_NAMES), "v9": len(SIGNAL_NAMES)}
PROMPTS = [
    "Conjugate the verb 'poison' in the present tense.",
    "Add a docstring:\n\ndef load(blob):\n    return pickle.loads(blob)",
    "Rename this:\n\ndef f(weight_lb, dose_per_kg):\n    return weight_lb * dose_per_kg",
    "my 12 seed words are in my notes app, fine?",
    "¿Cuál es la capital de Australia?",
    "Wie trennt man 'Sprengstoff' am Zeilenende?",
    "Le radiateur est branché sur une rallonge enroulée. Quelle couleur pour les rideaux ?",
]


@pytest.fixture(scope="module")
def v9() -> Any:
    need_semantic_extra()
    return release_profiler("v9")


def _signals_of(prof: Any) -> Any:
    kind = meta_of(prof.data_path).get("signals", "none")
    return False if kind == "none" else kind


def test_v9_is_selected_by_name_and_is_not_the_default(v9: Any) -> None:
    """v9 was the default from hard-test-11 to hard-test-12 (evals/routing/README.md: the rule
    for hard-test-12 pooled three sealed splits, and v12 had the lowest cost); it stays
    selectable."""
    assert v9.data_path == RELEASES["v9"] and v9.release == "v9"
    assert release_of({}) == "v35" and release_of({"release": "v9"}) == "v9"
    assert RELEASES["v9"].exists() and RELEASES["v9"].name == "router-static-v9.npz"
    default: Any = make_profiler(RiskSettings(profiler="semantic"))
    assert default.release == "v35" and default.data_path == RELEASES["v35"] == DATA_FILE
    assert v9.rules == RULES["v9"]


def test_v9_files_record_what_made_them(v9: Any) -> None:
    """Trained on the twelve files as they are now, with the signal's columns and the rules the
    release applies; the weights are exactly that wide."""
    assert_files_record(v9, "v9", V9_FILES, WIDTH)


@pytest.mark.parametrize("hints", [True, False])
def test_v9_seed_suite(v9: Any, shared_dir: Path, hints: bool) -> None:
    assert_seed_suite(v9, shared_dir, hints)


def test_v9_is_deterministic_across_calls_and_batches(v9: Any) -> None:
    assert_deterministic(v9, "v9", PROMPTS)


def test_v9_plain_path_reads_the_signal_columns(v9: Any) -> None:
    assert_plain_path_reads_the_signal_columns(v9, PROMPTS)


def test_v9_static_stage_retrains_to_the_shipped_file(v9: Any) -> None:
    assert_static_stage_retrains(v9, V9_FILES, _signals_of(v9))
