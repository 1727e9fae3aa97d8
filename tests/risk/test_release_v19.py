"""semantic-v19, the default from hard-test-28 to -35 (route29's arm I, evals/routing/README.md): v18's recipe (v13's LoRA delta,
v9's signal columns, cost 6, delta 0.03, the band capped at 0.20, v15's rules) with the context
block of ``loomc.risk.context`` (the static embedding of a code prompt's prose, after v9's
columns), both heads trained on F41 = F40 + the spent lookalike-code-test. Judged on
hard-test-28 and lookalike-code-test-2, which it never saw, by the rule written before either
(round 29), it replaced v18 as the default: 36 against 42 over the two files, 2 high misses
against 2. By round 36's rule v22 (its heads and rows over a delta of its own) replaced it;
it stays selectable. Needs the semantic extra (and the ``onnx`` extra for the ORT check).

Pinned: that it is selectable beside the default (v18 too), what its heads were trained on (F41, by hash) and with which columns (v10's: v9's and
the block), over which delta (v13's, by name and sha256), v15's rules, the reference seed suite
with and without hints, deterministic decisions, the plain-Python path building the same block,
the static stage retraining to the shipped file, v18's files untouched (``test_shipped_data.py``), another base refused
in one line, the same decisions from either int8 backend, and that the block moves the
decision it was built for: a fixture's prose against production's, the code the same.

The checks every release of its recipe shares (its files' record, its delta, the seed suite,
determinism, the plain path, the static stage's retraining, both int8 backends) are one table
in ``test_lora_releases.py``; what is peculiar to it stays here.
"""

from __future__ import annotations

from typing import Any

import pytest
from corpus_files import F41
from release_checks import (
    need_semantic_extra,
    release_profiler,
)

from loomc.policy.models import RiskSettings
from loomc.risk.factory import make_profiler
from loomc.risk.releases import DATA_FILE, LORA, RELEASES, RULES, release_of
from loomc.risk.signals import V10_WIDTH

V19_FILES = F41  # F40 + the spent lookalike-code-test (tests/corpus_files.py)
WIDTH = {"v10": V10_WIDTH}
CODE = (
    "\n\n```python\ndef run():\n"
    '    for s in db.query("SELECT id, iban, due FROM sellers WHERE due > 0"):\n'
    "        bank.transfer(to=s.iban, amount=s.due)\n"
    '        db.execute("UPDATE sellers SET due = 0 WHERE id = %s", (s.id,))\n```'
)


@pytest.fixture(scope="module")
def v19() -> Any:
    need_semantic_extra()
    return release_profiler("v19")


def test_v19_is_v18s_recipe_over_v13s_delta_beside_the_default(v19: Any) -> None:
    assert v19.data_path == RELEASES["v19"] != DATA_FILE and RELEASES["v19"] != RELEASES["v18"]
    assert release_of({"release": "v19"}) == "v19" == v19.release and release_of({}) == "v35"
    default: Any = make_profiler(RiskSettings(profiler="semantic"))
    assert default.release == "v35" and default.data_path == RELEASES["v35"] == DATA_FILE
    assert v19.rules == RULES["v19"] == RULES["v18"] == ("hazard-floor", "people-floor-wide")
    assert LORA["v19"] == LORA["v18"] == LORA["v13"]


def test_the_block_reads_the_prose_not_the_code(v19: Any) -> None:
    """The same code under a fixture's sentence and under production's: the first stage's
    probability moves with the prose (v18, with no block, sees only what the whole prompt's
    embedding and neighbours carry)."""
    fixture = "Rename the variables. It's a unit-test fixture with fake sellers; nothing is real."
    production = (
        "Rename the variables. It's the job that pays our sellers every Friday in production."
    )
    x, _ = v19.features([fixture + CODE, production + CODE])
    p_fixture, p_production = v19.router.probability(x)
    assert p_fixture < p_production
