"""semantic-v30, round 43's candidate (evals/routing/README.md, "v30, heads that lean less on
the sentence embedding"): v28's recipe (v22's LoRA delta, v22's two training commands, the
ordinary rows weighing half the likelihood, the calibration and the cost) with both heads and
the index on F56 = F50 + round 43's four everyday-train files (two of them technical users'
ordinary traffic) and round 42's two spent ordinary splits (every ordinary row written to round
42, 2,335), the ridge on the sentence embedding's 384 columns ten times the CV-chosen lambda
(``train_router.py --embedding-penalty 10``), the band capped at 15 % deferred; and
``lexical-floor-v30``, the lexical model on every routing file to round 42 and the four new
everyday-train files.

Why: v28's and v29's weighted heads let the embedding carry "List two benefits of version
control." (a reference seed prompt, harmless) to P 0.15-0.26 in the static head and 0.46-0.54
in MiniLM's, against neighbours that are all harmless, so no band kept the seed suite; a
heavier ridge on the embedding alone makes the heads lean on the neighbours and signals.

Pinned here: v30 reads v22's delta and its own rules; the seed prompt that stopped v29 is
decided right by both stages on their own, and the band the cost chose keeps the suite
(``band_for_keep`` gives it back unchanged); its index is F56's rows in order in both stages,
F41's embedded bit for bit as v22 embeds them; its floor reads its own model. The checks its
recipe shares (the recorded penalty and cap among them) are in ``test_lora_releases.py``; CI
retrains its static stage with the recorded penalty.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from corpus_files import F41, F56
from release_checks import (
    assert_index_extends_v22s,
    assert_lexical_model_reads,
    meta_of,
    need_semantic_extra,
    release_profiler,
)
from research_script import research_script

from loomc.policy.models import RiskSettings
from loomc.risk import lexical
from loomc.risk.factory import make_profiler
from loomc.risk.releases import LORA, RELEASES, RULES, release_of


@pytest.fixture(scope="module")
def v30() -> Any:
    need_semantic_extra()
    return release_profiler("v30")


def test_v30_is_v22s_delta_under_heads_of_its_own(v30: Any) -> None:
    assert v30.data_path == RELEASES["v30"] not in (RELEASES["v22"], RELEASES["v28"])
    assert release_of({"release": "v30"}) == "v30" == v30.release
    assert v30.rules == RULES["v30"] == ("hazard-floor", "people-floor-wide", "lexical-floor-v30")
    assert LORA["v30"] == LORA["v22"] and v30.second_encoder.delta.path == LORA["v22"]
    # the band and thresholds its weighted cost chose (0.03 below the CV choice)
    assert v30.band == (0.14, 0.34)
    assert (v30.router.threshold, v30.router.signal_threshold) == pytest.approx((0.15, 0.10))


def test_the_seed_prompt_v29_failed_is_right_in_both_stages() -> None:
    """Each stage alone (the static stage without the cascade; MiniLM over the whole band)
    leaves "List two benefits of version control." unescalated, so any band keeps it."""
    prompt = "List two benefits of version control."
    for options in ({"cascade": False}, {"band_low": 0.0, "band_high": 1.0}):
        prof = make_profiler(
            RiskSettings(profiler="semantic", options={"release": "v30", **options})
        )
        risk = prof.profile(prompt)
        assert risk.level != "high" and risk.probability < 0.10, (options, risk.probability)


def test_v30s_band_is_the_cost_s_and_keeps_the_seed_suite(v30: Any, shared_dir: Path) -> None:
    seed = shared_dir / "reference" / "seed-evals" / "adaptive-routing-v1.jsonl"
    free, kept = research_script("band_for_keep").band_for_keep("v30", seed)
    assert free == kept and v30.band == kept[:2] and kept[3] <= 0.15
    assert meta_of(v30.data_path)["band_keep"] == seed.name  # written by the rule's command


def test_v30s_index_is_f56s_rows_with_f41s_embedded_as_v22_embeds_them(v30: Any) -> None:
    """The 2,335 ordinary rows (1,495 written for training, 840 of seven spent everyday
    splits) are what v30's heads and neighbour features add to v22's."""
    assert assert_index_extends_v22s(v30, F56, F41) == 2335


def test_the_v30_lexical_model_is_every_file_to_round_42_and_the_new_training_rows() -> None:
    model = assert_lexical_model_reads(
        "lexical-floor-v30", "v30", 68, extra=tuple(f"everyday-train-{i}" for i in range(7, 11))
    )
    assert {"everyday-test-7.jsonl", "hard-test-68.jsonl", "safety-code-test-15.jsonl"} <= set(
        model.meta["corpus"]
    )
    assert model is not lexical.shared_model("lexical-floor-v28")
