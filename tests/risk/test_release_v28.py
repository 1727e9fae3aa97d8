"""semantic-v28, round 42's candidate (evals/routing/README.md, "v28, heads fitted for the
traffic's weights"): v27's recipe (v22's LoRA delta, v22's two training commands) with both heads
and the index on F50 = F48 + round 42's two everyday-train files and round 41's two spent
ordinary splits (every ordinary row written to round 41, 1,495 of them), the ordinary rows
weighing half the likelihood, the Platt calibration and the cost the thresholds and the band are
chosen by (``train_router.py --ordinary-weight 0.5 --weigh-fit``); and ``lexical-floor-v28``,
the lexical model on every routing file to round 41 and the two new everyday-train files.

Why: on the pooled rows (86 % hard files) v27's heads learnt that the cue columns mean danger,
so a first-date text or a marmalade question got P 0.9 and v27 escalated 117 of round 41's 200
harmless everyday requests; on spent files the weighted fit cut that to 77 with no more high
prompts missed (the rule's table).

Pinned here: v28 reads v22's delta and its own rules; its index is F50's rows in order in both
stages, F41's embedded bit for bit as v22 embeds them; its floor reads its own model (by hash),
trained unweighted. The checks its recipe shares, the recorded weighing among them, are in
``test_lora_releases.py``; CI retrains its static stage with the recorded weights.
"""

from __future__ import annotations

from typing import Any

import pytest
from corpus_files import F41, F50, ROUTING
from release_checks import (
    assert_index_extends_v22s,
    assert_lexical_model_reads,
    need_semantic_extra,
    release_profiler,
)

from loomc.risk import lexical
from loomc.risk.evaluate import load_rows
from loomc.risk.releases import LORA, RELEASES, RULES, release_of


@pytest.fixture(scope="module")
def v28() -> Any:
    need_semantic_extra()
    return release_profiler("v28")


def test_v28_is_v22s_delta_under_heads_of_its_own(v28: Any) -> None:
    assert v28.data_path == RELEASES["v28"] not in (RELEASES["v22"], RELEASES["v27"])
    assert release_of({"release": "v28"}) == "v28" == v28.release
    assert v28.rules == RULES["v28"] == ("hazard-floor", "people-floor-wide", "lexical-floor-v28")
    assert LORA["v28"] == LORA["v22"] and v28.second_encoder.delta.path == LORA["v22"]
    # the band and thresholds its weighted cost chose (0.03 below the CV choice)
    assert v28.band == (0.10, 0.40)
    assert (v28.router.threshold, v28.router.signal_threshold) == pytest.approx((0.17, 0.16))


def test_v28s_index_is_f50s_rows_with_f41s_embedded_as_v22_embeds_them(v28: Any) -> None:
    """The 1,495 ordinary rows (895 written for training, 600 of five spent everyday splits)
    are what v28's heads and neighbour features add to v22's."""
    assert assert_index_extends_v22s(v28, F50, F41) == 1495


def test_the_v28_lexical_model_is_every_file_to_round_41_and_the_new_training_rows() -> None:
    model = assert_lexical_model_reads(
        "lexical-floor-v28", "v28", 65, extra=("everyday-train-5", "everyday-train-6")
    )
    assert {"everyday-test-5.jsonl", "hard-test-65.jsonl", "safety-code-test-14.jsonl"} <= set(
        model.meta["corpus"]
    )
    assert model is not lexical.shared_model("lexical-floor-v27")


def test_v28s_floor_reads_its_own_model() -> None:
    """Harmless rows of everyday-test-4 (spent in round 41; v28's model learnt them) that v27's
    model escalates and v28's does not: 0.83 and 0.89 against 0.37 and 0.39."""
    rows = {str(r["id"]): str(r["prompt"]) for r in load_rows(ROUTING / "everyday-test-4.jsonl")}
    floors = lexical.FLOORS
    for key in ("rh-general-knowledge-10408", "rh-general-knowledge-10417"):
        assert (
            floors["lexical-floor-v27"](rows[key]) and floors["lexical-floor-v28"](rows[key]) == ()
        )
