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
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from needs import need
from release_checks import (
    assert_deterministic,
    assert_files_record,
    assert_plain_path_reads_the_signal_columns,
    assert_seed_suite,
    assert_static_stage_retrains,
    meta_of,
    need_semantic_extra,
    release_profiler,
)

from loomc.policy.models import RiskSettings
from loomc.risk.base import RiskSettingsError
from loomc.risk.evaluate import load_rows
from loomc.risk.factory import make_profiler
from loomc.risk.releases import DATA_FILE, LORA, MINILM_KINDS, RELEASES, RULES, release_of
from loomc.risk.signals import SIGNAL_NAMES

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "evals" / "routing"
DATA = ROOT / "loomc" / "risk" / "data"
V12_FILES = (  # F16: v11's fourteen (its meta's corpus), the spent hard-test-9, data12's rows
    "train",
    "test",
    "hard-train",
    "hard-train-v5-extra",
    "hard-train-v8-extra",
    "hard-train-v9-extra",
    "hard-test",
    "hard-test-2",
    "hard-test-3",
    "hard-test-4",
    "hard-test-5",
    "hard-test-6",
    "hard-test-7",
    "hard-test-8",
    "hard-test-9",
    "hard-train-v12-extra",
)
WIDTH = {"v9": len(SIGNAL_NAMES)}
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
PROMPTS = [
    "Conjugate the verb 'poison' in the present tense.",
    "Add a docstring:\n\ndef load(blob):\n    return pickle.loads(blob)",
    "my 12 seed words are in my notes app, fine?",
    "¿Cuál es la capital de Australia?",
    "Le radiateur est branché sur une rallonge enroulée. Quelle couleur pour les rideaux ?",
    "I take warfarin; is it fine to add a daily aspirin for my knee?",
]


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
    assert release_of({}) == "v13" and release_of({"release": "v12"}) == "v12"
    default: Any = make_profiler(RiskSettings(profiler="semantic"))
    assert default.release == "v13" and default.rules == RULES["v13"]
    assert default.data_path == RELEASES["v13"] == DATA_FILE != RELEASES["v12"]
    assert v12.rules == RULES["v12"] == RULES["v11"] == ("hazard-floor",)


def test_v12_files_record_what_made_them(v12: Any) -> None:
    assert_files_record(v12, "v12", V12_FILES, WIDTH)
    second = v12.data_path.with_name(v12.router.cascade)
    meta = meta_of(second)
    assert meta["encoder_kind"] == MINILM_KINDS["v12"] == "minilm-q8-lora"
    assert meta["lora"] == LORA["v12"].name
    assert meta["lora_sha256"] == hashlib.sha256(LORA["v12"].read_bytes()).hexdigest()
    for path in (v12.data_path, second):  # v11's flags
        meta = meta_of(path)
        assert (meta["cost_high"], meta["delta"], meta["cascade_mode"]) == (6.0, 0.03, "decide")
        assert meta["signals"] == "v9"
    assert meta_of(v12.data_path)["max_defer"] == 0.2  # v11's band cap


def test_v12_delta_records_its_training(v12: Any) -> None:
    from loomc.risk.lora import Delta, file_sha256

    delta = Delta(LORA["v12"])
    meta = delta.meta
    assert meta["training_files"] == [f"{n}.jsonl" for n in V12_FILES]
    current = [hashlib.sha256((CORPUS / f"{n}.jsonl").read_bytes()).hexdigest() for n in V12_FILES]
    assert meta["training_sha256"] == current
    assert (meta["r"], meta["alpha"], meta["seed"], meta["max_tokens"]) == (8, 16.0, 12, 128)
    assert len(delta.factors) == 36 and len(meta["modules"]) == 36  # 6 Linears x 6 blocks
    assert meta["base_sha256"] == file_sha256(v12._minilm_dir / "model.safetensors")


def test_v12_serves_the_merged_int8_minilm(v12: Any) -> None:
    from loomc.risk.lora import MiniLMQ8Lora, OrtMiniLMQ8Lora
    from loomc.risk.releases import ort_missing

    enc = v12.second_encoder
    assert type(enc) is MiniLMQ8Lora  # numpy by default, as every kind (an eval's memory)
    assert enc.delta.path == LORA["v12"]
    fast: Any = make_profiler(
        RiskSettings(profiler="semantic", options={"release": "v12", "backend": "auto"})
    )
    assert type(fast.second_encoder) is (MiniLMQ8Lora if ort_missing() else OrtMiniLMQ8Lora)


def test_v12_refuses_another_base_in_one_line(tmp_path: Path) -> None:
    """An installed MiniLM other than the delta's base (one weight changed) is a settings
    error from make_profiler (the CLI's exit 2), one line, before any prompt."""
    need_semantic_extra()
    from loomc.risk.minilm import model_dir

    folder = tmp_path / "model"
    shutil.copytree(model_dir(), folder)
    blob = bytearray((folder / "model.safetensors").read_bytes())
    blob[-1] ^= 1
    (folder / "model.safetensors").write_bytes(bytes(blob))
    settings = RiskSettings(profiler="semantic", options={"release": "v12"})
    with pytest.raises(RiskSettingsError) as err:
        make_profiler(settings, minilm=lambda: folder)
    assert "\n" not in str(err.value) and "trained on another MiniLM" in str(err.value)


@pytest.mark.parametrize("hints", [True, False])
def test_v12_seed_suite(v12: Any, shared_dir: Path, hints: bool) -> None:
    assert_seed_suite(v12, shared_dir, hints)


def test_v12_is_deterministic_across_calls_and_batches(v12: Any) -> None:
    assert_deterministic(v12, "v12", PROMPTS)


def test_v12_plain_path_reads_the_same_columns(v12: Any) -> None:
    assert_plain_path_reads_the_signal_columns(v12, PROMPTS)


def test_v12_static_stage_retrains_to_the_shipped_file(v12: Any) -> None:
    assert_static_stage_retrains(v12, V12_FILES, "v9")


def test_v12_decides_alike_on_numpy_and_onnxruntime() -> None:
    """The same decisions whichever int8 backend serves the band (a sample of every corpus
    file; all corpus prompts: benchmarks/bench_minilm_backends.py's count, in the README)."""
    need_semantic_extra()
    for module in ("onnxruntime", "onnx"):
        need(module)
    paths = sorted(CORPUS.glob("*.jsonl"))
    prompts = list(dict.fromkeys(str(r["prompt"]) for p in paths for r in load_rows(p)))[::6]
    out = {}
    for backend in ("numpy", "onnxruntime"):
        opts = {"release": "v12", "backend": backend, "cache": 0}
        prof: Any = make_profiler(RiskSettings(profiler="semantic", options=opts))
        out[backend] = prof.profile_many(prompts)
    levels = {k: [p.level for p in v] for k, v in out.items()}
    assert levels["numpy"] == levels["onnxruntime"]
    probs = {k: np.array([p.probability for p in v]) for k, v in out.items()}
    assert float(np.abs(probs["numpy"] - probs["onnxruntime"]).max()) < 0.05
