"""LoRA SFT of a causal LM on `loom-conductor-v2` rows, as the published run did (CONDUCTOR-V2 §6).

    python -m loomc_research.train --base-model models/Ministral-3-14B-Base-2512 \\
        --train data/train.jsonl --eval data/validation.jsonl --output runs/conductor-v2

Every default is the published run's value (§6.2-§6.3): LoRA r 32 / alpha 64 / dropout 0.05 on
the seven projections, lr 1.5e-4 cosine, warmup max(1, round(0.05 x total steps)), weight decay
0.01, grad norm 1.0, 2 epochs, batch 32 x grad-accum 1 (the code default was 2 x 16, the same
effective 32), max length 1536, eval + save every 100 steps, keep 3, load best by eval_loss,
seed = data seed = 20260716. Loss only on the target + EOS (labels -100 on prompt tokens).

Built on the HF `Trainer` (not a plain loop) because the published numbers come from it: its
cosine/warmup schedule, fused AdamW, bf16 autocast, loss normalisation over grad-accumulation,
seeded sampler and its checkpoint layout (optimizer, scheduler, RNG states, `trainer_state.json`)
are what resuming must reproduce, and `resume_from_checkpoint` restores all of it exactly.

`--resume` continues from the newest `checkpoint-N` in `--output`. The final adapter goes to
`OUTPUT/adapter/` and `OUTPUT/receipt.json` records input and base-model hashes, adapter file
hashes, hyperparameters, steps, timings, losses and library versions. `--max-steps` and
`--limit` make smoke runs. Importable: `main(argv) -> int`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import re
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from loomc.conductor.learned import (
    LearnedPlannerError,
    encode_text,
    load_base_model,
    load_tokenizer,
    resolve_device,
    resolve_dtype,
    special_ids,
)
from loomc.eval.receipt import sha256_file
from loomc_research.sft import MAX_LENGTH, build_example, pad_examples
from loomc_research.train_setup import attach_lora, training_arguments

RECEIPT_SCHEMA = "loomc-conductor-train-receipt-v1"
DEFAULT_SEED = 20260716
LORA_TARGETS = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"
CHECKPOINT_RE = re.compile(r"^checkpoint-(\d+)$")


# ------------------------------------------------------------------------------------------
# Arguments


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="train_conductor", description="LoRA SFT on loom-conductor-v2 rows (§6)."
    )
    p.add_argument("--base-model", type=Path, required=True, help="local model directory")
    p.add_argument("--revision", help="base model revision, recorded in the receipt only")
    p.add_argument(
        "--train", type=Path, required=True, help="train JSONL (rows with prompt/target)"
    )
    p.add_argument("--eval", type=Path, help="eval JSONL; enables eval/best-checkpoint selection")
    p.add_argument("--output", type=Path, required=True, help="run directory")
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint")
    # LoRA (§6.3)
    p.add_argument("--lora-r", type=int, default=32)
    p.add_argument("--lora-alpha", type=int, default=64)
    p.add_argument("--lora-dropout", type=float, default=0.05)
    p.add_argument("--target-modules", default=LORA_TARGETS, help="comma-separated names")
    # optimisation (§6.3)
    p.add_argument("--learning-rate", "--lr", type=float, default=1.5e-4)
    p.add_argument("--scheduler", default="cosine")
    p.add_argument(
        "--warmup-ratio",
        type=float,
        default=0.05,
        help="warmup_steps = max(1, round(ratio x total steps))",
    )
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--max-grad-norm", type=float, default=1.0)
    p.add_argument("--optim", default="adamw_torch_fused")
    p.add_argument("--epochs", type=float, default=2.0)
    p.add_argument("--batch-size", type=int, default=32, help="per device (published: 32)")
    p.add_argument("--grad-accum", type=int, default=1, help="published: 1 (code default 16)")
    p.add_argument("--max-length", type=int, default=MAX_LENGTH)
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="also the data seed")
    p.add_argument("--eval-steps", type=int, default=100)
    p.add_argument("--save-steps", type=int, default=100)
    p.add_argument("--save-total-limit", type=int, default=3)
    p.add_argument("--eval-batch-size", type=int, default=1)
    p.add_argument("--logging-steps", type=int, default=1)
    p.add_argument(
        "--workers",
        type=int,
        default=min(8, os.cpu_count() or 1),
        help="dataloader workers (default min(8, CPUs))",
    )
    p.add_argument(
        "--no-gradient-checkpointing",
        dest="gradient_checkpointing",
        action="store_false",
        help="faster, more memory",
    )
    # device
    p.add_argument("--device", default="auto", help="auto (cuda if available), cuda, cpu")
    p.add_argument("--dtype", default="auto", help="auto (bf16 on GPU, fp32 on CPU), ...")
    # smoke runs
    p.add_argument("--max-steps", type=int, default=-1, help="stop after N optimizer steps")
    p.add_argument("--limit", type=int, help="use only the first N train rows")
    p.add_argument("--eval-limit", type=int, help="use only the first N eval rows")
    p.add_argument(
        "--hash-base",
        choices=("full", "config"),
        default="full",
        help="receipt: sha256 of every base-model file, or of the small files only",
    )
    return p


# ------------------------------------------------------------------------------------------
# Data


def read_rows(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    from loomc.sources import read_jsonl

    rows = read_jsonl(path)
    for number, row in enumerate(rows, start=1):
        if not isinstance(row.get("prompt"), str) or not isinstance(row.get("target"), str):
            raise ValueError(f"{path}: row {number} has no string prompt/target")
    return rows[:limit] if limit is not None else rows


def tokenize_rows(
    tokenizer: Any, rows: Sequence[Mapping[str, Any]], eos_id: int, max_length: int
) -> tuple[list[dict[str, list[int]]], int]:
    """§6.2: prompt and target tokenized separately, then `build_example`; (examples, truncated)."""
    examples = []
    truncated = 0
    for row in rows:
        prompt_ids = encode_text(tokenizer, row["prompt"])
        target_ids = encode_text(tokenizer, row["target"])
        ex = build_example(prompt_ids, target_ids, eos_id, max_length)
        truncated += len(ex["input_ids"]) < len(prompt_ids) + len(target_ids) + 1
        examples.append(ex)
    return examples, truncated


class Collator:
    """§6.2 collator: right-pad to the batch max rounded up to 8, labels -100, mask 1/0."""

    def __init__(self, pad_id: int) -> None:
        self.pad_id = pad_id

    def __call__(self, features: Sequence[Mapping[str, Sequence[int]]]) -> dict[str, Any]:
        import torch

        batch = pad_examples(features, self.pad_id)
        return {k: torch.tensor(v, dtype=torch.long) for k, v in batch.items()}


# ------------------------------------------------------------------------------------------
# Checkpoints and hashes


def latest_checkpoint(output: Path) -> Path | None:
    """The `checkpoint-N` with the largest N that holds a `trainer_state.json`."""
    if not output.is_dir():
        return None
    found = []
    for child in output.iterdir():
        m = CHECKPOINT_RE.match(child.name)
        if m and child.is_dir() and (child / "trainer_state.json").is_file():
            found.append((int(m.group(1)), child))
    return max(found)[1] if found else None


_SMALL_SUFFIXES = (".json", ".txt", ".model", ".jinja", ".py")


def hash_directory(path: Path, mode: str = "full") -> dict[str, Any]:
    """Per-file sha256 (relative paths, sorted) and one digest over `name  sha\\n` lines.

    mode `config` hashes only the small files (configs, tokenizer) and records the weight
    files' sizes, for quick runs on a base already verified against its shard hashes."""
    files: dict[str, Any] = {}
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        rel = f.relative_to(path).as_posix()
        if rel.startswith(".cache/") or "/." in f"/{rel}":
            continue
        if mode == "full" or f.suffix in _SMALL_SUFFIXES:
            files[rel] = {"sha256": sha256_file(f), "bytes": f.stat().st_size}
        else:
            files[rel] = {"sha256": None, "bytes": f.stat().st_size}
    listing = "".join(
        f"{name}  {entry['sha256'] or entry['bytes']}\n" for name, entry in files.items()
    )
    return {"mode": mode, "sha256": hashlib.sha256(listing.encode()).hexdigest(), "files": files}


def _checkpoint_step(checkpoint: Path | None) -> int:
    m = CHECKPOINT_RE.match(checkpoint.name) if checkpoint is not None else None
    return int(m.group(1)) if m else 0


def session_loss(history: Sequence[Mapping[str, Any]], start_step: int) -> float | None:
    """This session's mean training loss, from the losses it logged, each weighted by the steps
    it covers (a log at step s covers the steps since the log before it, or since `start_step`).

    Why not `Trainer`'s `training_loss`: after a resume, transformers before ~5.2x divides this
    session's summed loss by the *global* step count (a GPU check with 5.17 reported half the
    real loss after resuming at step 3 of 6; 5.24 divides by the session's steps). The logged
    losses mean the same in every version. Steps after the last log are not covered (none with
    the default `--logging-steps 1`)."""
    total = 0.0
    covered = 0
    previous = start_step
    for entry in history:
        step = entry.get("step")
        if "loss" not in entry or not isinstance(step, int) or step <= start_step:
            continue
        weight = step - previous
        total += float(entry["loss"]) * weight
        covered += weight
        previous = step
    return total / covered if covered else None


def _versions() -> dict[str, str | None]:
    import importlib.metadata as md

    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in ("torch", "transformers", "peft", "accelerate", "tokenizers", "loomc"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = None
    return out


def total_steps(rows: int, args: argparse.Namespace) -> tuple[int, int]:
    """(steps per epoch, total optimizer steps) the way `Trainer` counts them."""
    per_epoch = max(1, math.ceil(math.ceil(rows / args.batch_size) / args.grad_accum))
    if args.max_steps > 0:
        return per_epoch, args.max_steps
    return per_epoch, math.ceil(args.epochs * per_epoch)


# ------------------------------------------------------------------------------------------
# Main


def _fail(message: str) -> int:
    print(f"train_conductor: {message}", file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    t_start = time.perf_counter()
    output: Path = args.output
    if not args.base_model.is_dir():
        return _fail(f"base model directory not found: {args.base_model}")
    for name, path in (("train", args.train), ("eval", args.eval)):
        if path is not None and not path.is_file():
            return _fail(f"{name} file not found: {path}")
    resume_from = latest_checkpoint(output) if args.resume else None
    if not args.resume and latest_checkpoint(output) is not None:
        return _fail(f"{output} already has checkpoints; pass --resume or use a new --output")
    if args.resume and resume_from is None:
        print(f"train_conductor: no checkpoint in {output}; starting from scratch", file=sys.stderr)

    try:
        import peft  # noqa: F401  (the LoRA set-up imports it; fail early and clearly)
        import torch
        import transformers
    except ImportError as exc:
        return _fail(f"{exc}; install the 'conductor' extra (pip install -e '.[conductor]')")

    try:
        device = resolve_device(args.device)
        dtype = resolve_dtype(args.dtype, device)
    except LearnedPlannerError as exc:
        return _fail(str(exc))
    cuda = device.startswith("cuda")
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        torch.cuda.reset_peak_memory_stats()

    # data
    t0 = time.perf_counter()
    try:
        train_rows = read_rows(args.train, args.limit)
        eval_rows = read_rows(args.eval, args.eval_limit) if args.eval else []
        tokenizer = load_tokenizer(args.base_model)
        eos_id, pad_id = special_ids(tokenizer, args.base_model)
        train_ds, train_trunc = tokenize_rows(tokenizer, train_rows, eos_id, args.max_length)
        eval_ds, _ = tokenize_rows(tokenizer, eval_rows, eos_id, args.max_length)
    except (OSError, ValueError, LearnedPlannerError) as exc:
        return _fail(str(exc))
    if not train_ds:
        return _fail(f"{args.train}: no rows")
    t_data = time.perf_counter() - t0

    # model + LoRA
    t0 = time.perf_counter()
    transformers.set_seed(args.seed)
    try:
        model = load_base_model(args.base_model, dtype, device)
    except LearnedPlannerError as exc:
        return _fail(str(exc))
    model = attach_lora(model, args)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total_params = sum(p.numel() for p in model.parameters())
    t_model = time.perf_counter() - t0

    steps_per_epoch, steps_total = total_steps(len(train_ds), args)
    warmup = max(1, round(args.warmup_ratio * steps_total))
    has_eval = bool(eval_ds)
    targs = training_arguments(
        args,
        output,
        cuda=cuda,
        bf16=cuda and dtype == torch.bfloat16,
        has_eval=has_eval,
        warmup=warmup,
    )
    trainer = transformers.Trainer(
        model=model,
        args=targs,
        train_dataset=train_ds,
        eval_dataset=eval_ds or None,
        data_collator=Collator(pad_id),
    )
    start_step = _checkpoint_step(resume_from)
    t0 = time.perf_counter()
    result = trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    t_train = time.perf_counter() - t0

    t0 = time.perf_counter()
    adapter_dir = output / "adapter"
    trainer.save_model(str(adapter_dir))
    t_save = time.perf_counter() - t0

    state = trainer.state
    history = state.log_history
    losses = [h["loss"] for h in history if "loss" in h]
    evals = [{"step": h["step"], "eval_loss": h["eval_loss"]} for h in history if "eval_loss" in h]
    t0 = time.perf_counter()
    base_hash = hash_directory(args.base_model, args.hash_base)
    t_hash = time.perf_counter() - t0
    receipt: dict[str, Any] = {
        "schema": RECEIPT_SCHEMA,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "script_sha256": sha256_file(Path(__file__)),
        "inputs": {
            "train": {
                "path": str(args.train),
                "sha256": sha256_file(args.train),
                "rows": len(train_ds),
                "truncated_prompts": train_trunc,
            },
            "eval": (
                {"path": str(args.eval), "sha256": sha256_file(args.eval), "rows": len(eval_ds)}
                if args.eval
                else None
            ),
        },
        "base_model": {
            "path": str(args.base_model),
            "revision": args.revision,
            "class": type(model.get_base_model()).__name__,
            **base_hash,
        },
        "adapter": {"path": str(adapter_dir), **hash_directory(adapter_dir)},
        "hyperparameters": {
            k: (str(v) if isinstance(v, Path) else v) for k, v in sorted(vars(args).items())
        },
        "schedule": {
            "steps_per_epoch": steps_per_epoch,
            "total_steps": steps_total,
            "warmup_steps": warmup,
            "effective_batch": args.batch_size * args.grad_accum,
        },
        "parameters": {"trainable": trainable, "total": total_params},
        "steps": state.global_step,
        "epoch": state.epoch,
        "resumed_from": str(resume_from) if resume_from else None,
        "best_checkpoint": state.best_model_checkpoint,
        "final_loss": {
            "train_loss": session_loss(history, start_step),
            "trainer_train_loss": result.training_loss,
            "last_logged_loss": losses[-1] if losses else None,
            "eval_loss": evals[-1]["eval_loss"] if evals else None,
        },
        "eval_history": evals,
        "timings_s": {
            "data": round(t_data, 3),
            "model": round(t_model, 3),
            "train": round(t_train, 3),
            "save": round(t_save, 3),
            "hash_base": round(t_hash, 3),
            "wall": round(time.perf_counter() - t_start, 3),
            "train_runtime": result.metrics.get("train_runtime"),
        },
        "device": {
            "device": device,
            "dtype": str(dtype).removeprefix("torch."),
            "gpu": torch.cuda.get_device_name(0) if cuda else None,
            "peak_memory_bytes": torch.cuda.max_memory_allocated() if cuda else None,
        },
        "versions": _versions(),
    }
    receipt_path = output / "receipt.json"
    if resume_from is not None and receipt_path.is_file():
        # keep a trace of the earlier sessions of this run (their steps, times, losses)
        try:
            previous = json.loads(receipt_path.read_text(encoding="utf-8"))
        except ValueError:
            previous = {}
        sessions = list(previous.get("previous_sessions", []))
        if previous:
            sessions.append(
                {
                    k: previous.get(k)
                    for k in (
                        "created_at",
                        "steps",
                        "resumed_from",
                        "final_loss",
                        "timings_s",
                        "adapter",
                    )
                }
            )
        receipt["previous_sessions"] = sessions
    receipt_path.write_text(json.dumps(receipt, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(
        f"train_conductor: {state.global_step} steps, adapter {adapter_dir}, receipt "
        f"{receipt_path}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
