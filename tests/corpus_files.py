"""Which routing files existed when a floor rule was named, in one place.

Why: each floor's corpus test counts its firings over the files that existed when the rule was
named; the files sealed later judge the rule instead and must stay out of the count. Each test
used to spell that out as its own filter on file names, and every new sealed file (a targeted
set under a new name) had to be added to each of them, or a count changed under a test that
was not about it. Here a new file that is neither a numbered split, a listed targeted set nor a
training file fails loudly until it is placed.
"""

from __future__ import annotations

import re
from pathlib import Path

ROUTING = Path(__file__).resolve().parents[1] / "evals" / "routing"
# The sealed targeted sets, in the order they were sealed (evals/routing/README.md).
TARGETED = ("people-code-test", "people-code-test-2", "people-code-test-3", "purpose-code-test")
_SPLIT = re.compile(r"hard-test-(\d+)")
_TRAINING = ("train", "test", "hard-train", "hard-test")  # the base corpus and training files


def named_on(hard_tests: int, targeted: int) -> list[Path]:
    """The routing files that existed when a rule was named after ``hard-test-<hard_tests>`` and
    the first ``targeted`` targeted sets: the numbered splits up to it, those targeted sets, and
    every training file."""
    out: list[Path] = []
    for path in sorted(ROUTING.glob("*.jsonl")):
        split = _SPLIT.fullmatch(path.stem)
        if split is not None:
            keep = int(split.group(1)) <= hard_tests
        elif path.stem in TARGETED:
            keep = TARGETED.index(path.stem) < targeted
        elif path.stem in _TRAINING or path.stem.startswith("hard-train-"):
            keep = True
        else:
            raise AssertionError(
                f"{path.name}: a new routing file; name it in tests/corpus_files.py"
            )
        if keep:
            out.append(path)
    return out
