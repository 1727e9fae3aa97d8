"""semantic-v11, a candidate release (branch route11): v9's recipe (v9's signal columns,
``hazard-floor``, cost 6, delta 0.03, the cascade) with its MiniLM stage on the defined int8
MiniLM (``loomc.risk.minilm_q8``), trained on v9's twelve files and the spent hard-test-7 and
hard-test-8 (not ``hard-train-v10-extra``, which broke the seed suite for v8's and v10's
recipes). Needs the semantic extra (and the ``onnx`` extra for the ORT checks).

Pinned: selectable by name without touching the default (v8), what its files were trained on
and with, the reference seed suite with and without hints, deterministic decisions, the static
stage retraining to the shipped file, the earlier releases' files untouched (v4-v10; ``test_shipped_data.py``), and the
same decisions from either int8 backend (the full corpus count is
``benchmarks/bench_minilm_backends.py --q8-only``'s).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from corpus_files import F14
from release_checks import (
    V9_PROMPTS,
    assert_deterministic,
    assert_files_record,
    assert_int8_backends_agree,
    assert_plain_path_reads_the_signal_columns,
    assert_seed_suite,
    assert_static_stage_retrains,
    meta_of,
    need_semantic_extra,
    release_profiler,
)

from loomc.policy.models import RiskSettings
from loomc.risk.factory import make_profiler
from loomc.risk.releases import MINILM_KINDS, RELEASES, RULES, release_of
from loomc.risk.signals import SIGNAL_NAMES

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "evals" / "routing"
V11_FILES = F14  # v9's twelve, then the two splits spent since (tests/corpus_files.py)
WIDTH = {"v9": len(SIGNAL_NAMES)}


@pytest.fixture(scope="module")
def v11() -> Any:
    need_semantic_extra()
    return release_profiler("v11")


def test_v11_is_selected_by_name_and_is_not_the_default(v11: Any) -> None:
    """v11 was the default from hard-test-9 to hard-test-11 (evals/routing/README.md); it stays
    selectable."""
    assert v11.data_path == RELEASES["v11"] and v11.release == "v11"
    assert release_of({}) == "v35" and release_of({"release": "v11"}) == "v11"
    default: Any = make_profiler(RiskSettings(profiler="semantic"))
    assert default.release == "v35" and default.rules == RULES["v35"]
    assert v11.rules == RULES["v11"] == RULES["v9"] == ("hazard-floor",)


def test_v11_files_record_what_made_them(v11: Any) -> None:
    assert_files_record(v11, "v11", V11_FILES, WIDTH)
    second = v11.data_path.with_name(v11.router.cascade)
    assert second.name == "router-minilm-v11.npz"
    assert meta_of(second)["encoder_kind"] == MINILM_KINDS["v11"] == "minilm-q8"
    for path in (v11.data_path, second):  # v9's flags
        meta = meta_of(path)
        assert (meta["cost_high"], meta["delta"], meta["cascade_mode"]) == (6.0, 0.03, "decide")
        assert meta["signals"] == "v9"
    # the band's cap: 0.20, shipped by the rule written before the LOSO (evals/routing/README.md)
    assert meta_of(v11.data_path)["max_defer"] == 0.2


def test_v11_serves_the_int8_minilm(v11: Any) -> None:
    from loomc.risk.minilm_q8 import MiniLMQ8, OrtMiniLMQ8
    from loomc.risk.releases import ort_missing

    assert type(v11.second_encoder) is MiniLMQ8  # numpy by default: an eval's memory budget
    fast: Any = make_profiler(
        RiskSettings(profiler="semantic", options={"release": "v11", "backend": "auto"})
    )
    assert type(fast.second_encoder) is (MiniLMQ8 if ort_missing() else OrtMiniLMQ8)


@pytest.mark.parametrize("hints", [True, False])
def test_v11_seed_suite(v11: Any, shared_dir: Path, hints: bool) -> None:
    assert_seed_suite(v11, shared_dir, hints)


def test_v11_is_deterministic_across_calls_and_batches(v11: Any) -> None:
    assert_deterministic(v11, "v11", V9_PROMPTS)


def test_v11_plain_path_reads_the_signal_columns(v11: Any) -> None:
    assert_plain_path_reads_the_signal_columns(v11, V9_PROMPTS)


def test_v11_static_stage_retrains_to_the_shipped_file(v11: Any) -> None:
    assert_static_stage_retrains(v11, V11_FILES, "v9")


def test_v11_decides_alike_on_numpy_and_onnxruntime() -> None:
    assert_int8_backends_agree("v11")
