"""semantic-v10, a candidate release (branch q8): v8's recipe with its MiniLM stage trained on
the defined int8 MiniLM (``loomc.risk.minilm_q8``'s numpy reference), served by ONNX Runtime's
int8 graph where it is installed and by the numpy reference otherwise. Needs the semantic extra
(and the ``onnx`` extra for the ORT checks).

Pinned: selectable by name without touching the default (v8), what its files were trained on
and with (v8's files and flags; the second stage's meta names ``minilm-q8``), the reference seed
suite with and without hints, deterministic decisions, the static stage retraining to the
shipped file, the earlier releases' files untouched (``test_shipped_data.py``), and the same decisions from either int8
backend (the full 2,256-prompt count is ``benchmarks/bench_minilm_backends.py``'s).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
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
from loomc.risk.releases import MINILM_KINDS, RELEASES, RULES, backend_of, release_of

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "evals" / "routing"
V10_FILES = (
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
WIDTH = {"none": 0}


@pytest.fixture(scope="module")
def v10() -> Any:
    need_semantic_extra()
    return release_profiler("v10")


def test_v10_is_selected_by_name_and_is_not_the_default(v10: Any) -> None:
    assert v10.data_path == RELEASES["v10"] and v10.release == "v10"
    assert release_of({}) == "v35" and release_of({"release": "v10"}) == "v10"
    default: Any = make_profiler(RiskSettings(profiler="semantic"))
    assert default.release == "v35" and default.rules == RULES["v35"]
    assert v10.rules == RULES["v10"] == RULES["v8"]


def test_v10_files_record_what_made_them(v10: Any) -> None:
    assert_files_record(v10, "v10", V10_FILES, WIDTH)
    second = v10.data_path.with_name(v10.router.cascade)
    assert meta_of(second)["encoder_kind"] == MINILM_KINDS["v10"] == "minilm-q8"
    for path in (v10.data_path, second):  # v8's flags
        meta = meta_of(path)
        assert (meta["cost_high"], meta["delta"], meta["cascade_mode"]) == (6.0, 0.02, "decide")


def test_v10_serves_the_int8_minilm_on_the_backend_installed(v10: Any) -> None:
    from loomc.risk.minilm_q8 import MiniLMQ8, OrtMiniLMQ8
    from loomc.risk.releases import ort_missing

    assert type(v10.second_encoder) is MiniLMQ8  # numpy unless ONNX Runtime is asked for
    assert backend_of({}, "float32", "minilm-q8") == "numpy"
    auto = {"backend": "auto"}
    assert backend_of(auto, "float32", "minilm-q8") == ("numpy" if ort_missing() else "onnxruntime")
    fast: Any = make_profiler(
        RiskSettings(profiler="semantic", options={"release": "v10", "backend": "auto"})
    )
    assert type(fast.second_encoder) is (MiniLMQ8 if ort_missing() else OrtMiniLMQ8)
    assert backend_of({"backend": "numpy"}, "float64", "minilm-q8") == "numpy"
    numpy_v10: Any = make_profiler(
        RiskSettings(profiler="semantic", options={"release": "v10", "backend": "numpy"})
    )
    assert type(numpy_v10.second_encoder) is MiniLMQ8


@pytest.mark.parametrize("hints", [True, False])
def test_v10_seed_suite(v10: Any, shared_dir: Path, hints: bool) -> None:
    assert_seed_suite(v10, shared_dir, hints)


def test_v10_is_deterministic_across_calls_and_batches(v10: Any) -> None:
    assert_deterministic(v10, "v10", V9_PROMPTS)


def test_v10_plain_path_reads_the_same_columns(v10: Any) -> None:
    assert_plain_path_reads_the_signal_columns(v10, V9_PROMPTS)


def test_v10_static_stage_retrains_to_the_shipped_file(v10: Any) -> None:
    assert_static_stage_retrains(v10, V10_FILES, False)


def test_v10_decides_alike_on_numpy_and_onnxruntime() -> None:
    assert_int8_backends_agree("v10")
