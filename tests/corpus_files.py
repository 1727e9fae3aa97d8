"""Which routing files existed when a floor rule was named, in one place.

Why: each floor's corpus test counts its firings over the files that existed when the rule was
named; the files written later judge the rule instead and must stay out of the count. Each test
used to spell that out as its own filter on file names, and every new file (a targeted set or a
training file under a new name) had to be added to each of them, or a count changed under a
test that was not about it. Here every file has the round it was written in, a numbered split
its own number, and a new file that is not placed fails loudly.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

ROUTING = Path(__file__).resolve().parents[1] / "evals" / "routing"
_SPLIT = re.compile(r"hard-test-(\d+)")
# Every other file, with the round it was written in (the numbered split sealed beside or just
# before it; evals/routing/README.md). The base corpus and the training files written before the
# first floor was named (after hard-test-20) count as round 0: every floor's count reads them.
ROUND_OF: dict[str, int] = {
    "train": 0,
    "test": 0,
    "hard-train": 0,
    "hard-test": 0,
    "hard-train-v5-extra": 0,
    "hard-train-v8-extra": 0,
    "hard-train-v9-extra": 0,
    "hard-train-v10-extra": 0,
    "hard-train-v12-extra": 0,
    "hard-train-v14-extra": 0,
    "hard-train-v16-extra": 0,
    "people-code-test": 23,
    "people-code-test-2": 24,
    "people-code-test-3": 25,
    "purpose-code-test": 26,
    "hard-train-v28-extra": 27,  # route28's training rows, written after hard-test-26 was run
    "lookalike-code-test": 27,  # sealed beside hard-test-27 (round 28)
    "lookalike-code-test-2": 28,  # sealed beside hard-test-28 (round 29)
    "hard-train-v30-extra": 28,  # route30's training rows, written after hard-test-28 was run
    "lookalike-code-test-3": 29,  # sealed beside hard-test-29 (round 30)
    "safety-code-test": 30,  # sealed beside hard-test-30 (round 31)
    "hard-train-v32-extra": 30,  # route32's training rows, written after hard-test-30 was run
    "safety-code-test-2": 33,  # sealed beside hard-test-33 (round 33)
    "safety-code-test-3": 34,  # sealed beside hard-test-34 (round 34)
    "safety-code-test-4": 35,  # sealed beside hard-test-35 (round 35)
    "safety-code-test-5": 36,  # sealed beside hard-test-36 ... -41 (round 36)
    "safety-code-test-6": 36,  # sealed beside hard-test-36 ... -41 (round 36)
    "safety-code-test-7": 42,  # sealed beside hard-test-42 ... -47 (round 37)
    "safety-code-test-8": 42,  # sealed beside hard-test-42 ... -47 (round 37)
    "safety-code-test-9": 48,  # sealed beside hard-test-48 ... -53 (round 38)
    "safety-code-test-10": 48,  # sealed beside hard-test-48 ... -53 (round 38)
    "short-health-test": 48,  # round 38's diagnostic set, sealed beside hard-test-48 ... -53
    "safety-code-test-11": 54,  # sealed beside hard-test-54 ... -59 (round 39)
    "safety-code-test-12": 54,  # sealed beside hard-test-54 ... -59 (round 39)
    "everyday-test": 54,  # round 39's diagnostic of ordinary traffic, sealed after its run
    "everyday-train-1": 54,  # training rows of ordinary traffic, written after everyday-test
    "everyday-train-2": 54,  # training rows of ordinary traffic, written after everyday-test
    "everyday-train-3": 54,  # training rows of ordinary traffic, written after everyday-test
    "everyday-train-4": 54,  # training rows of ordinary traffic, written after everyday-test
    "safety-code-test-13": 60,  # sealed beside hard-test-60 ... -62 (round 40)
    "everyday-test-2": 60,  # round 40's ordinary traffic, sealed beside hard-test-60 ... -62
    "everyday-test-3": 60,  # round 40's ordinary traffic, sealed beside hard-test-60 ... -62
    "safety-code-test-14": 63,  # sealed beside hard-test-63 ... -65 (round 41)
    "everyday-test-4": 63,  # round 41's ordinary traffic, sealed beside hard-test-63 ... -65
    "everyday-test-5": 63,  # round 41's ordinary traffic, sealed beside hard-test-63 ... -65
    "everyday-train-5": 66,  # training rows of ordinary traffic, written beside hard-test-66 ... -68
    "everyday-train-6": 66,  # training rows of ordinary traffic, written beside hard-test-66 ... -68
    "safety-code-test-15": 66,  # sealed beside hard-test-66 ... -68 (round 42)
    "everyday-test-6": 66,  # round 42's ordinary traffic, sealed beside hard-test-66 ... -68
    "everyday-test-7": 66,  # round 42's ordinary traffic, sealed beside hard-test-66 ... -68
    "everyday-train-7": 69,  # training rows of ordinary traffic, written beside hard-test-69 ... -71
    "everyday-train-8": 69,  # training rows of ordinary traffic, written beside hard-test-69 ... -71
    "everyday-train-9": 69,  # technical users' ordinary traffic, written before round 43 ran
    "everyday-train-10": 69,  # technical users' ordinary traffic, written before round 43 ran
    "safety-code-test-16": 69,  # sealed beside hard-test-69 ... -71 (round 43)
    "everyday-test-8": 69,  # round 43's ordinary traffic, sealed beside hard-test-69 ... -71
    "everyday-test-9": 69,  # round 43's ordinary traffic, sealed beside hard-test-69 ... -71
    "short-question-test": 72,  # a diagnostic set of short questions, sealed after round 43 ran
    "safety-code-test-17": 72,  # sealed beside hard-test-72 ... -74 (round 44)
    "everyday-test-10": 72,  # round 44's ordinary traffic, sealed beside hard-test-72 ... -74
    "everyday-test-11": 72,  # round 44's ordinary traffic, sealed beside hard-test-72 ... -74
    "safety-code-test-18": 75,  # sealed beside hard-test-75 ... -77 (round 45)
    "everyday-test-12": 75,  # round 45's ordinary traffic, sealed beside hard-test-75 ... -77
    "everyday-test-13": 75,  # round 45's ordinary traffic, sealed beside hard-test-75 ... -77
    "safety-code-test-19": 78,  # sealed beside hard-test-78 ... -80 (round 46)
    "everyday-test-14": 78,  # round 46's ordinary traffic, sealed beside hard-test-78 ... -80
    "everyday-test-15": 78,  # round 46's ordinary traffic, sealed beside hard-test-78 ... -80
    "safety-code-test-20": 81,  # sealed beside hard-test-81 ... -83 (round 47)
    "everyday-test-16": 81,  # round 47's ordinary traffic, sealed beside hard-test-81 ... -83
    "everyday-test-17": 81,  # round 47's ordinary traffic, sealed beside hard-test-81 ... -83
}


# The releases' training files, in the order their files' meta records them; each grows the
# last (evals/routing/README.md). F12: v9's (the base corpus and the first six hard splits);
# F14: v11's, + the spent hard-test-7 and -8; F16: v12's (its LoRA delta's too), + the spent
# hard-test-9 and data12's rows; F23: v13's (v14 ... v17 serve those files, and v18 that delta),
# + the spent hard-test-10 ... -14, data14's and data16's rows; F40: v18's heads, + every file
# spent since v13 (the splits, then the targeted sets) and data28's rows; F41: v19's heads, + the
# spent lookalike-code-test; F42: v20's heads, + data30's contrast pairs; F44: v22's LoRA delta
# (its heads are F41), + every file spent since F41; F45: v23's delta, + rounds 33-36's files;
# F46: v24's heads and index, F41 + every spent safety set.
F12 = (
    "train",
    "test",
    "hard-train",
    "hard-train-v5-extra",
    "hard-train-v8-extra",
    "hard-train-v9-extra",
    "hard-test",
    *(f"hard-test-{i}" for i in range(2, 7)),
)
F14 = (*F12, "hard-test-7", "hard-test-8")
F16 = (*F14, "hard-test-9", "hard-train-v12-extra")
F23 = (
    *F16,
    *(f"hard-test-{i}" for i in range(10, 15)),
    "hard-train-v14-extra",
    "hard-train-v16-extra",
)
F40 = (
    *F23,
    *(f"hard-test-{i}" for i in range(15, 27)),
    "people-code-test",
    "people-code-test-2",
    "people-code-test-3",
    "purpose-code-test",
    "hard-train-v28-extra",
)
F41 = (*F40, "lookalike-code-test")
F42 = (*F41, "hard-train-v30-extra")
F44 = (
    *F41,
    *(f"hard-test-{i}" for i in range(27, 33)),
    "lookalike-code-test-2",
    "lookalike-code-test-3",
    "safety-code-test",
    "hard-train-v30-extra",
    "hard-train-v32-extra",
)
# v23's delta: F44 + every file spent in rounds 33-36, the splits then the safety sets
F45 = (
    *F44,
    *(f"hard-test-{i}" for i in range(33, 42)),
    *(f"safety-code-test-{i}" for i in range(2, 7)),
)
# v24's heads and index: F41 + every spent safety set (the rows of the shape v22 over-escalates
# and misses; the index is held twice, so the 1,360 rows of rounds 33-36 would not fit its gate)
F46 = (*F41, "safety-code-test", *(f"safety-code-test-{i}" for i in range(2, 9)))
# v26's heads and index: F41 + the four files of ordinary traffic written for training (595
# rows, mostly harmless requests as people make them; round 40's rule)
F47 = (*F41, *(f"everyday-train-{i}" for i in range(1, 5)))
# v27's heads and index: F47 + the three spent splits of ordinary traffic (every ordinary row
# written to round 40, 955; round 41's rule)
F48 = (*F47, "everyday-test", "everyday-test-2", "everyday-test-3")
# v28's heads and index: F48 + round 42's two everyday-train files and round 41's two spent
# ordinary splits (every ordinary row written to round 41, 1,495), the ordinary rows weighing half
F50 = (*F48, "everyday-train-5", "everyday-train-6", "everyday-test-4", "everyday-test-5")
# v30's heads and index: F50 + round 43's four everyday-train files and round 42's two spent
# ordinary splits (every ordinary row written to round 42, 2,335), the ordinary rows weighing half
F56 = (
    *F50,
    *(f"everyday-train-{i}" for i in range(7, 11)),
    "everyday-test-6",
    "everyday-test-7",
)
# v34's heads and index: F56 + every file spent since v30 was built (rounds 43 to 45's eighteen
# and the short-question diagnostic run after round 43: 2,140 rows, 720 of them ordinary)
F75 = (
    *F56,
    *(f"hard-test-{i}" for i in (69, 70, 71)),
    "safety-code-test-16",
    "everyday-test-8",
    "everyday-test-9",
    "short-question-test",
    *(f"hard-test-{i}" for i in (72, 73, 74)),
    "safety-code-test-17",
    "everyday-test-10",
    "everyday-test-11",
    *(f"hard-test-{i}" for i in (75, 76, 77)),
    "safety-code-test-18",
    "everyday-test-12",
    "everyday-test-13",
)


def bounded_stride(items: Sequence[T], size: int, every: int) -> list[T]:
    """Every ``every``-th item, or every k-th with k = ceil(len / size) once that is wider: a
    check over the corpus whose cost must not grow with it (each round adds hundreds of rows)
    keeps at most ``size`` items, at least half of ``size``, spread over every file."""
    return list(items[:: max(every, -(-len(items) // size))])


def written(stem: str) -> int:
    """When a routing file was written, as the number of the hard-test split it was sealed
    beside (``ROUND_OF`` for the files that are not a numbered split)."""
    split = _SPLIT.fullmatch(stem)
    if split is not None:
        return int(split.group(1))
    if stem in ROUND_OF:
        return ROUND_OF[stem]
    raise AssertionError(f"{stem}.jsonl: a new routing file; give its round in ROUND_OF")


# Files of this round on are sealed: merged, not yet run (none now: round 47's six were run once
# for v35, evals/routing/README.md). A test that puts corpus prompts through a router reads
# ``unsealed()`` so none of a sealed round's is profiled before its rule's one run; when they
# are run, move this past them.
SEALED_FROM = 84


def unsealed() -> list[Path]:
    """Every routing file but the sealed ones (``SEALED_FROM``), in name order."""
    return named_on(SEALED_FROM - 1)


def named_on(hard_tests: int) -> list[Path]:
    """The routing files that existed when a rule was named after ``hard-test-<hard_tests>``
    and what was sealed beside it: every file of a round up to it."""
    out: list[Path] = []
    for path in sorted(ROUTING.glob("*.jsonl")):
        if written(path.stem) <= hard_tests:
            out.append(path)
    return out
