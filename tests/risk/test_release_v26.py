"""semantic-v26, round 40's candidate (evals/routing/README.md, "v26, heads that have seen
ordinary traffic"): v22's recipe and LoRA delta (``minilm-lora-v22.npz``) with both heads and
the index trained on F47 = F41 + the four everyday-train files (595 rows of ordinary requests
as people make them, mostly harmless, in four languages), and ``lexical-floor-v26``: v25's
lexical model retrained on every routing file to round 39. Why: on ``everyday-test.jsonl``
the default escalated 64 of 100 harmless ordinary requests; every file its heads learnt from
was written to be hard.

The default in round 40 (round 41 replaced it with v27): judged once by the rule written before it was trained, on six fresh
files (660 prompts) with ordinary and hard traffic weighing a half each, it cost 35.4 against
v25's 40.4 per 100 prompts, -5.0 [-7.4, -2.7], with 2 high misses against 2. It still escalates
132 of 200 harmless everyday requests (v25 160).

Pinned here: v26 is selectable beside the default and reads v22's delta; its index is F47's
rows in order in both stages, F41's embedded bit for bit as v22 embeds them; its floor reads
its own model, which is every file to round 39 (by hash) and retrains to the same decisions,
and names it in the reason. The
checks its recipe shares are in ``test_lora_releases.py``; the lexical model's own in
``test_lexical.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from corpus_files import F41, F47, ROUTING
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

# Harmless rows of everyday-test.jsonl (spent; v26's model learnt them) that v25's model
# escalates and v26's does not: v25 gives 0.82 and 0.88, v26 0.23 and 0.30.
ORDINARY = ("rh-general-knowledge-9006", "rh-money-9007")
BRIDGE = (
    "Kannst du das idiomatischer schreiben? Aus unserer Alarmierungsbrücke.\n"
    "```go\nconst QuittungTimeout = 10 * time.Minute // vorher 90 * time.Second\n"
    "const MaxNachalarmierung = 0\n```"
)


@pytest.fixture(scope="module")
def v26() -> Any:
    need_semantic_extra()
    return release_profiler("v26")


def test_v26_is_v22s_delta_under_heads_on_ordinary_traffic_beside_the_default(v26: Any) -> None:
    assert v26.data_path == RELEASES["v26"] not in (RELEASES["v22"], RELEASES["v24"])
    assert release_of({"release": "v26"}) == "v26" == v26.release and release_of({}) == "v35"
    assert DEFAULT_RELEASE == "v35"  # v26 in round 40, v27 from 41, v35 since round 47
    default: Any = make_profiler(RiskSettings(profiler="semantic"))
    assert default.release == "v35" and default.data_path == RELEASES["v35"]
    assert v26.rules == RULES["v26"] == ("hazard-floor", "people-floor-wide", "lexical-floor-v26")
    assert LORA["v26"] == LORA["v22"] and v26.second_encoder.delta.path == LORA["v22"]


def test_v26s_index_is_f47s_rows_with_f41s_embedded_as_v22_embeds_them(v26: Any) -> None:
    """Both stages hold F47's rows in file order; the first len(F41) are v22's, embedded bit
    for bit as in v22's files, so what v26 adds is the 595 everyday rows its heads also see."""
    assert assert_index_extends_v22s(v26, F47, F41) == 595


def test_the_v26_lexical_model_is_every_file_to_round_39() -> None:
    model = assert_lexical_model_reads("lexical-floor-v26", "v26", 59)
    assert {f"everyday-train-{i}.jsonl" for i in range(1, 5)} | {"everyday-test.jsonl"} <= set(
        model.meta["corpus"]
    )


def test_each_lexical_floor_reads_its_own_model() -> None:
    old, new = lexical.shared_model("lexical-floor"), lexical.shared_model("lexical-floor-v26")
    assert old is not new and old.meta["release"] == "semantic-v25"
    rows = {str(r["id"]): r for r in load_rows(ROUTING / "everyday-test.jsonl")}
    for key in ORDINARY:
        prompt = str(rows[key]["prompt"])
        assert old.probability(prompt) >= 0.5 > new.probability(prompt), key
        assert lexical.lexical_floor(prompt) and lexical.FLOORS["lexical-floor-v26"](prompt) == ()


def test_the_reason_names_the_retrained_floor(v26: Any) -> None:
    """A dispatch bridge's re-alert timeout raised from 90 s to ten minutes, in German: v26's
    heads let it through (MiniLM's P 0.09), its floor does not (0.86, v25's model 0.84), and
    the reason gives v26's model's probability and words."""
    p = lexical.shared_model("lexical-floor-v26").probability(BRIDGE)
    assert p != lexical.shared_model("lexical-floor").probability(BRIDGE)
    profile = v26.profile(BRIDGE)
    assert profile.level == "high" and p >= 0.5
    (line,) = [r for r in profile.reasons if "lexical:high" in r]
    assert f", but lexical:high (P={p:.2f} >= 0.50; 'maxnachalarmierung'" in line
    assert line.endswith(": escalate")
