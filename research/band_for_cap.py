"""The cascade band a shipped release would have with another cap on the share it defers.

    PYTHONPATH=$PWD:$PWD/research python research/band_for_cap.py v13 0.20 0.15 0.10

Why: ``risk.options.band_low`` / ``band_high`` let a policy narrow the band (fewer prompts pay
MiniLM's pass), but a band read off a test split would be tuned on it. This chooses the band
the way ``train_router.py`` chose the release's own, from the release's files alone: both
stages' out-of-fold probabilities over its training rows (``cv_prob``, the thresholds before
the shift), the same cost, mode, weighing of ordinary rows and grid (``router_fit.choose_band``),
only with ``max_defer`` set to each cap. At the release's own cap it must give the shipped band back (v13: 0.20 ->
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
from router_fit import COST_FN_HIGH, MAX_DEFER, choose_band  # noqa: E402
from router_shift import unshifted  # noqa: E402
from strata import ordinary_weights, rows_and_strata  # noqa: E402

CORPUS = ROOT / "evals" / "routing"


def release_band_inputs(
    release: str,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], list[dict[str, Any]], dict[str, Any]]:
    """What ``train_router.py`` chose the release's band from: its two files with the thresholds
    before the shift, its training rows (its meta's corpus files, each read once, checked against
    the file's ``train_ids``) and the settings its meta records (the cost of a missed high
    prompt, the band's mode, its cap, the weighing of ordinary rows), as ``choose_band``'s
    keyword arguments."""
    files = [DATA / f"router-{stage}-{release}.npz" for stage in ("static", "minilm")]
    if not all(f.is_file() for f in files):
        raise SystemExit(f"{release}: not a release with a cascade band here (no {files[0].name})")
    with np.load(DATA / f"router-static-{release}.npz", allow_pickle=False) as z:
        first = {k: z[k] for k in z.files}
    with np.load(DATA / f"router-minilm-{release}.npz", allow_pickle=False) as z:
        second = {k: z[k] for k in z.files}
    meta = json.loads(str(first["meta"]))
    rows, strata = rows_and_strata([CORPUS / name for name in meta["corpus"]])
    if [str(r["id"]) for r in rows] != [str(i) for i in first["train_ids"]]:
        raise SystemExit(f"{release}: its corpus files no longer hold its training rows")
    settings = {
        "cost_high": float(meta.get("cost_high", COST_FN_HIGH)),
        "mode": str(meta.get("cascade_mode", "decide")),
        "max_defer": float(meta.get("max_defer", MAX_DEFER)),
        "weight": ordinary_weights(strata, meta.get("ordinary_weight")),
    }
    return unshifted(first), unshifted(second), rows, settings


def bands(release: str, caps: Sequence[float]) -> list[tuple[float, float, float, float]]:
    """(low, high, train cost, share deferred) for each cap, on the release's training rows."""
    first, second, rows, settings = release_band_inputs(release)
    keywords = make_keywords(RiskSettings())
    return [
        choose_band(first, second, rows, keywords, **{**settings, "max_defer": cap}) for cap in caps
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
