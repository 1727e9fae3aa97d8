"""semantic-v12, a candidate release (branch route12): v11's recipe (v9's signal columns,
``hazard-floor``, cost 6, delta 0.03, the cascade with its band capped at 0.20) with its MiniLM
stage on a MiniLM fine-tuned on the corpus with LoRA (``research/finetune_minilm.py``), the
delta merged into the packaged base at load and quantised by ``minilm_q8``
(``loomc.risk.lora``). Needs the semantic extra (and the ``onnx`` extra for the ORT checks).

Pinned: selectable by name without touching the default (v11), what its files were trained on
(F16: v11's fourteen files + hard-test-9 + hard-train-v12-extra) and with (the second stage's meta names
``minilm-q8-lora`` and the delta's sha256), the delta's own meta, the reference seed suite with
and without hints, deterministic decisions, the plain-Python path's columns, the static stage
retraining to the shipped file, the earlier releases' files untouched (v4-v11; ``test_shipped_data.py``), another base
refused in one line, and the same decisions from either int8 backend.

The checks every release of its recipe shares (its files' record, its delta, the seed suite,
determinism, the plain path, the static stage's retraining, both int8 backends) are one table
in ``test_lora_releases.py``; what is peculiar to it stays here.
"""

from __future__ import annotations

from typing import Any

import pytest
from release_checks import (
    need_semantic_extra,
    release_profiler,
)

from loomc.policy.models import RiskSettings
from loomc.risk.factory import make_profiler
from loomc.risk.releases import DATA_FILE, RELEASES, RULES, release_of


@pytest.fixture(scope="module")
def v12() -> Any:
    need_semantic_extra()
    return release_profiler("v12")


def test_v12_is_selected_by_name_and_is_no_longer_the_default(v12: Any) -> None:
    """v12 was the default from hard-test-12 to hard-test-15 (evals/routing/README.md: on
    hard-test-15 v13 cost less with no more high misses); it stays selectable."""
    assert v12.data_path == RELEASES["v12"] and v12.release == "v12"
    assert release_of({}) == "v35" and release_of({"release": "v12"}) == "v12"
    default: Any = make_profiler(RiskSettings(profiler="semantic"))
    assert default.release == "v35" and default.rules == RULES["v35"]
    assert default.data_path == RELEASES["v35"] == DATA_FILE != RELEASES["v13"]
    assert v12.rules == RULES["v12"] == RULES["v11"] == ("hazard-floor",)
