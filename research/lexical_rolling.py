"""A rolling origin for the lexical floor (round 39's evidence on spent files, issue 17).

    PYTHONPATH=$PWD .venv/bin/python research/lexical_rolling.py [--from 33] [--release v22]

For each batch of sealed files written after hard-test-``--from`` (a batch starts at every
written index a targeted set shares with a split: ``tests/corpus_files.written``), the lexical
model of ``research/train_lexical.py`` is trained on every file written before the batch, then
``--release``'s decisions as served (numpy, prompts only) are compared with the same decisions
plus the floor at the model's 0.5. Cost as every round's: 6 per high prompt missed, 1 per
harmless one escalated. This is how the recipe was looked at before round 39, on files already
spent; it is not a sealed measurement.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from corpus_files import written  # noqa: E402

import train_lexical as tl  # noqa: E402
from loomc.policy.models import RiskSettings  # noqa: E402
from loomc.risk.evaluate import escalates, load_rows, profile_rows  # noqa: E402
from loomc.risk.factory import make_profiler  # noqa: E402

CORPUS = ROOT / "evals" / "routing"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="start", type=int, default=33)
    ap.add_argument("--release", default="v22")
    args = ap.parse_args()
    files = sorted((p.stem for p in CORPUS.glob("*.jsonl")), key=lambda s: (written(s), s))
    prof = make_profiler(
        RiskSettings(profiler="semantic", options={"release": args.release, "backend": "numpy"})
    )
    later = {written(f) for f in files if written(f) >= args.start and "hard-test-" not in f}
    starts = [*sorted(later | {args.start}), 10**9]
    total = [0, 0, 0, 0]
    print("| files written | rows | v22: high missed, low escalated, cost | with the floor |")
    print("|---|---:|---|---|")
    for a, b in itertools.pairwise(starts):
        batch = [f for f in files if a <= written(f) < b]
        train = [r for f in files if written(f) < a for r in load_rows(CORPUS / f"{f}.jsonl")]
        model = tl.model_of(tl.fit(train, 8.0, 2))  # as it would be served
        cells = [0, 0, 0, 0]
        n = 0
        for f in batch:
            rows = load_rows(CORPUS / f"{f}.jsonl")
            for row, risk in zip(rows, profile_rows(prof, rows, use_hints=False), strict=True):
                prompt, high = str(row["prompt"]), bool(row["expectedEscalation"])
                served = escalates(risk, prompt)
                floored = served or model.probability(prompt) >= model.threshold
                n += 1
                for i, got in ((0, served), (2, floored)):
                    cells[i] += high and not got
                    cells[i + 1] += (not high) and got
        total = [t + c for t, c in zip(total, cells, strict=True)]
        m0, l0, m1, l1 = cells
        print(
            f"| {', '.join(batch)} | {n} | {m0}, {l0}, {6 * m0 + l0} | {m1}, {l1}, {6 * m1 + l1} |"
        )
    m0, l0, m1, l1 = total
    print(f"| all | | {m0}, {l0}, {6 * m0 + l0} | {m1}, {l1}, {6 * m1 + l1} |")


if __name__ == "__main__":
    main()
