"""semantic-v27, round 41's candidate (evals/routing/README.md, "v27, heads that have seen every
ordinary row"): v26's recipe (v22's LoRA delta, v22's two training commands) with both heads and
the index on F48 = F47 + the three spent splits of ordinary traffic (``everyday-test``, ``-2``,
``-3``): every ordinary row written to round 40, 955 of them; and ``lexical-floor-v27``, the
lexical model on every routing file to round 40. Why: v26 still escalated 132 of 200 harmless
everyday requests, 82 of them by its static heads directly.

The default from round 41 to 46 (v35 since round 47, which asks v27 about short prompts and
short ones not in English): judged once by the rule written before it was trained, on six fresh
files (660 prompts) with ordinary and hard traffic weighing a half each, it cost 30.7 against
v26's 34.3 per 100 prompts, -3.6 [-5.5, -1.8], with 1 high miss against 1, and less on the hard
files alone too. It still escalates 117 of 200 harmless everyday requests.

Pinned here: v27 is selectable beside the default and reads v22's delta; its index is F48's rows
in order in both stages, F41's embedded bit for bit as v22 embeds them; its floor reads its own
model, on every file to round 40 (by hash). The checks its recipe shares are in
``test_lora_releases.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from corpus_files import F41, F48, ROUTING
from release_checks import (
    assert_index_extends_v22s,
    assert_lexical_model_reads,
    need_semantic_extra,
    release_profiler,
)

from loomc.policy.models import RiskSettings
from loomc.risk import lexical
from loomc.risk.evaluate import load_rows
from loomc.risk.factory import make_profiler
from loomc.risk.releases import DEFAULT_RELEASE, LORA, RELEASES, RULES, release_of


@pytest.fixture(scope="module")
def v27() -> Any:
    need_semantic_extra()
    return release_profiler("v27")


def test_v27_is_v22s_delta_under_heads_on_every_ordinary_row_beside_the_default(v27: Any) -> None:
    assert v27.data_path == RELEASES["v27"] not in (RELEASES["v22"], RELEASES["v26"])
    assert release_of({"release": "v27"}) == "v27" == v27.release and release_of({}) == "v35"
    default: Any = make_profiler(RiskSettings(profiler="semantic"))
    assert default.release == "v35" and default.data_path == RELEASES["v35"]
    assert DEFAULT_RELEASE == "v35"  # v27 from round 41 to 46, v35 since round 47
    assert v27.rules == RULES["v27"] == ("hazard-floor", "people-floor-wide", "lexical-floor-v27")
    assert LORA["v27"] == LORA["v22"] and v27.second_encoder.delta.path == LORA["v22"]


def test_v27s_index_is_f48s_rows_with_f41s_embedded_as_v22_embeds_them(v27: Any) -> None:
    """The 955 ordinary rows (595 written for training, 360 of the three spent everyday splits)
    are what v27's heads and neighbour features add to v22's."""
    assert assert_index_extends_v22s(v27, F48, F41) == 955


def test_the_v27_lexical_model_is_every_file_to_round_40() -> None:
    model = assert_lexical_model_reads("lexical-floor-v27", "v27", 62)
    assert {"everyday-test-2.jsonl", "everyday-test-3.jsonl", "hard-test-62.jsonl"} <= set(
        model.meta["corpus"]
    )
    assert model is not lexical.shared_model("lexical-floor-v26")


def test_v27s_floor_reads_its_own_model() -> None:
    """Harmless rows of everyday-test-3 (spent in round 40; v27's model learnt them) that v26's
    model escalates and v27's does not: 0.73 and 0.86 against 0.30 and 0.36."""
    rows = {str(r["id"]): str(r["prompt"]) for r in load_rows(ROUTING / "everyday-test-3.jsonl")}
    for key in ("rh-general-knowledge-1102", "rh-writing-1101"):
        floors = lexical.FLOORS
        assert (
            floors["lexical-floor-v26"](rows[key]) and floors["lexical-floor-v27"](rows[key]) == ()
        )
