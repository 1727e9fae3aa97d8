"""semantic-v13, the default release from hard-test-15 to -23 (its files served the default to -27; branch route16, the third try): v12's recipe (v9's signal
columns, ``hazard-floor``, cost 6, delta 0.03, the cascade with its band capped at 0.20, the
MiniLM stage on a MiniLM fine-tuned on the corpus with LoRA, merged at load and quantised by
``minilm_q8``: ``loomc.risk.lora``) on F23 = F16 + the spent hard-test-10 ... -14 +
hard-train-v14-extra + hard-train-v16-extra. Shipped by route16's rule (evals/routing/README.md:
its LOSO over hard-test-7 ... -14 against v12's recipe, then these gates). Needs the semantic
extra (and the ``onnx`` extra for the ORT check).

Pinned: the default since hard-test-15 (it was selectable beside v12 before), what its files were trained on (F23,
by hash) and with (the second stage's meta names ``minilm-q8-lora`` and the delta's sha256),
the delta's own meta, the reference seed suite with and without hints, deterministic
decisions, the plain-Python path's columns, the static stage retraining to the shipped file,
the earlier releases' files untouched (v4-v12, v12's delta too; ``test_shipped_data.py``), another base refused in one
line, and the same decisions from either int8 backend.

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
def v13() -> Any:
    need_semantic_extra()
    return release_profiler("v13")


def test_v13_is_selected_by_name_and_is_no_longer_the_default(v13: Any) -> None:
    """route16's rule shipped v13 beside v12; the rule written before hard-test-15 was measured
    made it the default (on hard-test-15, which it was not trained on, its routing cost was
    strictly lower than the pool's pick's, v12, with no more high misses, the seed suite 24/24
    with and without hints, within the load and memory gates). Since hard-test-23 the default is
    v14: v13's files with the people-floor rule added (tests/risk/test_people.py); from
    hard-test-24, v15 (the floor read wider); from hard-test-27, v18: v13's delta under heads
    retrained on F40 (tests/risk/test_release_v18.py); from hard-test-28, v19: v18's recipe with
    the context block (tests/risk/test_release_v19.py); from round 36, v22: v19's heads over a
    delta of its own (tests/risk/test_release_v22.py); from round 39, v25: v22 with the
    lexical floor (tests/risk/test_release_v25.py); in round 40, v26: v22's delta under heads
    that also learnt ordinary traffic (tests/risk/test_release_v26.py); since round 41, v27:
    the same recipe on every ordinary row (tests/risk/test_release_v27.py)."""
    assert v13.data_path == RELEASES["v13"] and v13.release == "v13"
    assert release_of({}) == "v35" and release_of({"release": "v13"}) == "v13"
    default: Any = make_profiler(RiskSettings(profiler="semantic"))
    assert default.release == "v35" and default.rules == RULES["v35"]
    assert default.data_path == RELEASES["v35"] == DATA_FILE != RELEASES["v13"]
    assert v13.rules == RULES["v13"] == RULES["v12"] == ("hazard-floor",)
