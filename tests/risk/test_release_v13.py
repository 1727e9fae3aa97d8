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
the earlier releases' files untouched (v4-v12, v12's delta too), another base refused in one
line, and the same decisions from either int8 backend.

The checks every release of its recipe shares (its files' record, its delta, the seed suite,
determinism, the plain path, the static stage's retraining, both int8 backends) are one table
in ``test_lora_releases.py``; what is peculiar to it stays here.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from release_checks import (
    need_semantic_extra,
    release_profiler,
)

from loomc.policy.models import RiskSettings
from loomc.risk.factory import make_profiler
from loomc.risk.releases import DATA_FILE, RELEASES, RULES, release_of

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "loomc" / "risk" / "data"
# Every earlier release's files as shipped (v12's delta included): v13 must not touch them.
EARLIER = {
    "router-static.npz": "00f4fe69a34ceadef1907e3f46a7a2bd1d3f9357b33beb8aaec89f7dae54f724",
    "router-minilm.npz": "b21a584773a35d5e72c051807140535f3b31e972a09e4d3f33a010888118fef4",
    "router-static-v6.npz": "66d5c61e3b4802bb0f483d826a33433a3a8f22a275e4f3c4943f9df2866d08ef",
    "router-minilm-v6.npz": "e7187b0ded915ec967d7e4f98808642b83f68e948de8c7361441eed17832afc5",
    "router-static-v7.npz": "25a1e86a5d9474ef9f9a83c59a89775d17763abadc8f1c41211544d64c581840",
    "router-minilm-v7.npz": "bbac305fc7af007734c7e5a1771e1e830caae55bab15f93d41f0985d81627945",
    "router-static-v8.npz": "3882daf157471f3dc88051aa04bba8cfa98a9d5a0fca350502c637e39602c5d3",
    "router-minilm-v8.npz": "5faa55b91bbb644f6ef27cd36fd4ea42cdaafbd2f1477dd8053b20188f603b5e",
    "router-static-v9.npz": "0dd5fa33dc8ec1c400dc0753966c1cf360f02a3739820bfc4dac18b806a702c2",
    "router-minilm-v9.npz": "ca4b02a733d9988c270b08435bf5f3979a47de24ca429dac9f6c65003fccbcd1",
    "router-static-v10.npz": "5c6859ff9c77baba4fa07422f858c5cc5a6be56d077968891beb60317163e10b",
    "router-minilm-v10.npz": "1be6c59e9c007fe419d1c4e1fcfa5bc30b8a358fbded30de4764bbdfd7521c87",
    "router-static-v11.npz": "27f4e19023cd3a7ceaca3982f009ebb36b223f48fbecf6598b24894e9946e40b",
    "router-minilm-v11.npz": "c2160063f5db9254319864676b94e9febc15cce5f8c6bcf07f03ea49ca3904a1",
    "router-static-v12.npz": "3175d0fe3050bf3318d448df98d306976bfef942c1f998e2bc1df1b77157d3c2",
    "router-minilm-v12.npz": "756ea2594639908f79d4f74c0c4cbf827ec4cb4e1961dfbddb711ec92cd1cb8a",
    "minilm-lora-v12.npz": "d5637aff87c5e5aaa75471db4adafc74fe8f8548e69f86f7ec17df2f79c97a82",
}


@pytest.fixture(scope="module")
def v13() -> Any:
    need_semantic_extra()
    return release_profiler("v13")


def test_earlier_releases_files_are_unchanged() -> None:
    for name, digest in EARLIER.items():
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == digest, name


def test_v13_is_selected_by_name_and_is_no_longer_the_default(v13: Any) -> None:
    """route16's rule shipped v13 beside v12; the rule written before hard-test-15 was measured
    made it the default (on hard-test-15, which it was not trained on, its routing cost was
    strictly lower than the pool's pick's, v12, with no more high misses, the seed suite 24/24
    with and without hints, within the load and memory gates). Since hard-test-23 the default is
    v14: v13's files with the people-floor rule added (tests/risk/test_people.py); from
    hard-test-24, v15 (the floor read wider); from hard-test-27, v18: v13's delta under heads
    retrained on F40 (tests/risk/test_release_v18.py); from hard-test-28, v19: v18's recipe with
    the context block (tests/risk/test_release_v19.py); since round 36, v22: v19's heads over a
    delta of its own (tests/risk/test_release_v22.py)."""
    assert v13.data_path == RELEASES["v13"] and v13.release == "v13"
    assert release_of({}) == "v22" and release_of({"release": "v13"}) == "v13"
    default: Any = make_profiler(RiskSettings(profiler="semantic"))
    assert default.release == "v22" and default.rules == RULES["v22"]
    assert default.data_path == RELEASES["v22"] == DATA_FILE != RELEASES["v13"]
    assert v13.rules == RULES["v13"] == RULES["v12"] == ("hazard-floor",)
