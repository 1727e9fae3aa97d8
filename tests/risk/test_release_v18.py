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
from loomc.risk.releases import DATA_FILE, LORA, RELEASES, RULES, release_of


@pytest.fixture(scope="module")
def v18() -> Any:
    need_semantic_extra()
    return release_profiler("v18")


def test_v18_is_selected_by_name_with_v15s_rules_over_v13s_delta(v18: Any) -> None:
    assert v18.data_path == RELEASES["v18"] != DATA_FILE and RELEASES["v18"] != RELEASES["v15"]
    assert v18.release == "v18" and release_of({"release": "v18"}) == "v18"
    default: Any = make_profiler(RiskSettings(profiler="semantic"))
    assert default.release == "v35" and default.data_path == RELEASES["v35"] == DATA_FILE
    assert v18.rules == RULES["v18"] == RULES["v15"] == ("hazard-floor", "people-floor-wide")
    assert LORA["v18"] == LORA["v13"]
