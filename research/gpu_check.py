"""The learned conductor on a GPU: its code paths on CUDA, and the published run's shapes timed.

    python research/gpu_check.py --out OUT [--part cuda|scale|all] [--shape 14b|small]

Nothing in the test suite runs on a GPU (CI has none), so this script is what a session that is
lent one runs, once, as one command. It writes `OUT/gpu_check.json` after each part, so a run cut
short still returns what it measured.

**Part `cuda`: the real code paths on CUDA, on the tiny random model of the tests.**
`loomc_research.train.main` with `--device cuda` (bf16, TF32, fused AdamW, gradient
checkpointing, pinned memory: none of which a CPU run touches), a checkpoint, `--resume` that
continues from it, the receipt's device fields; then `LearnedPlanner` on CUDA with the adapter:
batch-size invariance of greedy decoding under bf16 and in float32, and float32 CUDA against
float32 CPU, as shares of identical token ids (a random model's output is compared as ids).

**Part `scale`: the 14B base's shape, random weights, the published settings.** No base model
can be fetched here, so the weights are random; time and memory depend on the shapes, not the
values. The text model of Ministral-3-14B-Base-2512: hidden 5,120, 40 layers, 32 query heads of
128 and 8 key/value heads, MLP 16,384, vocabulary 131,072. That shape is checked, not guessed:
LoRA r 32 on the seven projections of these 40 layers is 121,896,960 parameters, and on the
24 layers of the wrapper's Pixtral vision tower (hidden 1,024, MLP 4,096) another 18,087,936;
their float32 sum is 559,939,584 bytes, the published adapter file's 560,078,656 less a
safetensors header of 139,072 bytes. The vision tower is left out here (text ids never reach it).
Training: `attach_lora` and `training_arguments` of `loomc_research.train_setup` (what
`train.py` runs), batch 32 x grad-accum 1, examples shaped like §6.2's (a ~700-850-token prompt
masked out, a 100-160-token target + EOS), a few optimizer steps, each step timed between CUDA
synchronisations; the published run: 564 steps in 3,153 s with evaluation and saving, peak
74.6 GB allocated. Decoding: batch 96, left-padded, greedy, up to 180 new tokens, with the
adapter unmerged, as the published trained lane (p50 16,728 ms a 96-row batch).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

ROOT = Path(__file__).resolve().parents[1]
SHAPES: dict[str, dict[str, int]] = {
    "14b": {
        "hidden_size": 5120,
        "intermediate_size": 16384,
        "num_hidden_layers": 40,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 131072,
    },
    "small": {  # a dry run of the same code on a CPU
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 32,
        "vocab_size": 1024,
    },
}
PUBLISHED = {
    "train_steps": 564,
    "train_wall_s": 3153,
    "peak_allocated_gb": 74.6,
    "decode_batch": 96,
    "decode_p50_ms_trained": 16728,
}


def _write(out: Path, results: dict[str, Any]) -> None:
    (out / "gpu_check.json").write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")


def _same_share(a: list[tuple[int, ...]], b: list[tuple[int, ...]]) -> float:
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)


def part_cuda(out: Path, rows_path: Path, device: str) -> dict[str, Any]:
    """train.main on CUDA with a checkpoint and a resume, then LearnedPlanner on CUDA."""
    sys.path.insert(0, str(ROOT / "tests"))
    from tinymodel import build_tiny_model

    from loomc.conductor.learned import LearnedPlanner
    from loomc_research import train

    work = Path(tempfile.mkdtemp(prefix="gpu-check-"))
    base = build_tiny_model(work / "base")
    run = work / "run"
    common = [
        "--base-model", str(base), "--train", str(rows_path), "--eval", str(rows_path),
        "--output", str(run), "--limit", "64", "--eval-limit", "8", "--batch-size", "8",
        "--save-steps", "3", "--eval-steps", "3", "--workers", "0", "--device", device,
        "--hash-base", "config",
    ]  # fmt: skip
    first = train.main([*common, "--max-steps", "3"])
    receipt_1 = json.loads((run / "receipt.json").read_text())
    second = train.main([*common, "--max-steps", "6", "--resume"])
    receipt_2 = json.loads((run / "receipt.json").read_text())
    result: dict[str, Any] = {
        "train_exit_codes": [first, second],
        "steps": [receipt_1["steps"], receipt_2["steps"]],
        "resumed_from": receipt_2["resumed_from"],
        "device": receipt_2["device"],
        "final_loss": receipt_2["final_loss"],
        "eval_history": receipt_2["eval_history"],
        "versions": receipt_2["versions"],
    }
    rows = [json.loads(line) for line in rows_path.read_text().splitlines()[:16]]
    adapter = run / "adapter"

    def ids(planner: LearnedPlanner, batch: int) -> list[tuple[int, ...]]:
        prompts = [r["prompt"] for r in rows]
        return [g.token_ids for g in planner.generate_detailed(prompts, batch)]

    bf16 = LearnedPlanner(base, adapter, device=device, dtype="auto", max_new_tokens=48)
    b1, b16 = ids(bf16, 1), ids(bf16, 16)
    result["decode_dtype_auto"] = bf16.info["dtype"]
    result["bf16_batch1_vs_batch16_same"] = _same_share(b1, b16)
    f32 = LearnedPlanner(base, adapter, device=device, dtype="float32", max_new_tokens=48)
    g1, g16 = ids(f32, 1), ids(f32, 16)
    cpu = LearnedPlanner(base, adapter, device="cpu", dtype="float32", max_new_tokens=48)
    c16 = ids(cpu, 16)
    result["fp32_batch1_vs_batch16_same"] = _same_share(g1, g16)
    result["fp32_gpu_vs_cpu_same"] = _same_share(g16, c16)
    result["bf16_vs_fp32_same"] = _same_share(b16, g16)
    return result


def _examples(
    rng: random.Random, n: int, vocab: int, eos: int, prompt: tuple[int, int]
) -> list[dict[str, list[int]]]:
    from loomc_research.sft import build_example

    out = []
    for _ in range(n):
        p = [rng.randrange(3, vocab) for _ in range(rng.randint(*prompt))]
        t = [rng.randrange(3, vocab) for _ in range(rng.randint(100, 160))]
        out.append(build_example(p, t, eos))
    return out


def part_scale(
    out: Path,
    results: dict[str, Any],
    shape: str,
    device: str,
    steps: int,
    decode_batches: int,
    prompt_len: tuple[int, int],
    merge: bool,
) -> dict[str, Any]:
    """Random weights in the base's shape: LoRA training steps and batched decoding, timed."""
    import torch
    import transformers

    from loomc_research import train
    from loomc_research.train_setup import attach_lora, training_arguments

    cuda = device.startswith("cuda")
    dtype = torch.bfloat16 if cuda else torch.float32
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    dims = SHAPES[shape]
    config = transformers.MistralConfig(
        **dims, max_position_embeddings=4096, rope_theta=1e6, tie_word_embeddings=False
    )
    t0 = time.perf_counter()
    transformers.set_seed(20260716)
    with torch.device(device):
        model = transformers.MistralForCausalLM._from_config(config, dtype=dtype)
    if cuda:
        torch.cuda.synchronize()
    result: dict[str, Any] = {
        "shape": dims,
        "build_s": round(time.perf_counter() - t0, 2),
        "base_parameters": sum(p.numel() for p in model.parameters()),
        "gpu": torch.cuda.get_device_name(0) if cuda else None,
        "published": PUBLISHED,
    }
    args = train.build_parser().parse_args(
        ["--base-model", ".", "--train", "x", "--output", "x", "--max-steps", str(steps),
         "--save-steps", "1000000", "--workers", "0", "--logging-steps", "1"]
    )  # fmt: skip
    model = attach_lora(model, args)
    result["trainable_parameters"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
    rng = random.Random(20260716)
    eos, pad = 2, 0
    data = _examples(rng, args.batch_size * steps, dims["vocab_size"], eos, prompt_len)
    result["train_tokens_per_step_mean"] = round(sum(len(e["input_ids"]) for e in data) / steps, 1)
    step_times: list[float] = []

    class Timer(transformers.TrainerCallback):  # type: ignore[misc]
        started = 0.0

        def on_step_begin(self, *a: Any, **k: Any) -> None:
            if cuda:
                torch.cuda.synchronize()
            self.started = time.perf_counter()

        def on_step_end(self, *a: Any, **k: Any) -> None:
            if cuda:
                torch.cuda.synchronize()
            step_times.append(time.perf_counter() - self.started)

    work = Path(tempfile.mkdtemp(prefix="gpu-scale-"))
    targs = training_arguments(args, work, cuda=cuda, bf16=cuda, has_eval=False, warmup=1)
    trainer = transformers.Trainer(
        model=model,
        args=targs,
        train_dataset=data,
        data_collator=train.Collator(pad),
        callbacks=[Timer()],
    )
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    trained = trainer.train()
    result["train_wall_s"] = round(time.perf_counter() - t0, 2)
    result["train_step_s"] = [round(s, 3) for s in step_times]
    steady = step_times[1:] or step_times
    result["train_step_s_median_after_first"] = round(statistics.median(steady), 3)
    result["train_loss"] = trained.training_loss
    if cuda:
        result["train_peak_allocated_gb"] = round(torch.cuda.max_memory_allocated() / 1e9, 2)
        result["train_peak_reserved_gb"] = round(torch.cuda.max_memory_reserved() / 1e9, 2)
    result["projected_564_steps_s"] = round(564 * statistics.median(steady), 1)
    results["scale"] = result  # written now: decoding may not finish
    _write(out, results)

    # decoding: the LearnedPlanner settings (greedy, left-padded, stop only on EOS)
    model.eval()
    model.config.use_cache = True
    base_model = model.get_base_model()
    for name in ("activation_checkpointing_disable", "gradient_checkpointing_disable"):
        if hasattr(base_model, name):  # the transformers 5 name first
            getattr(base_model, name)()
            break
    batch = 96 if shape == "14b" else 8
    lens = [rng.randint(*prompt_len) for _ in range(batch)]
    width = max(lens)
    ids = [
        [pad] * (width - n) + [rng.randrange(3, dims["vocab_size"]) for _ in range(n)] for n in lens
    ]
    ids_t = torch.tensor(ids, device=device)
    mask_t = torch.tensor([[0] * (width - n) + [1] * n for n in lens], device=device)

    def timed(lane: str, new_tokens: int) -> tuple[dict[str, Any], list[list[int]]]:
        gen_config = transformers.GenerationConfig(
            do_sample=False, num_beams=1, max_length=width + new_tokens, eos_token_id=eos,
            pad_token_id=pad, use_cache=True,
        )  # fmt: skip
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        with torch.inference_mode():
            generated = model.generate(
                input_ids=ids_t, attention_mask=mask_t, generation_config=gen_config
            )
        if cuda:
            torch.cuda.synchronize()
        elapsed = (time.perf_counter() - t0) * 1000
        new = generated.shape[1] - width
        peak = round(torch.cuda.max_memory_allocated() / 1e9, 2) if cuda else None
        record = {
            "lane": lane,
            "batch": batch,
            "prompt_width": width,
            "new_tokens": int(new),
            "ms": round(elapsed, 1),
            "ms_per_token_step": round(elapsed / max(1, new), 2),
            "peak_allocated_gb": peak,
        }
        return record, generated[:, width:].tolist()

    timed("warm-up", 8)  # kernels chosen and caches allocated outside the timed batches
    decode: list[dict[str, Any]] = []
    unmerged: list[list[int]] = []
    for _ in range(decode_batches):
        record, unmerged = timed("adapter unmerged (LearnedPlanner)", 180)
        decode.append(record)
    if merge:
        model = model.merge_and_unload()  # LoRA folded into the bf16 base weights
        for _ in range(decode_batches):
            record, merged = timed("adapter merged", 180)
            decode.append(record)
        result["merged_vs_unmerged_same_rows"] = sum(
            a == b for a, b in zip(unmerged, merged, strict=True)
        ) / len(merged)
    result["decode"] = decode
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--part", choices=("cuda", "scale", "all"), default="all")
    p.add_argument("--shape", choices=tuple(SHAPES), default="14b")
    p.add_argument("--device", default="cuda")
    p.add_argument("--rows", type=Path, default=ROOT / ".gpu" / "rows.jsonl")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--decode-batches", type=int, default=2)
    p.add_argument(
        "--prompt-tokens", default="700-850", help="LO-HI: each synthetic prompt's length"
    )
    p.add_argument("--merge", action="store_true", help="also decode with the adapter merged")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if args.part in ("cuda", "all"):
        t0 = time.perf_counter()
        results["cuda"] = part_cuda(args.out, args.rows, args.device)
        results["cuda"]["wall_s"] = round(time.perf_counter() - t0, 1)
        _write(args.out, results)
        print(json.dumps(results["cuda"], indent=1), flush=True)
    if args.part in ("scale", "all"):
        t0 = time.perf_counter()
        lo, hi = (int(x) for x in args.prompt_tokens.split("-"))
        results["scale"] = part_scale(
            args.out, results, args.shape, args.device, args.steps, args.decode_batches,
            (lo, hi), args.merge,
        )  # fmt: skip
        results["scale"]["wall_s"] = round(time.perf_counter() - t0, 1)
        _write(args.out, results)
        print(json.dumps(results["scale"], indent=1), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
