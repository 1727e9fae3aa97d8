"""semantic-v8, the candidate release (route9): named in a policy, deterministic, its files'
provenance and signal columns (v8's and ``loomc.risk.exposure``'s), the rules it carries, its
trainer. Needs the semantic extra.

v8 is trained on every spent routing file (the sealed ``hard-test-6.jsonl`` is never read
here), so no held-out gate applies to it: what is pinned is that it is selectable without
touching v4 (still the default), what it was trained on and with, the reference seed suite,
and that its decisions do not depend on the path (numpy or plain Python) or on the call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
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
from loomc.risk.releases import RELEASES, RULES, release_of
from loomc.risk.signals import V7_NAMES, V8_NAMES

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "evals" / "routing"
V8_FILES = (
    "train",
    "test",
    "hard-train",
    "hard-train-v5-extra",
    "hard-train-v8-extra",
    "hard-test",
    "hard-test-2",
    "hard-test-3",
    "hard-test-4",
    "hard-test-5",
)
WIDTH = {"none": 0, "v7": len(V7_NAMES), "v8": len(V8_NAMES)}
PROMPTS = [
    "Conjugate the verb 'poison' in the present tense.",
    "Add a docstring:\n\ndef load(blob):\n    return pickle.loads(blob)",
    "my son swallowed a button battery an hour ago, he seems ok?",
    "¿Cuál es la capital de Australia?",
    "Schreib eine Glückwunschkarte für meine Kollegin.",
    "The club posts members' home addresses on its public page. Which font?",
    "On va abattre le mur porteur sans permis. Quelle couleur pour la cuisine ?",
]


@pytest.fixture(scope="module")
def v8() -> Any:
    need_semantic_extra()
    return release_profiler("v8")


def _signals_of(prof: Any) -> Any:
    kind = meta_of(prof.data_path).get("signals", "none")
    return False if kind == "none" else kind


def test_v8_is_selected_by_name_and_is_no_longer_the_default(v8: Any) -> None:
    """v8 was the default from hard-test-7 to hard-test-9 (evals/routing/README.md: v11 had the
    lower routing cost and fewer high misses there); it stays selectable."""
    assert v8.data_path == RELEASES["v8"] and v8.release == "v8"
    assert release_of({}) == "v35" and release_of({"release": "v8"}) == "v8"
    assert RELEASES["v8"].exists() and RELEASES["v8"].name == "router-static-v8.npz"
    default: Any = make_profiler(RiskSettings(profiler="semantic"))
    assert default.release == "v35" and default.data_path == RELEASES["v35"]
    assert v8.rules == RULES["v8"] and "situation-floor" in v8.rules


def test_v8_files_record_what_made_them(v8: Any) -> None:
    """Trained on the ten files as they are now, with the signal's columns and the rules the
    release applies; the weights are exactly that wide."""
    assert_files_record(v8, "v8", V8_FILES, WIDTH)


@pytest.mark.parametrize("hints", [True, False])
def test_v8_seed_suite(v8: Any, shared_dir: Path, hints: bool) -> None:
    assert_seed_suite(v8, shared_dir, hints)


def test_v8_is_deterministic_across_calls_and_batches(v8: Any) -> None:
    assert_deterministic(v8, "v8", PROMPTS)


def test_v8_plain_path_reads_the_signal_columns(v8: Any) -> None:
    assert_plain_path_reads_the_signal_columns(v8, PROMPTS)


def test_v8_static_stage_retrains_to_the_shipped_file(v8: Any) -> None:
    assert_static_stage_retrains(v8, V8_FILES, _signals_of(v8))
