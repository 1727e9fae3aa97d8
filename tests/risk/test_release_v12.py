"""semantic-v12, a candidate release (branch route12): v11's recipe (v9's signal columns,
``hazard-floor``, cost 6, delta 0.03, the cascade with its band capped at 0.20) with its MiniLM
stage on a MiniLM fine-tuned on the corpus with LoRA (``research/finetune_minilm.py``), the
delta merged into the packaged base at load and quantised by ``minilm_q8``
(``loomc.risk.lora``). Needs the semantic extra (and the ``onnx`` extra for the ORT checks).

Pinned: selectable by name without touching the default (v11), what its files were trained on
(F16: v11's fourteen files + hard-test-9 + hard-train-v12-extra) and with (the second stage's meta names
``minilm-q8-lora`` and the delta's sha256), the delta's own meta, the reference seed suite with
and without hints, deterministic decisions, the plain-Python path's columns, the static stage
retraining to the shipped file, the earlier releases' files untouched (v4-v11), another base
refused in one line, and the same decisions from either int8 backend.

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
# Every earlier release's files as shipped: training v12 must not touch them.
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
}


@pytest.fixture(scope="module")
def v12() -> Any:
    need_semantic_extra()
    return release_profiler("v12")


def test_earlier_releases_files_are_unchanged() -> None:
    for name, digest in EARLIER.items():
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == digest, name


def test_v12_is_selected_by_name_and_is_no_longer_the_default(v12: Any) -> None:
    """v12 was the default from hard-test-12 to hard-test-15 (evals/routing/README.md: on
    hard-test-15 v13 cost less with no more high misses); it stays selectable."""
    assert v12.data_path == RELEASES["v12"] and v12.release == "v12"
    assert release_of({}) == "v22" and release_of({"release": "v12"}) == "v12"
    default: Any = make_profiler(RiskSettings(profiler="semantic"))
    assert default.release == "v22" and default.rules == RULES["v22"]
    assert default.data_path == RELEASES["v22"] == DATA_FILE != RELEASES["v13"]
    assert v12.rules == RULES["v12"] == RULES["v11"] == ("hazard-floor",)
