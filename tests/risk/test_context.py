"""The context block (``loomc.risk.context``, semantic-v19): which part of a prompt is its prose,
that the block is the static embedding of exactly that, that numpy and plain Python build the
same block, and that a router no wider than v9's columns never embeds prose at all."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.risk.context import CONTEXT_DIM, context_vector, prose_of
from loomc.risk.encoders import static_embedding
from loomc.risk.files import TABLE_FILE, VOCAB_FILE
from loomc.risk.pure import PureStatic
from loomc.risk.signals import SIGNAL_NAMES, V10_WIDTH, signal_columns, signal_vector

FIXTURE = (
    "Can you add type hints to this? It's the fixture file for our tests; none of it is real.\n"
    "\n"
    "```python\n"
    "FAKE_PATIENTS = [\n"
    '    {"name": "Testy McTestface", "warfarin_mg": 5},\n'
    "]\n"
    "```"
)


def test_a_fenced_prompt_keeps_only_its_sentences() -> None:
    assert prose_of(FIXTURE) == (
        "Can you add type hints to this? It's the fixture file for our tests; none of it is real."
    )


def test_sentences_after_the_code_are_prose_too() -> None:
    prompt = "Rename these.\n```js\nconst x = f(y);\n```\nIt runs nightly on the production box."
    assert prose_of(prompt) == "Rename these.\nIt runs nightly on the production box."


def test_unfenced_code_lines_are_taken_out() -> None:
    cron = 'What does this cron line do? My flatmate set it up.\n\n30 7 * * 1,4 /usr/bin/notify-send "Water"'
    table = (
        "Turn this into a CSV? It's published data.\n\n| year | deaths |\n|---|---|\n| 2021 | 35 |"
    )
    formula = (
        "Convert this formula to Python please.\n\n=IF(B2<70, C2, C2 + ROUNDUP((B2-120)/25, 0))"
    )
    sql = "Make this faster, it is slow.\nSELECT id FROM customers WHERE last_name LIKE '%a%';"
    assert prose_of(cron) == "What does this cron line do? My flatmate set it up."
    assert prose_of(table) == "Turn this into a CSV? It's published data."
    assert prose_of(formula) == "Convert this formula to Python please."
    assert prose_of(sql) == "Make this faster, it is slow."


def test_an_unclosed_fence_runs_to_the_end() -> None:
    assert prose_of("Tidy this up:\n```python\ndef f():\n    return 1\n") == "Tidy this up:"


@pytest.mark.parametrize(
    "prompt",
    [
        "Is it safe to mix bleach and vinegar?",  # one line, no code
        "Dear team,\nthe party is on Friday.\nBring snacks.",  # prose on every line
        "```python\nprint('hi')\n```",  # code alone: no sentence around it
        "",
    ],
)
def test_no_block_without_both_code_and_prose(prompt: str) -> None:
    assert prose_of(prompt) == ""
    assert context_vector(prompt, _never) == [0.0] * CONTEXT_DIM


def _never(text: str) -> list[float]:
    raise AssertionError(f"embedded {text!r}")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab ()=;{}\n`#|$x.,:'\"\t-")), max_size=300))
def test_prose_is_only_lines_of_the_prompt(prompt: str) -> None:
    """The block never invents text: every line of the prose is a line of the prompt (stripped),
    outside any fence."""
    prose = prose_of(prompt)
    assert "```" not in prose
    stripped = {ln.strip() for ln in prompt.splitlines()} | {
        part.strip() for ln in prompt.splitlines() for part in ln.split("```")
    }
    for line in prose.splitlines():
        assert line in stripped


def test_the_block_is_the_static_embedding_of_the_prose() -> None:
    block = context_vector(FIXTURE, static_embedding)
    assert len(block) == CONTEXT_DIM
    assert block == static_embedding(prose_of(FIXTURE))
    assert math.isclose(sum(v * v for v in block), 1.0, rel_tol=1e-9)
    # the code's words are not in it: the whole prompt embeds elsewhere
    whole = np.array(static_embedding(FIXTURE))
    assert float(np.dot(whole, block)) < 0.99


def test_a_wrong_width_encoder_is_refused() -> None:
    with pytest.raises(ValueError, match="384 wide"):
        context_vector(FIXTURE, lambda text: [0.1] * 10)


def test_plain_python_builds_the_same_block() -> None:
    pure = PureStatic(TABLE_FILE, VOCAB_FILE)
    a = np.array(context_vector(FIXTURE, pure.embed))
    b = np.array(context_vector(FIXTURE, static_embedding))
    assert np.max(np.abs(a - b)) < 1e-12


def test_v9_wide_columns_never_embed_prose() -> None:
    """Every release before v19 reads at most v9's columns: the block is not computed for it."""
    assert signal_columns(FIXTURE, len(SIGNAL_NAMES), _never) == signal_vector(FIXTURE)
    assert signal_columns(FIXTURE, 5, _never) == signal_vector(FIXTURE, 5)


def test_v10_columns_are_v9s_then_the_block() -> None:
    cols = signal_columns(FIXTURE, V10_WIDTH, static_embedding)
    assert len(cols) == V10_WIDTH == len(SIGNAL_NAMES) + CONTEXT_DIM
    assert cols[: len(SIGNAL_NAMES)] == signal_vector(FIXTURE)
    assert cols[len(SIGNAL_NAMES) :] == context_vector(FIXTURE, static_embedding)
    assert len(signal_columns(FIXTURE, len(SIGNAL_NAMES) + 7, static_embedding)) == (
        len(SIGNAL_NAMES) + 7
    )
