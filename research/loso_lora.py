"""semantic-v12 beside v10's recipe on plain q8: leave one of the three newest splits out (lora12).

    .venv/bin/python research/loso_lora.py --deltas DIR [--cache DIR] [--embed-only]

Why: v12 changes one thing against v10's recipe, the encoder of the MiniLM stage (the packaged
MiniLM with a LoRA delta fine-tuned on the corpus, merged and quantised by ``loomc.risk.lora``).
The rule (evals/routing/README.md, "semantic-v12") was written before this ran: each of
hard-test-6, -7 and -8 held out in turn; a fold's training = F14 (v9's twelve files + hard-test-7
+ hard-test-8) minus the held-out file; the fold's delta (``DIR/fold-<held>.npz``, made by
``research/finetune_minilm.py`` on exactly those files) fine-tuned on nothing else; two arms
with v10's flags (``loso_q8.fold``: cost 6, delta 0.02, situation-floor, the cascade deciding
its band with at most 35 % deferred), the second stage on plain q8 embeddings or on the fold's
LoRA-q8 embeddings, the static stage shared. Both arms' embeddings are the numpy reference's.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "research"))

import loso_q8 as lq  # noqa: E402
import loso_router as lr  # noqa: E402

F14 = (*lq.V9_FILES, "hard-test-7", "hard-test-8")  # route11's F14: v9's twelve, then -7, -8
HELD_OUT = ("hard-test-6", "hard-test-7", "hard-test-8")


def cached(path: Path, prompts: Sequence[str], encode: object) -> dict[str, np.ndarray]:
    """{prompt: embedding} from ``path`` if it holds exactly ``prompts``, else encoded and saved."""
    if path.exists():
        with np.load(path, allow_pickle=False) as z:
            if [str(p) for p in z["prompts"]] == list(prompts):
                return dict(zip(prompts, z["emb"], strict=True))
    emb = encode(list(prompts))  # type: ignore[operator]
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, prompts=np.array(list(prompts)), emb=emb)
    return dict(zip(prompts, emb, strict=True))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--deltas", type=Path, required=True, help="folder of fold-<held>.npz")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/lora12"))
    ap.add_argument("--only", choices=("plain", *HELD_OUT), help="embed this arm/fold and stop")
    args = ap.parse_args(argv)
    by_file = {name: lr.rows_of(name) for name in F14}
    prompts = list(dict.fromkeys(str(r["prompt"]) for rows in by_file.values() for r in rows))
    from loomc.risk.lora import MiniLMQ8Lora
    from loomc.risk.minilm_q8 import MiniLMQ8
    from loomc.risk.static import StaticEncoder

    static = cached(args.cache / "emb-static.npz", prompts, StaticEncoder().encode)
    if args.only in (None, "plain"):
        plain = cached(args.cache / "emb-q8.npz", prompts, MiniLMQ8().encode)
    lora: dict[str, dict[str, np.ndarray]] = {}
    for held in HELD_OUT:
        if args.only in (None, held):
            delta = args.deltas / f"fold-{held}.npz"
            with np.load(delta, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"]))
            want = [f"{n}.jsonl" for n in F14 if n != held]
            if meta["training_files"] != want:
                raise SystemExit(f"{delta} was trained on {meta['training_files']}, not {want}")
            enc = MiniLMQ8Lora(delta).encode
            lora[held] = cached(args.cache / f"emb-lora-{held}.npz", prompts, enc)
    if args.only:
        return 0
    print(
        "| arm | " + " | ".join(HELD_OUT) + " | accuracy | high missed | over | cost | deferred |"
    )
    print("|---|" + "---|" * len(HELD_OUT) + "---:|---:|---:|---:|---:|")
    for arm in ("v10 recipe, plain q8", "v12: LoRA q8 (the fold's delta)"):
        figs = []
        for held in HELD_OUT:
            train_rows = [r for n in F14 if n != held for r in by_file[n]]
            second = plain if arm.startswith("v10") else lora[held]
            scored = lq.fold(train_rows, by_file[held], static, second)
            figs.append(scored.figures(lq.DELTA))
        right = sum(f["acc"] * f["n"] for f in figs) / sum(f["n"] for f in figs)
        print(
            f"| {arm} | "
            + " | ".join(lr.cell(f) + f", {100 * float(f['deferred']):.0f}% deferred" for f in figs)
            + f" | {100 * right:.1f}% | {sum(int(f['high_missed']) for f in figs)} | "
            f"{sum(int(f['over']) for f in figs)} | {sum(int(f['cost']) for f in figs)} | "
            f"{100 * float(np.mean([f['deferred'] for f in figs])):.1f}% |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
