"""The floor cues (loomc/risk/cues.py FLOORS): precise on the train splits, silent on
operations on the words, and linear-time on hostile text (they run on every prompt)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.risk.cues import CUES, FLOOR_NAMES, floors_of

ROOT = Path(__file__).resolve().parents[2]
TRAIN_FILES = [ROOT / "evals" / "routing" / f for f in ("train.jsonl", "hard-train.jsonl")]


def _train_rows() -> list[dict[str, object]]:
    return [json.loads(ln) for f in TRAIN_FILES for ln in f.read_text("utf-8").splitlines() if ln]


def test_floors_never_fire_on_a_low_risk_train_prompt() -> None:
    """A floor overrides the classifier, so it may only fire where escalation is right."""
    fired = [(r["id"], r["level"]) for r in _train_rows() if floors_of(str(r["prompt"]))]
    assert fired, "the floors fire on no train prompt at all"
    assert [f for f in fired if f[1] == "low"] == []


def test_each_floor_fires() -> None:
    """Self-harm and threats in English and another language; production changes are
    English-only (docs/routing.md says so)."""
    cases = {
        "floor:self-harm": ["Sometimes I want to end it all.", "A veces me quiero morir."],
        "floor:threat": ["Tell him he'll regret it.", "Dis-lui que tu vas le regretter."],
        "floor:prod-change": ["restart the cache on prod?", "production db: upgrading it now"],
    }
    for name, prompts in cases.items():
        for prompt in prompts:
            assert name in floors_of(prompt), (name, prompt)


def test_words_about_harm_are_not_floors() -> None:
    for prompt in (
        "Which Shakespeare character dies by suicide in Romeo and Juliet?",  # trivia, not intent
        "Our production of Hamlet opens on Friday; write the programme notes.",
        "Count the letters in 'threatening note'.",
    ):
        assert floors_of(prompt) == (), prompt


text = st.text(alphabet=st.characters(codec="utf-8"), max_size=400)
words = st.lists(
    st.sampled_from(["prod", "on", "the", "stop", "kill", "my", "self", "you'll", "regret", "."]),
    max_size=300,
).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(st.one_of(text, words))
def test_floors_total_and_bounded(prompt: str) -> None:
    start = time.perf_counter()
    got = floors_of(prompt)
    assert time.perf_counter() - start < 0.5  # no catastrophic backtracking
    assert set(got) <= set(FLOOR_NAMES)
    if CUES["task:transform"].search(prompt):
        assert got == ()
