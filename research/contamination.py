"""Training rows too close to a sealed split's rows, named by id and score only.

    .venv/bin/python research/contamination.py TRAIN.jsonl SEALED.jsonl

Why: blind writers of training rows and of sealed splits, given similar briefs, land on the same
situations (seal8 and seal9 each replaced a dozen rows that repeated a training row). A training
row that retells a sealed row would let a router be tested on what it was trained on. The lead
runs this before any training on new rows, without reading the sealed prompts: it prints ids and
scores, never prompt text. A row is flagged at word-set Jaccard >= 0.5 or on a shared run of 8
words (the duplicate rule every writer of `evals/routing/` used). Exit 1 when any is flagged.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

JACCARD = 0.5
SHINGLE = 8
_PUNCT = re.compile(r"[^\w\s]")


def words(prompt: str) -> list[str]:
    """Lower case, punctuation dropped, split on white space."""
    return _PUNCT.sub(" ", prompt.lower()).split()


def shingles(ws: Sequence[str], n: int = SHINGLE) -> set[tuple[str, ...]]:
    return {tuple(ws[i : i + n]) for i in range(len(ws) - n + 1)}


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def flagged(
    train: list[dict[str, str]], sealed: list[dict[str, str]]
) -> tuple[list[tuple[str, str, float, bool]], float]:
    """(train id, sealed id, Jaccard, shares a shingle) for each pair over the rule, and the
    highest Jaccard seen."""
    keyed = []
    for row in sealed:
        ws = words(row["prompt"])
        keyed.append((row["id"], set(ws), shingles(ws)))
    out: list[tuple[str, str, float, bool]] = []
    best = 0.0
    for row in train:
        ws = words(row["prompt"])
        bag, sh = set(ws), shingles(ws)
        for sid, sbag, ssh in keyed:
            j = jaccard(bag, sbag)
            best = max(best, j)
            shared = bool(sh & ssh)
            if j >= JACCARD or shared:
                out.append((row["id"], sid, round(j, 2), shared))
    return out, best


def _rows(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("train", type=Path)
    ap.add_argument("sealed", type=Path)
    args = ap.parse_args(argv)
    train, sealed = _rows(args.train), _rows(args.sealed)
    found, best = flagged(train, sealed)
    print(f"{len(train)} rows against {len(sealed)} sealed rows: highest Jaccard {best:.2f}")
    for tid, sid, j, shared in found:
        print(f"{tid} ~ {sid}: Jaccard {j:.2f}" + (", a shared 8-word run" if shared else ""))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
