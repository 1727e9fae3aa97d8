"""`loomc_research.train` in-process on a tiny random Llama: the §6.2 loss mask, the §6.3
defaults, 3 CPU steps on 4 rows with a checkpoint, a resume that continues (not restarts), the
receipt's hashes, and the trained adapter loading into LearnedPlanner (whose random plans fail to
parse). Needs the conductor extra; skipped without it unless CI is set."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from needs import need

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


torch = need("torch")
transformers = need("transformers")
need("peft")

from tinymodel import build_tiny_model  # noqa: E402

from loomc.conductor.learned import (  # noqa: E402
    LearnedPlanner,
    encode_text,
    parse_proposal,
)
from loomc_research import train as tc  # noqa: E402
from loomc_research.sft import IGNORE_INDEX, build_example  # noqa: E402

pytestmark = pytest.mark.conductor
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny-train") / "base")


@pytest.fixture(scope="session")
def data(shared_dir: Path) -> Path:
    return shared_dir / "reference" / "conductor-v2" / "validation.jsonl"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _args(base: Path, data: Path, out: Path, *extra: str) -> list[str]:
    return [
        "--base-model",
        str(base),
        "--train",
        str(data),
        "--output",
        str(out),
        "--limit",
        "4",
        "--batch-size",
        "2",
        "--grad-accum",
        "1",
        "--save-steps",
        "2",
        "--workers",
        "0",
        "--device",
        "cpu",
        *extra,
    ]


@pytest.fixture(scope="session")
def run(base: Path, data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """3 steps, then --resume to 5; counts the optimizer steps each session really ran."""
    out = tmp_path_factory.mktemp("train-run") / "run"
    calls: list[int] = []
    original = transformers.Trainer.training_step

    def counting(self: Any, *a: Any, **k: Any) -> Any:
        calls.append(1)
        return original(self, *a, **k)

    mp = pytest.MonkeyPatch()
    mp.setattr(transformers.Trainer, "training_step", counting)
    try:
        assert tc.main(_args(base, data, out, "--max-steps", "3")) == 0
        first_calls = len(calls)
        first_receipt = json.loads((out / "receipt.json").read_text())
        first_state = json.loads((out / "checkpoint-3" / "trainer_state.json").read_text())
        checkpoints_after_first = sorted(p.name for p in out.glob("checkpoint-*"))
        assert tc.main(_args(base, data, out, "--max-steps", "5", "--resume")) == 0
        second_calls = len(calls) - first_calls
    finally:
        mp.undo()
    return {
        "out": out,
        "first_calls": first_calls,
        "second_calls": second_calls,
        "first_receipt": first_receipt,
        "first_state": first_state,
        "checkpoints_after_first": checkpoints_after_first,
        "receipt": json.loads((out / "receipt.json").read_text()),
    }


def test_loss_mask_covers_exactly_the_prompt(base: Path, data: Path) -> None:
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(base), local_files_only=True)
    rows = tc.read_rows(data, limit=4)
    eos = tokenizer.eos_token_id
    examples, truncated = tc.tokenize_rows(tokenizer, rows, eos, 1536)
    assert truncated == 0
    for row, ex in zip(rows, examples, strict=True):
        p_ids = encode_text(tokenizer, row["prompt"])
        t_ids = encode_text(tokenizer, row["target"])
        assert ex["input_ids"] == p_ids + t_ids + [eos]
        assert ex["labels"][: len(p_ids)] == [IGNORE_INDEX] * len(p_ids)
        assert ex["labels"][len(p_ids) :] == [*t_ids, eos]
        assert (
            tokenizer.decode(
                [t for t in ex["labels"] if t != IGNORE_INDEX], skip_special_tokens=True
            )
            == row["target"]
        )
    batch = tc.Collator(tokenizer.pad_token_id)(examples[:2])
    width = max(len(e["input_ids"]) for e in examples[:2])
    assert batch["input_ids"].shape[1] % 8 == 0 and batch["input_ids"].shape[1] >= width
    for i, ex in enumerate(examples[:2]):
        n = len(ex["input_ids"])
        assert batch["labels"][i, n:].eq(IGNORE_INDEX).all()
        assert batch["input_ids"][i, n:].eq(tokenizer.pad_token_id).all()
        assert (
            batch["attention_mask"][i, :n].eq(1).all()
            and batch["attention_mask"][i, n:].eq(0).all()
        )
        assert batch["labels"][i, :n].tolist() == ex["labels"]


def test_overlong_prompt_keeps_front_and_back() -> None:
    ex = build_example(list(range(100)), [900, 901], 2, max_length=33)  # avail = 30
    front, back = 10, 20  # min(160, 30 // 3), 30 - 10
    assert ex["input_ids"] == [*range(front), *range(100 - back, 100), 900, 901, 2]
    assert ex["labels"] == [IGNORE_INDEX] * 30 + [900, 901, 2]
    with pytest.raises(ValueError, match="max_length"):
        build_example([1], list(range(40)), 2, max_length=33)


def test_defaults_are_the_published_hyperparameters() -> None:
    a = tc.build_parser().parse_args(["--base-model", "b", "--train", "t", "--output", "o"])
    assert (a.lora_r, a.lora_alpha, a.lora_dropout) == (32, 64, 0.05)
    assert a.target_modules.split(",") == [
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
    ]
    assert (a.learning_rate, a.scheduler, a.warmup_ratio, a.weight_decay, a.max_grad_norm) == (
        1.5e-4,
        "cosine",
        0.05,
        0.01,
        1.0,
    )
    assert (a.epochs, a.batch_size, a.grad_accum, a.max_length) == (2, 32, 1, 1536)
    assert (a.optim, a.seed, a.eval_steps, a.save_steps, a.save_total_limit) == (
        "adamw_torch_fused",
        20260716,
        100,
        100,
        3,
    )
    per_epoch, total = tc.total_steps(9000, a)  # the published run: 282/epoch, 564, warmup 28
    assert (per_epoch, total, max(1, round(a.warmup_ratio * total))) == (282, 564, 28)


def test_three_steps_write_a_checkpoint_and_resume_continues(run: dict[str, Any]) -> None:
    assert run["first_calls"] == 3
    assert run["checkpoints_after_first"] == ["checkpoint-2", "checkpoint-3"]
    assert run["first_state"]["global_step"] == 3
    assert run["first_receipt"]["steps"] == 3 and run["first_receipt"]["resumed_from"] is None
    # the resumed session ran only steps 4-5, from checkpoint-3, not a restart from 0
    assert run["second_calls"] == 2
    receipt = run["receipt"]
    assert receipt["steps"] == 5
    assert Path(receipt["resumed_from"]).name == "checkpoint-3"
    state = json.loads((run["out"] / "checkpoint-5" / "trainer_state.json").read_text())
    assert state["global_step"] == 5
    logged = [h["step"] for h in state["log_history"] if "loss" in h]
    assert logged == [1, 2, 3, 4, 5]
    first = {h["step"]: h["loss"] for h in run["first_state"]["log_history"] if "loss" in h}
    assert {
        h["step"]: h["loss"] for h in state["log_history"] if h.get("step", 9) <= 3 and "loss" in h
    } == first
    assert receipt["previous_sessions"][0]["steps"] == 3


def test_receipt_train_loss_is_the_sessions_own_mean(run: dict[str, Any]) -> None:
    """A fresh session's loss agrees with the Trainer's; a resumed one's covers only its own
    steps 4-5 (transformers 5.17 divided their sum by all 5 steps: a GPU check saw half)."""
    first = run["first_receipt"]["final_loss"]
    assert first["train_loss"] == pytest.approx(first["trainer_train_loss"], rel=1e-3)
    state = json.loads((run["out"] / "checkpoint-5" / "trainer_state.json").read_text())
    steps_4_5 = [h["loss"] for h in state["log_history"] if "loss" in h and h["step"] > 3]
    assert len(steps_4_5) == 2
    resumed = run["receipt"]["final_loss"]["train_loss"]
    assert resumed == pytest.approx(sum(steps_4_5) / 2, rel=1e-9)
    # the first session's mean is not what the resumed one reports: its own steps are
    assert resumed != pytest.approx(first["train_loss"], rel=1e-6)


def test_session_loss_weights_each_log_by_the_steps_it_covers() -> None:
    history = [{"step": 2, "loss": 4.0}, {"step": 3, "eval_loss": 9.0}, {"step": 5, "loss": 1.0}]
    assert tc.session_loss(history, 0) == pytest.approx((4.0 * 2 + 1.0 * 3) / 5)
    assert tc.session_loss(history, 2) == pytest.approx(1.0)
    assert tc.session_loss(history, 5) is None


def test_receipt_has_the_hashes(run: dict[str, Any], base: Path, data: Path) -> None:
    r = run["receipt"]
    assert r["inputs"]["train"]["sha256"] == _sha(data) and r["inputs"]["train"]["rows"] == 4
    assert r["base_model"]["files"]["model.safetensors"]["sha256"] == _sha(
        base / "model.safetensors"
    )
    assert r["base_model"]["files"]["config.json"]["sha256"] == _sha(base / "config.json")
    assert len(r["base_model"]["sha256"]) == 64
    adapter = run["out"] / "adapter"
    for name in ("adapter_model.safetensors", "adapter_config.json"):
        assert r["adapter"]["files"][name]["sha256"] == _sha(adapter / name)
    hp = r["hyperparameters"]
    assert (hp["lora_r"], hp["lora_alpha"], hp["learning_rate"], hp["max_steps"]) == (
        32,
        64,
        1.5e-4,
        5,
    )
    assert r["schedule"]["warmup_steps"] == 1 and r["schedule"]["total_steps"] == 5
    assert r["parameters"]["trainable"] > 0 and r["device"]["device"] == "cpu"
    assert r["final_loss"]["train_loss"] > 0 and r["final_loss"]["last_logged_loss"] > 0
    assert r["timings_s"]["wall"] > 0 and r["timings_s"]["train"] > 0
    for lib in ("torch", "transformers", "peft"):
        assert r["versions"][lib]


def test_trained_adapter_loads_and_its_random_plans_fail(
    run: dict[str, Any], base: Path, data: Path
) -> None:
    planner = LearnedPlanner(base, run["out"] / "adapter", device="cpu", max_new_tokens=16)
    rows = tc.read_rows(data, limit=3)
    texts = planner.propose(rows, batch_size=3)
    assert len(texts) == 3
    for row, text in zip(rows, texts, strict=True):
        plan, reason = parse_proposal(text, [w["id"] for w in row["workers"]])
        assert plan is None and reason in {"no_json", "not_object", "missing_key", "wrong_type"}


def test_refuses_to_clobber_and_names_bad_paths(
    run: dict[str, Any], base: Path, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert tc.main(_args(base, data, run["out"], "--max-steps", "1")) == 1
    assert "--resume" in capsys.readouterr().err
    assert tc.main(_args(tmp_path / "nope", data, tmp_path / "o")) == 1
    assert "nope" in capsys.readouterr().err
    assert tc.main(_args(base, tmp_path / "missing.jsonl", tmp_path / "o")) == 1
    assert "missing.jsonl" in capsys.readouterr().err
