"""The int8 MiniLM's outlier input channels (``loomc.risk.minilm_q8.OUTLIERS``), from data.

    .venv/bin/python research/calibrate_q8.py [--prompts evals/routing/train.jsonl]

Why: per-tensor activation quantisation gives every input channel of a layer the step its
largest channel needs, and MiniLM's residual stream has an outlier dimension (99: ~30 at the
FFN's input where the median channel's largest |x| is under 2), so most inputs fell on a few
codes. A channel whose largest |x| over the calibration prompts (float64 MiniLM, all tokens)
is more than ``RATIO`` times the layer's median channel's is kept in float (at most ``TOP`` a
layer, the largest first). Prints the table to paste into ``minilm_q8.py``: a constant there,
so the encoder's definition is code, reviewed, not a file that could drift.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from loomc.risk.evaluate import load_rows  # noqa: E402
from loomc.risk.minilm import MiniLM  # noqa: E402

RATIO, TOP = 4.0, 4


def input_maxima(prompts: Sequence[str]) -> dict[str, np.ndarray]:
    """max |x_j| over every token of ``prompts`` at each linear layer's input (float64 model)."""
    enc = MiniLM("float64")
    enc.load()
    seen: dict[str, np.ndarray] = {}
    linear = enc._linear

    def watch(x: np.ndarray, key: str, residual: Any = None) -> np.ndarray:
        m = np.abs(x).max(axis=0)
        seen[key] = m if key not in seen else np.maximum(seen[key], m)
        return linear(x, key, residual)

    enc._linear = watch  # type: ignore[method-assign]
    enc.encode(list(prompts))
    return seen


def outliers(xmax: dict[str, np.ndarray]) -> dict[str, tuple[int, ...]]:
    out = {}
    for key in sorted(xmax, key=lambda k: (int(k.split(".")[0]), k)):
        m = xmax[key]
        order = [int(j) for j in np.argsort(-m, kind="stable")[:TOP]]
        big = tuple(j for j in order if m[j] > RATIO * float(np.median(m)))
        if big:
            out[key] = big
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--prompts", type=Path, default=ROOT / "evals" / "routing" / "train.jsonl")
    args = ap.parse_args(argv)
    table = outliers(input_maxima([str(r["prompt"]) for r in load_rows(args.prompts)]))
    print("OUTLIERS: dict[str, tuple[int, ...]] = {")
    for key, idx in table.items():
        print(f'    "{key}": {idx!r},')
    print("}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
