"""The learned planner on a tiny random Llama + LoRA built offline: the exact v2 prompt, greedy
left-padded batched decoding (deterministic, batch-size invariant), clear errors, and a random
model's plans never parse. Needs the conductor extra; skipped without it unless CI is set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from needs import need

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


torch = need("torch")
need("transformers")
peft = need("peft")

from tinymodel import attach_random_lora, build_tiny_model  # noqa: E402

from loomc.conductor.learned import (  # noqa: E402
    LearnedPlanner,
    LearnedPlannerError,
    LearnedPlannerUnavailable,
    encode_text,
    parse_proposal,
    prompt_of,
)
from loomc.conductor.plan import Plan, PlanParseError  # noqa: E402
from loomc.conductor.prompt_format import build_prompt  # noqa: E402

pytestmark = pytest.mark.conductor
MAX_NEW = 24


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("tiny-learned")
    base = build_tiny_model(root / "base")
    adapter = attach_random_lora(base, root / "adapter")
    return base, adapter


@pytest.fixture(scope="session")
def rows(shared_dir: Path) -> list[dict[str, Any]]:
    path = shared_dir / "reference" / "conductor-v2" / "validation.jsonl"
    with path.open(encoding="utf-8") as handle:
        return [json.loads(next(handle)) for _ in range(3)]


@pytest.fixture(scope="session")
def planner(tiny: tuple[Path, Path]) -> LearnedPlanner:
    base, adapter = tiny
    return LearnedPlanner(base, adapter, device="cpu", dtype="float32", max_new_tokens=MAX_NEW)


def test_adapter_saves_and_reloads_with_peft(tiny: tuple[Path, Path]) -> None:
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    base, adapter = tiny
    assert (adapter / "adapter_config.json").is_file()
    saved = load_file(str(adapter / "adapter_model.safetensors"))
    assert saved and all("lora_" in k for k in saved)
    model = peft.PeftModel.from_pretrained(
        AutoModelForCausalLM.from_pretrained(str(base), local_files_only=True), str(adapter)
    )
    loaded = peft.get_peft_model_state_dict(model)
    assert sorted(loaded) == sorted(saved)
    assert all(torch.equal(loaded[k], saved[k]) for k in saved)
    assert any(float(v.abs().sum()) > 0 for k, v in saved.items() if "lora_B" in k)


def test_prompt_is_the_exact_v2_row_prompt(
    planner: LearnedPlanner, rows: list[dict[str, Any]]
) -> None:
    for row in rows:
        assert prompt_of(row) == row["prompt"]
        rebuilt = {k: v for k, v in row.items() if k != "prompt"}
        assert prompt_of(rebuilt) == build_prompt(row["task"], row["constraints"], row["workers"])
        assert prompt_of(rebuilt) == row["prompt"]
        ids = encode_text(planner.tokenizer, row["prompt"])
        assert planner.tokenizer.decode(ids) == row["prompt"]  # byte-level: lossless, no BOS
        assert ids[0] != planner.tokenizer.bos_token_id
    gens = planner.generate_detailed([r["prompt"] for r in rows], batch_size=3)
    assert [g.input_tokens for g in gens] == [
        len(encode_text(planner.tokenizer, r["prompt"])) for r in rows
    ]


def test_generate_is_deterministic(planner: LearnedPlanner, rows: list[dict[str, Any]]) -> None:
    prompts = [r["prompt"] for r in rows]
    first = planner.generate_detailed(prompts, batch_size=3)
    second = planner.generate_detailed(prompts, batch_size=3)
    assert [g.token_ids for g in first] == [g.token_ids for g in second]
    assert [g.text for g in first] == [g.text for g in second] == planner.generate(prompts, 3)
    assert all(1 <= g.output_tokens == len(g.token_ids) <= MAX_NEW for g in first)
    assert len({g.token_ids for g in first}) > 1  # not one degenerate output for every prompt


def test_batch_size_one_equals_batch_size_three(
    planner: LearnedPlanner, rows: list[dict[str, Any]]
) -> None:
    prompts = [r["prompt"] for r in rows]
    one = planner.generate_detailed(prompts, batch_size=1)
    three = planner.generate_detailed(prompts, batch_size=3)
    assert [g.token_ids for g in one] == [g.token_ids for g in three]
    assert [g.text for g in one] == [g.text for g in three]
    assert [g.batch_size for g in one] == [1, 1, 1] and [g.batch_size for g in three] == [3, 3, 3]
    assert planner.propose(rows, batch_size=2) == [g.text for g in one]


def test_adapter_changes_the_output(
    tiny: tuple[Path, Path], planner: LearnedPlanner, rows: list[dict[str, Any]]
) -> None:
    bare = LearnedPlanner(tiny[0], None, device="cpu", max_new_tokens=MAX_NEW)
    assert bare.info["lane"] == "base_model" and planner.info["lane"] == "trained_conductor"
    prompts = [r["prompt"] for r in rows]
    with_adapter = [g.token_ids for g in planner.generate_detailed(prompts, 3)]
    without = [g.token_ids for g in bare.generate_detailed(prompts, 3)]
    assert with_adapter != without


def test_merged_adapter_computes_what_the_unmerged_one_does(
    tiny: tuple[Path, Path], planner: LearnedPlanner, rows: list[dict[str, Any]]
) -> None:
    """`merge_adapter` folds LoRA into the weights: no adapter layer is left, and in float32
    the logits are the unmerged adapter's (to rounding), not the bare base's."""
    base, adapter = tiny
    merged = LearnedPlanner(
        base, adapter, device="cpu", dtype="float32", max_new_tokens=MAX_NEW, merge_adapter=True
    )
    bare = LearnedPlanner(base, None, device="cpu", dtype="float32", merge_adapter=True)
    assert merged.info["adapter_merged"] is True and planner.info["adapter_merged"] is False
    assert bare.info["adapter_merged"] is False  # nothing to merge without an adapter
    lora_layers = [m for m in merged.model.modules() if isinstance(m, peft.tuners.lora.LoraLayer)]
    assert lora_layers == []
    ids = torch.tensor([encode_text(merged.tokenizer, rows[0]["prompt"])[:64]])
    with torch.inference_mode():
        folded = merged.model(input_ids=ids).logits
        unmerged = planner.model(input_ids=ids).logits
        without = bare.model(input_ids=ids).logits
    assert torch.allclose(folded, unmerged, atol=1e-5, rtol=1e-4)
    assert not torch.allclose(folded, without, atol=1e-3)


def test_random_model_plans_never_parse(
    planner: LearnedPlanner, rows: list[dict[str, Any]]
) -> None:
    reasons = []
    for row, text in zip(rows, planner.propose(rows), strict=True):
        plan, reason = parse_proposal(text, [w["id"] for w in row["workers"]])
        assert plan is None and reason, text
        reasons.append(reason)
        with pytest.raises(PlanParseError) as info:
            Plan.from_json(text)
        assert info.value.reason in {"invalid_json", "not_object"} or info.value.reason == reason
    assert set(reasons) <= {
        "no_json",
        "not_object",
        "missing_key",
        "wrong_type",
        "invalid_policy",
        "unknown_worker",
        "role_count",
        "duplicate_role",
        "out_of_range",
    }


def test_parse_proposal_accepts_a_real_target(rows: list[dict[str, Any]]) -> None:
    row = rows[0]
    plan, reason = parse_proposal(
        "noise " + row["target"] + " trailing", ["worker_a", "worker_b", "worker_c"]
    )
    assert reason is None and plan is not None and plan.to_json() == row["target"]


def test_bad_paths_name_the_path(tmp_path: Path, tiny: tuple[Path, Path]) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(LearnedPlannerError, match="no-such-model"):
        LearnedPlanner(missing, None)
    empty = tmp_path / "empty-adapter"
    empty.mkdir()
    with pytest.raises(LearnedPlannerError, match=r"empty-adapter.*adapter_config\.json"):
        LearnedPlanner(tiny[0], empty)
    with pytest.raises(LearnedPlannerError, match="batch_size"):
        LearnedPlanner(tiny[0], None, device="cpu", max_new_tokens=2).generate(["x"], 0)


def test_revision_is_recorded_and_a_wrong_snapshot_refused(
    tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    import shutil

    sha = "5b0ceedbb42dff466ae60b258ba296f32da51384"
    snapshot = tmp_path / "snapshots" / ("0" * 40)
    shutil.copytree(tiny[0], snapshot)
    with pytest.raises(LearnedPlannerError, match=f"not the requested revision {sha}"):
        LearnedPlanner(snapshot, None, revision=sha)
    ok = LearnedPlanner(snapshot, None, revision="0" * 40, device="cpu", max_new_tokens=1)
    assert ok.info["revision"] == "0" * 40


def test_missing_extra_is_a_clear_error(
    tiny: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` raise ImportError
    with pytest.raises(LearnedPlannerUnavailable, match="install the 'conductor' extra"):
        LearnedPlanner(tiny[0], tiny[1])


def test_importing_loomc_does_not_import_torch(project_root: Path) -> None:
    code = (
        "import sys, loomc, loomc.conductor.learned, loomc.cli.main; "
        "print(sorted(m for m in ('torch', 'transformers', 'peft') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=project_root, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
