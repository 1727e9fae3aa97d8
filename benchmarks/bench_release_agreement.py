"""How many corpus decisions of one release differ between the numpy and ONNX Runtime backends.

    PYTHONPATH=. python benchmarks/bench_release_agreement.py [--release v12] [--every 1]

Why a separate script: ``bench_minilm_backends.py --q8-only`` compares the plain int8 MiniLM's
two backends over shared embedding tables, which holds for every release on that encoder. A
release on a LoRA-tuned encoder (``loomc.risk.lora``: the delta merged into the base at load,
then the same int8 definition) has its own weights on each backend, so the count has to come
from two whole profilers: every distinct prompt of ``evals/routing/*.jsonl`` and the reference
seed suite, profiled as served (embedding cache off) by each, levels compared. A plain script,
not a test: it takes a minute or two (the numpy int8 pass on the band's prompts).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from loomc.policy.models import RiskSettings  # noqa: E402
from loomc.risk.evaluate import load_rows  # noqa: E402
from loomc.risk.factory import make_profiler  # noqa: E402

SEED = ROOT.parent / "shared" / "reference" / "seed-evals" / "adaptive-routing-v1.jsonl"


def corpus_prompts() -> list[str]:
    paths = sorted((ROOT / "evals" / "routing").glob("*.jsonl"))
    if SEED.exists():
        paths.append(SEED)
    return list(dict.fromkeys(str(r["prompt"]) for p in paths for r in load_rows(p)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--release", default="v12")
    ap.add_argument("--every", type=int, default=1, help="every n-th prompt (1: all)")
    args = ap.parse_args(argv)
    prompts = corpus_prompts()[:: args.every]
    out: dict[str, Any] = {}
    for backend in ("numpy", "onnxruntime"):
        opts = {"release": args.release, "backend": backend, "cache": 0}
        prof: Any = make_profiler(RiskSettings(profiler="semantic", options=opts))
        c0 = time.process_time()
        out[backend] = prof.profile_many(prompts)
        print(f"{backend}: {time.process_time() - c0:.1f} s CPU", file=sys.stderr)
    band = sum(any("decided by MiniLM" in r for r in p.reasons) for p in out["numpy"])
    differ = sum(a.level != b.level for a, b in zip(out["numpy"], out["onnxruntime"], strict=True))
    gap = max(
        abs(a.probability - b.probability)
        for a, b in zip(out["numpy"], out["onnxruntime"], strict=True)
    )
    print(
        f"{args.release}: {len(prompts)} prompts, {band} decided by MiniLM; "
        f"{differ} decisions differ between numpy and onnxruntime; max |delta P| {gap:.2e}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
