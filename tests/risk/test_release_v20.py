"""semantic-v20, round 30's candidate (route30's arm J, evals/routing/README.md): v19's recipe
(v13's LoRA delta, v10's columns with the context block of ``loomc.risk.context``, cost 6,
delta 0.03, the band capped at 0.20, v15's rules), both heads trained on F42 = F41 +
hard-train-v30-extra: pairs of prompts carrying the same code under a fixture's prose and under
production's. route30 measured the recipe on spent files (cost 167 against v19's 171 over
seventeen folds, 4 high missed against 6). Judged on hard-test-29 and lookalike-code-test-3,
which it never saw, by the rule written before either (round 30), it did not replace v19: 29
against 27 over the two files, 1 high miss against 1 (it alone met the goal on hard-test-29).
Needs the semantic extra (and the ``onnx`` extra for the ORT check).

Pinned: v20 is selectable beside the default, what its heads were trained on (F42, by hash) and
with which columns, over which delta (v13's, by name and sha256), v15's rules, the reference
seed suite with and without hints, deterministic decisions, the plain-Python path building the
same block, the static stage retraining to the shipped file, v19's files untouched (``test_shipped_data.py``), another
base refused in one line, the same decisions from either int8 backend, and that a pair of the
kind its new rows hold moves the way they were labelled.

The checks every release of its recipe shares (its files' record, its delta, the seed suite,
determinism, the plain path, the static stage's retraining, both int8 backends) are one table
in ``test_lora_releases.py``; what is peculiar to it stays here.
"""

from __future__ import annotations

from typing import Any

import pytest
from corpus_files import F42
from release_checks import (
    need_semantic_extra,
    release_profiler,
)

from loomc.risk.releases import LORA, RELEASES, RULES, release_of
from loomc.risk.signals import V10_WIDTH

V20_FILES = F42  # F41 + hard-train-v30-extra (tests/corpus_files.py)
WIDTH = {"v10": V10_WIDTH}
CODE = (
    "\n\n```python\ndef run():\n"
    '    for s in db.query("SELECT id, iban, due FROM sellers WHERE due > 0"):\n'
    "        bank.transfer(to=s.iban, amount=s.due)\n"
    '        db.execute("UPDATE sellers SET due = 0 WHERE id = %s", (s.id,))\n```'
)


@pytest.fixture(scope="module")
def v20() -> Any:
    need_semantic_extra()
    return release_profiler("v20")


def test_v20_is_v19s_recipe_beside_the_default(v20: Any) -> None:
    assert v20.data_path == RELEASES["v20"] != RELEASES["v19"]
    assert release_of({"release": "v20"}) == "v20" == v20.release
    assert v20.rules == RULES["v20"] == RULES["v19"] == ("hazard-floor", "people-floor-wide")
    assert LORA["v20"] == LORA["v19"] == LORA["v13"]


def test_the_same_code_moves_with_its_prose(v20: Any) -> None:
    """The kind of pair hard-train-v30-extra holds: the same payout code under a fixture's
    sentence and under production's; the first stage's probability is the fixture's lower."""
    fixture = "Rename the variables. It's a unit-test fixture with fake sellers; nothing is real."
    production = (
        "Rename the variables. It's the job that pays our sellers every Friday in production."
    )
    x, _ = v20.features([fixture + CODE, production + CODE])
    p_fixture, p_production = v20.router.probability(x)
    assert p_fixture < p_production
