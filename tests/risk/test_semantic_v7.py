"""semantic-v7, the candidate release: named in a policy, deterministic, its files' provenance and
signal columns, the rules it carries, its trainer. Needs the semantic extra.

v7 is trained on every routing file there is (the sealed ``hard-test-5.jsonl`` is never read
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


@pytest.fixture(scope="module")
def v7() -> Any:
    need_semantic_extra()
    return release_profiler("v7")


def test_v7_is_selected_by_name_and_is_no_longer_the_default(v7: Any) -> None:
    """v7 was the default from hard-test-6 to hard-test-7 (evals/routing/README.md: v8 had the
    lower routing cost there); it and v4 stay selectable."""
    assert v7.data_path == RELEASES["v7"] and v7.release == "v7"
    assert release_of({}) == "v35" and release_of({"release": "v7"}) == "v7"
    assert release_of({"release": "v4"}) == "v4"
    default: Any = make_profiler(RiskSettings(profiler="semantic"))
    assert default.release == "v35" and default.data_path == RELEASES["v35"]
    v4: Any = make_profiler(RiskSettings(profiler="semantic", options={"release": "v4"}))
    assert v4.data_path == RELEASES["v4"] and v4.rules == ()
    assert v7.rules == RULES["v7"]


def test_v7_files_record_what_made_them(v7: Any) -> None:
    """Trained on the eight files as they are now, with the signal's columns and the rules the
    release applies; the weights are exactly that wide."""
    assert_files_record(v7, "v7", V7_FILES, {"none": 0, "v7": len(V7_NAMES)})


@pytest.mark.parametrize("hints", [True, False])
def test_v7_seed_suite(v7: Any, shared_dir: Path, hints: bool) -> None:
    assert_seed_suite(v7, shared_dir, hints)


def test_v7_is_deterministic_across_calls_and_batches(v7: Any) -> None:
    assert_deterministic(v7, "v7", PROMPTS)


def test_v7_plain_path_reads_the_signal_columns(v7: Any) -> None:
    assert_plain_path_reads_the_signal_columns(v7, PROMPTS)


def test_v7_static_stage_retrains_to_the_shipped_file(v7: Any) -> None:
    assert_static_stage_retrains(v7, V7_FILES, meta_of(v7.data_path).get("signals") == "v7")
