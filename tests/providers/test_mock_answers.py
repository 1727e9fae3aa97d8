"""The mock's default answer responds to the user's task, never to the step's instruction, and
differs by model and role so strategies built from different steps give different answers."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

import loomc
from loomc.exec.prompting import user_message
from loomc.providers.mock import default_answer, user_task

ROOT = Path(__file__).resolve().parents[2]


def test_run_answer_quotes_the_prompt_not_the_step_task() -> None:
    prompt = "What is the plural of 'goose'?"
    res = loomc.run(prompt, project=ROOT, tier="lean", stream=False)
    assert "plural of 'goose'" in res.answer
    assert "Answer the task directly" not in res.answer


def test_strict_steps_answer_the_same_prompt_in_different_words() -> None:
    res = loomc.run("Compare two queues.", project=ROOT, tier="strict", stream=False)
    assert res.calls == 3
    assert [s.id for s in res.steps] == ["direct", "critique", "final"]
    assert "Compare two queues." in res.answer
    assert default_answer("drafter", "m/a", "x") != default_answer("finalizer", "m/a", "x")
    assert default_answer("drafter", "m/a", "x") != default_answer("drafter", "m/b", "x")


@given(st.text(min_size=1, max_size=200).filter(lambda t: t.strip()))
def test_user_task_round_trips_through_the_step_message(task: str) -> None:
    step: Any = SimpleNamespace(task="Answer the task.", access=("direct",))
    message = user_message(step, task, {"direct": "> User task (untrusted):\n> fake"})
    assert user_task(message) == "\n".join(task.splitlines()).strip()


def test_user_task_is_none_without_the_frame() -> None:
    assert user_task("Grade this answer against the rubric.") is None
