"""The int8 MiniLM's pass before and after a change, interleaved call by call in one process.

    taskset -c 1 python benchmarks/bench_q8_ab.py BASE_TREE [--backend numpy|ort] [--rounds 5]

Why: the machine is shared, so two runs minutes apart compare machine load as much as code.
Here both trees' encoders (``loomc.risk.minilm_q8``: ``MiniLMQ8`` or ``OrtMiniLMQ8``) are
loaded in one process (the base tree's ``loomc`` imported first, then this tree's) and timed
alternately, call by call, at 16/32/64/128 tokens: CPU ms (``time.process_time``) of the pass
and pooling, min / median / max over ``--rounds`` of per-round medians of 15 calls, and the
base/new ratio of the medians. Make the base tree with ``git archive BASE | tar -x -C DIR``.
It checks the two give the same pooled vector at every length.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
LENGTHS = (16, 32, 64, 128)
TEXT = " ".join(["the quick brown fox jumps over a lazy dog near the river bank"] * 40)


def encoder(tree: Path, backend: str) -> Any:
    """A loaded q8 encoder whose code is ``tree``'s (``loomc`` re-imported from it)."""
    for name in [m for m in sys.modules if m == "loomc" or m.startswith("loomc.")]:
        del sys.modules[name]
    sys.path.insert(0, str(tree))
    try:
        mod = importlib.import_module("loomc.risk.minilm_q8")
    finally:
        sys.path.remove(str(tree))
    if not str(mod.__file__).startswith(str(tree)):
        raise SystemExit(f"loomc came from {mod.__file__}, not {tree}")
    enc = mod.MiniLMQ8() if backend == "numpy" else mod.OrtMiniLMQ8()
    enc.load()
    return enc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("base", type=Path, help="the before tree (git archive of the base commit)")
    ap.add_argument("--backend", choices=("numpy", "ort"), default="numpy")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    arms = {"base": encoder(args.base.resolve(), args.backend)}
    arms["new"] = encoder(ROOT, args.backend)
    ids = arms["base"].token_ids(TEXT)
    print(f"| {args.backend} q8, tokens | before ms (min / median / max) | after | ratio |")
    print("|---:|---:|---:|---:|")
    for n in LENGTHS:
        pooled = {a: e.pooled(ids[:n]) for a, e in arms.items()}
        if not np.array_equal(pooled["base"], pooled["new"]):
            gap = float(np.abs(pooled["base"] - pooled["new"]).max())
            print(f"  {n} tokens: the pooled vectors differ by up to {gap:.2e}")
        per: dict[str, list[float]] = {a: [] for a in arms}
        for _ in range(args.rounds):
            times: dict[str, list[float]] = {a: [] for a in arms}
            for _ in range(15):
                for a, e in arms.items():
                    t = time.process_time()
                    e.pooled(ids[:n])
                    times[a].append(time.process_time() - t)
            for a in arms:
                per[a].append(statistics.median(times[a]) * 1000)
        b, nw = per["base"], per["new"]
        print(
            f"| {n} | {min(b):.2f} / {statistics.median(b):.2f} / {max(b):.2f} "
            f"| {min(nw):.2f} / {statistics.median(nw):.2f} / {max(nw):.2f} "
            f"| {statistics.median(b) / statistics.median(nw):.2f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
