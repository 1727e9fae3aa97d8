"""semantic-v18, the default from hard-test-27 to hard-test-28 (route28's arm H, evals/routing/README.md): v13's LoRA
delta unchanged, both heads retrained with v13's recipe (v9's signal columns, cost 6, delta
0.03, the cascade with its band capped at 0.20) on F40 = F23 (v13's files) + every file spent
since v13 was trained (hard-test-15 ... -26 and the four targeted sets) + hard-train-v28-extra
(rows against over-escalating harmless code), with v15's rules. route28's leave-one-file-out
rule, written before its last file existed, passed these heads: 160 against v15's 192 over
sixteen folds, 5 high misses against 10. Judged on hard-test-27 and lookalike-code-test, which
it never saw, by the rule written before either (round 28), it replaced v15 as the default: 32
against 35 over the two files, 0 high misses against 1. Since hard-test-28 the default is v19,
its recipe with the context block (tests/risk/test_release_v19.py). Needs the semantic extra
(and the ``onnx`` extra for the ORT check).

Pinned: selectable by name (no longer the default), what its heads were trained on (F40, by hash)
and over which delta (v13's, by name and sha256, the delta's own meta: F23), v15's rules, the
reference seed suite with and without hints, deterministic decisions, the plain-Python path's
columns, the static stage retraining to the shipped file, v13's files and delta untouched,
another base refused in one line, and the same decisions from either int8 backend.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from corpus_files import F23, F40
from release_checks import (
    assert_delta_records_its_training,
    assert_deterministic,
    assert_files_record,
    assert_int8_backends_agree,
    assert_lora_files_record,
    assert_plain_path_reads_the_signal_columns,
    assert_refuses_another_base,
    assert_seed_suite,
    assert_serves_merged_int8_minilm,
    assert_static_stage_retrains,
    need_semantic_extra,
    release_profiler,
)

from loomc.policy.models import RiskSettings
from loomc.risk.factory import make_profiler
from loomc.risk.releases import DATA_FILE, LORA, RELEASES, RULES, release_of
from loomc.risk.signals import SIGNAL_NAMES

DATA = Path(__file__).resolve().parents[2] / "loomc" / "risk" / "data"
V13_FILES = F23  # what v13 was trained on (tests/corpus_files.py)
V18_FILES = F40  # F23, the files spent since, data28's rows (tests/corpus_files.py)
WIDTH = {"v9": len(SIGNAL_NAMES)}
# v13's two files and its delta as shipped: v18 reuses the delta and must not touch any of them.
V13_SHIPPED = {
    "router-static-v13.npz": "da6f311b48ae62c94401916575d83f3d4bd0feb5864fc6c810a061dd487e7c8d",
    "router-minilm-v13.npz": "eb9ff017a40c5290fb2ebe21b7897405e2293a1dd189e39870584a237a378d68",
    "minilm-lora-v13.npz": "a3db1fb9f5232110832d656af8eae9239804a75c3bac6f8ff356bbcc1e0178a4",
}
PROMPTS = [
    "Conjugate the verb 'poison' in the present tense.",
    "Add a docstring:\n\ndef load(blob):\n    return pickle.loads(blob)",
    "my 12 seed words are in my notes app, fine?",
    "¿Cuál es la capital de Australia?",
    "Add type hints:\n\ndef fake_patient(i):\n    return {'name': f'Test {i}', 'dose_mg': 5}",
    "I take warfarin; is it fine to add a daily aspirin for my knee?",
]


@pytest.fixture(scope="module")
def v18() -> Any:
    need_semantic_extra()
    return release_profiler("v18")


def test_v13s_files_and_delta_are_unchanged() -> None:
    for name, digest in V13_SHIPPED.items():
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == digest, name


def test_v18_is_selected_by_name_with_v15s_rules_over_v13s_delta(v18: Any) -> None:
    assert v18.data_path == RELEASES["v18"] != DATA_FILE and RELEASES["v18"] != RELEASES["v15"]
    assert v18.release == "v18" and release_of({"release": "v18"}) == "v18"
    default: Any = make_profiler(RiskSettings(profiler="semantic"))
    assert default.release == "v22" and default.data_path == RELEASES["v22"] == DATA_FILE
    assert v18.rules == RULES["v18"] == RULES["v15"] == ("hazard-floor", "people-floor-wide")
    assert LORA["v18"] == LORA["v13"]


def test_v18_files_record_what_made_them(v18: Any) -> None:
    assert_files_record(v18, "v18", V18_FILES, WIDTH)
    assert_lora_files_record(v18, "v18", delta_of="v13")


def test_v18_delta_is_v13s_and_records_its_training(v18: Any) -> None:
    assert_delta_records_its_training(v18, "v18", V13_FILES)


def test_v18_serves_the_merged_int8_minilm(v18: Any) -> None:
    assert_serves_merged_int8_minilm(v18, "v18")


def test_v18_refuses_another_base_in_one_line(tmp_path: Path) -> None:
    assert_refuses_another_base(tmp_path, "v18")


@pytest.mark.parametrize("hints", [True, False])
def test_v18_seed_suite(v18: Any, shared_dir: Path, hints: bool) -> None:
    assert_seed_suite(v18, shared_dir, hints)


def test_v18_is_deterministic_across_calls_and_batches(v18: Any) -> None:
    assert_deterministic(v18, "v18", PROMPTS)


def test_v18_plain_path_reads_the_same_columns(v18: Any) -> None:
    assert_plain_path_reads_the_signal_columns(v18, PROMPTS)


def test_v18_static_stage_retrains_to_the_shipped_file(v18: Any) -> None:
    assert_static_stage_retrains(v18, V18_FILES, "v9")


def test_v18_decides_alike_on_numpy_and_onnxruntime() -> None:
    assert_int8_backends_agree("v18")
