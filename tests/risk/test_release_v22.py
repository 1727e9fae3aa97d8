"""semantic-v22, round 33's candidate and the default since round 36 (evals/routing/README.md): v19's recipe and rows (v10's
columns with the context block, cost 6, delta 0.03, the band capped at 0.20, v15's rules, both
heads on F41) over a LoRA delta of its own, fine-tuned with v13's settings on F44 = F41 + every
file spent since (hard-test-27 ... -32, the lookalike and safety sets, hard-train-v30-extra and
-v32-extra). Why: every release since v13 serves v13's delta, tuned on F23; the heads learned
every later file, the encoder under them did not, and v19's misses on fresh splits share one
shape (a protective function taken away under a cosmetic request) that the later files hold.
The rows are v19's, so its files and the index in memory are v19's size. By the rule written
before round 36's eight fresh files (the fourth and last look), it replaced v19 as the default:
190 against 233 over rounds 33-36's fourteen files (1,360 prompts), paired interval [-74, -16],
13 high misses against 16; on the eight new files alone -27 [-49, -10].
Needs the semantic extra (and the ``onnx`` extra for the ORT check).

Pinned: v22 is the default (v19 stays selectable), what its heads were trained on (F41, by hash)
over which delta (its own, by name and sha256, tuned on F44 as the files are now), v15's rules,
the reference seed suite with and without hints, deterministic decisions, the plain-Python path
building the same block, the static stage retraining to the shipped thresholds, v19's files
untouched, another base refused in one line, the same decisions from either int8 backend.

The checks every release of its recipe shares (its files' record, its delta, the seed suite,
determinism, the plain path, the static stage's retraining, both int8 backends) are one table
in ``test_lora_releases.py``; what is peculiar to it stays here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from release_checks import (
    need_semantic_extra,
    release_profiler,
)

from loomc.policy.models import RiskSettings
from loomc.risk.factory import make_profiler
from loomc.risk.releases import DATA_FILE, LORA, RELEASES, RULES, release_of
from loomc.risk.signals import V10_WIDTH

DATA = Path(__file__).resolve().parents[2] / "loomc" / "risk" / "data"
WIDTH = {"v10": V10_WIDTH}


@pytest.fixture(scope="module")
def v22() -> Any:
    need_semantic_extra()
    return release_profiler("v22")


def test_v22_serves_v19s_recipe_over_its_own_delta(v22: Any) -> None:
    """v22's files were the default's from round 36 to 39 (v25 was v22 with the lexical floor);
    since round 41 the default is v27, v22's delta under heads that also learnt ordinary traffic."""
    assert v22.data_path == RELEASES["v22"] != DATA_FILE and RELEASES["v22"] != RELEASES["v19"]
    assert release_of({"release": "v22"}) == "v22" == v22.release and release_of({}) == "v35"
    default: Any = make_profiler(RiskSettings(profiler="semantic"))
    assert default.release == "v35" and default.data_path == RELEASES["v35"]
    assert v22.rules == RULES["v22"] == RULES["v19"] == ("hazard-floor", "people-floor-wide")
    assert LORA["v22"].name == "minilm-lora-v22.npz" and LORA["v22"] != LORA["v19"]


def test_v22_keeps_v19s_rows_so_its_index_is_v19s_size(v22: Any) -> None:
    """The memory gate's margin (150 MiB at 100,000 runs) is why the rows stay F41's: the
    static stage's train embeddings are v19's exactly, and both files hold as many rows."""
    with np.load(RELEASES["v19"]) as v19, np.load(RELEASES["v22"]) as mine:
        assert np.array_equal(v19["train_emb"], mine["train_emb"])
        assert list(v19["train_ids"]) == list(mine["train_ids"])
    second = v22.data_path.with_name(v22.router.cascade)
    with np.load(second) as z, np.load(DATA / "router-minilm-v19.npz") as v19:
        assert z["train_emb"].shape == v19["train_emb"].shape
        assert not np.array_equal(z["train_emb"], v19["train_emb"])  # another encoder
