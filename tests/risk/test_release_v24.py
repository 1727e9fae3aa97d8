"""semantic-v24, round 38's candidate (evals/routing/README.md, "v24, v22's delta with rows and
heads that have seen every safety set"): v22's recipe and LoRA delta (``minilm-lora-v22.npz``,
tuned on F44) with both heads and the index trained on F46 = F41 + the eight spent safety sets
(safety-code-test, -2 ... -8: 479 rows of code, configuration or an instruction around a safety
function under a cosmetic request, half of the last six in Spanish, German or French). Why:
v22 escalates 14 to 18 of each safety set's 40 harmless rows and nine of its eleven round-37
misses are that shape; its heads and neighbour features hold F41's rows, which contain no
safety set. v23 moved the delta instead and lost high prompts on both sides of the band.
Selectable, not the default: judged once by round 38's rule on eight fresh files it cost 126
against v22's 117, interval [-25, +44], with 10 high misses against 8 (fewer harmless safety
rows escalated, more of everything else). Needs the semantic extra.

Pinned here: v24 is selectable beside the default, reads v22's delta file itself, and its index
is F46's rows in order in both stages, F41's among them embedded exactly as v22 embeds them (one
delta, one encoder), so the rows it adds are the only change. The checks its recipe shares are
in ``test_lora_releases.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from corpus_files import F41, F46
from release_checks import assert_index_extends_v22s, need_semantic_extra, release_profiler

from loomc.policy.models import RiskSettings
from loomc.risk.factory import make_profiler
from loomc.risk.releases import LORA, RELEASES, RULES, release_of


@pytest.fixture(scope="module")
def v24() -> Any:
    need_semantic_extra()
    return release_profiler("v24")


def test_v24_is_v22s_delta_under_heads_on_more_rows_beside_the_default(v24: Any) -> None:
    assert v24.data_path == RELEASES["v24"] not in (RELEASES["v22"], RELEASES["v23"])
    assert release_of({"release": "v24"}) == "v24" == v24.release and release_of({}) == "v35"
    default: Any = make_profiler(RiskSettings(profiler="semantic"))
    assert default.release == "v35" and default.data_path == RELEASES["v35"]
    assert v24.rules == RULES["v24"] == RULES["v22"] == ("hazard-floor", "people-floor-wide")
    assert LORA["v24"] == LORA["v22"] and v24.second_encoder.delta.path == LORA["v22"]


def test_v24s_index_is_f46s_rows_with_f41s_embedded_as_v22_embeds_them(v24: Any) -> None:
    """Both stages hold F46's rows in file order; the first len(F41) are v22's rows, embedded
    bit for bit as in v22's files (the same static table, the same delta), so what v24 changes
    is the 479 safety rows its heads and neighbour features also see."""
    assert assert_index_extends_v22s(v24, F46, F41) == 479
