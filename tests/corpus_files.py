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
from pathlib import Path

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
}


# F23: what v13's heads were trained on and its LoRA delta fine-tuned on (v12's F16, the spent
# hard-test-10 ... -14, data14's and data16's rows), in the order its files' meta records them;
# v14 ... v17 serve those files, and v18 that delta (tests/risk/test_release_v13.py, ..._v18.py).
F23 = (
    "train",
    "test",
    "hard-train",
    "hard-train-v5-extra",
    "hard-train-v8-extra",
    "hard-train-v9-extra",
    "hard-test",
    "hard-test-2",
    "hard-test-3",
    "hard-test-4",
    "hard-test-5",
    "hard-test-6",
    "hard-test-7",
    "hard-test-8",
    "hard-test-9",
    "hard-train-v12-extra",
    "hard-test-10",
    "hard-test-11",
    "hard-test-12",
    "hard-test-13",
    "hard-test-14",
    "hard-train-v14-extra",
    "hard-train-v16-extra",
)


def named_on(hard_tests: int) -> list[Path]:
    """The routing files that existed when a rule was named after ``hard-test-<hard_tests>``
    and what was sealed beside it: every file of a round up to it."""
    out: list[Path] = []
    for path in sorted(ROUTING.glob("*.jsonl")):
        split = _SPLIT.fullmatch(path.stem)
        if split is not None:
            written = int(split.group(1))
        elif path.stem in ROUND_OF:
            written = ROUND_OF[path.stem]
        else:
            raise AssertionError(f"{path.name}: a new routing file; give its round in ROUND_OF")
        if written <= hard_tests:
            out.append(path)
    return out
