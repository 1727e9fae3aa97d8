"""The cascade band a shipped release would have with another cap on the share it defers.

    PYTHONPATH=$PWD:$PWD/research python research/band_for_cap.py v13 0.20 0.15 0.10

Why: ``risk.options.band_low`` / ``band_high`` let a policy narrow the band (fewer prompts pay
MiniLM's pass), but a band read off a test split would be tuned on it. This chooses the band
the way ``train_router.py`` chose the release's own, from the release's files alone: both
stages' out-of-fold probabilities over its training rows (``cv_prob``, the thresholds before
the shift), the same cost, mode and grid (``router_fit.choose_band``), only with ``max_defer``
set to each cap. At the release's own cap it must give the shipped band back (v13: 0.20 ->
(0.11, 0.66)); the test checks that.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "research"))

from loomc.policy.models import RiskSettings  # noqa: E402
from loomc.risk.factory import make_keywords  # noqa: E402
from loomc.risk.files import DATA  # noqa: E402
from router_fit import choose_band, unshifted  # noqa: E402

CORPUS = ROOT / "evals" / "routing"


def training_rows(ids: Sequence[str]) -> list[dict[str, Any]]:
    """The labelled rows of ``ids`` (a router file's ``train_ids``), in that order."""
    by_id: dict[str, dict[str, Any]] = {}
    for path in sorted(CORPUS.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                by_id.setdefault(str(row["id"]), row)
    return [by_id[str(i)] for i in ids]


def bands(release: str, caps: Sequence[float]) -> list[tuple[float, float, float, float]]:
    """(low, high, train cost, share deferred) for each cap, on the release's training rows."""
    with np.load(DATA / f"router-static-{release}.npz", allow_pickle=False) as z:
        first = {k: z[k] for k in z.files}
    with np.load(DATA / f"router-minilm-{release}.npz", allow_pickle=False) as z:
        second = {k: z[k] for k in z.files}
    meta = json.loads(str(first["meta"]))
    rows = training_rows([str(i) for i in first["train_ids"]])
    keywords = make_keywords(RiskSettings())
    return [
        choose_band(
            unshifted(first),
            unshifted(second),
            rows,
            keywords,
            cost_high=float(meta.get("cost_high", 6.0)),
            mode=str(meta.get("cascade_mode", "decide")),
            max_defer=cap,
        )
        for cap in caps
    ]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2:
        raise SystemExit("usage: band_for_cap.py RELEASE CAP [CAP ...]")
    release, caps = args[0], [float(c) for c in args[1:]]
    for cap, (low, high, cost, share) in zip(caps, bands(release, caps), strict=True):
        print(
            f"{release}, cap {cap:.2f}: band_low {low:.2f}, band_high {high:.2f} "
            f"({share:.1%} of its training prompts deferred; training cost {cost:.0f})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
