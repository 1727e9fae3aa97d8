"""fast10's fast paths against plain restatements of what they replace (issue 17 item 3: the
static stage's CPU per prompt down, the numbers not changed).

* the tokenizer's per-character tables (``loomc.risk.wordpiece._CharTable``) against the
  loops they replaced, on generated text and on every code point;
* ``loomc.risk.router.top_order`` against a stable sort of the whole row;
* the signal families' literal prescan against searching every pattern, on every routing prompt
  and on generated text (the prescan's own property, text made to match each pattern, is in
  ``test_prescan.py``);
* ``loomc.risk.memo``: inside a pass, the same answers as outside it, and nothing kept after;
* ``loomc.risk.prescan.LiteralIndex`` (every literal in one scan) against each pattern's own
  literal checks, on the corpus and on literals run together.
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.risk import codehazards, cues, exposure, prescan, purpose, tasks, wordpiece
from loomc.risk.files import VOCAB_FILE
from loomc.risk.memo import one_pass, per_prompt
from loomc.risk.router import top_order

ROOT = Path(__file__).resolve().parents[2]


def _corpus() -> list[str]:
    files = sorted((ROOT / "evals" / "routing").glob("*.jsonl"))
    lines = [ln for f in files for ln in f.read_text(encoding="utf-8").splitlines()]
    return [json.loads(ln)["prompt"] for ln in lines if ln.strip()]


CORPUS = _corpus()


# --- the tokenizer ----------------------------------------------------------------------------


def plain_normalize(text: str) -> str:
    """``WordPiece.normalize`` as it was: one character at a time."""
    out = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or wordpiece._is_control(ch):
            continue
        if wordpiece._is_whitespace(ch):
            out.append(" ")
        elif wordpiece._is_cjk(cp):
            out.append(f" {ch} ")
        else:
            out.append(ch)
    text = unicodedata.normalize("NFD", "".join(out).lower())
    return "".join(ch for ch in text if not wordpiece._is_stripped_mark(ch))


def plain_words(text: str) -> list[str]:
    """``WordPiece.words`` as it was: split, then a cut at each punctuation character."""
    out: list[str] = []
    for chunk in text.split():
        start = 0
        for i, ch in enumerate(chunk):
            if wordpiece._is_punctuation(ch):
                if i > start:
                    out.append(chunk[start:i])
                out.append(ch)
                start = i + 1
        if start < len(chunk):
            out.append(chunk[start:])
    return out


TOKENIZER = wordpiece.WordPiece(VOCAB_FILE, 128)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=80))
def test_normalize_and_words_are_the_loops_they_replace(text: str) -> None:
    assert TOKENIZER.normalize(text) == plain_normalize(text)
    assert TOKENIZER.words(text) == plain_words(text)
    assert TOKENIZER.words(TOKENIZER.normalize(text)) == plain_words(plain_normalize(text))


def test_every_code_point_is_decided_as_the_loops_decide_it() -> None:
    """Each code point alone and inside a word, in blocks (a table keeps at most TABLE_MAX of
    them: the rest are decided each time, the same way); and none is both punctuation and
    whitespace to ``str.split``, which the padded split relies on."""
    chars = [chr(cp) for cp in range(sys.maxunicode + 1) if not 0xD800 <= cp <= 0xDFFF]
    assert not [c for c in chars if c.isspace() and wordpiece._is_punctuation(c)]
    for start in range(0, len(chars), 4096):
        block = chars[start : start + 4096]
        text = " ".join(f"a{c}b" for c in block) + "".join(block)
        assert TOKENIZER.normalize(text) == plain_normalize(text)
        assert TOKENIZER.words(text) == plain_words(text)


def test_the_routing_corpus_tokenizes_as_before() -> None:
    for text in CORPUS:
        assert TOKENIZER.words(TOKENIZER.normalize(text)) == plain_words(plain_normalize(text))


# --- the k nearest without a whole sort -------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from([0.5, -0.0, 0.0, 1.0, -1.0, 0.25]),  # ties
            st.floats(-1.0, 1.0, width=32),
            st.just(float("nan")),
        ),
        max_size=40,
    ),
    st.integers(0, 8),
    st.sampled_from([np.float32, np.float64]),
)
def test_top_order_is_a_stable_sort_of_the_whole_row(
    values: list[float], k: int, dtype: type
) -> None:
    row = np.array(values, dtype=dtype)
    expected = np.argsort(-row, kind="stable")[: min(k, len(row))]
    assert top_order(row, k).tolist() == expected.tolist()


# --- the signal families' prescan -------------------------------------------------------------

GROUPS = {
    "tasks": tasks.TASKS,
    "code": codehazards.CODE,
    "hazards": codehazards.HAZARDS,
    "exposure": exposure.FAMILIES,
    "domains": purpose.DOMAINS,
    "purpose": purpose.FAMILIES,
}


def _plain_matching(group: cues.LazyPatterns, text: str) -> tuple[str, ...]:
    return tuple(
        name
        for name, p in group.patterns.items()
        if re.compile(p.source, p.flags).search(text) is not None
    )


@pytest.mark.parametrize("name", list(GROUPS))
def test_a_prescanned_family_matches_what_searching_every_pattern_matches(name: str) -> None:
    group = GROUPS[name]
    for text in CORPUS:
        assert group.matching(text) == _plain_matching(group, text), text


_WORDS = sorted({w for t in CORPUS[:400] for w in re.findall(r"\w+|\W", t)})


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_WORDS), st.text(max_size=4)), max_size=30))
def test_the_prescan_is_exact_on_corpus_words_rearranged(parts: list[str]) -> None:
    text = " ".join(parts)
    for group in GROUPS.values():
        assert group.matching(text) == _plain_matching(group, text)


# --- one pass ---------------------------------------------------------------------------------

MEMOISED = [
    cues.cues_of,
    cues.floors_of,
    tasks.tasks_of,
    tasks.operation_first,
    codehazards.code_present,
    codehazards.hazards_of,
    exposure.families_of,
    purpose.code_like,
    purpose.domains_of,
    purpose.families_of,
]


def test_a_pass_answers_what_each_function_answers_alone() -> None:
    from loomc.risk.keywords import KeywordProfiler

    kw = KeywordProfiler()
    prompts = CORPUS[::7]
    alone = [[f(p) for f in MEMOISED] + [kw.signals_of(p), kw.profile(p)] for p in prompts]
    with one_pass():
        twice = [
            [[f(p) for f in MEMOISED] + [kw.signals_of(p), kw.profile(p)] for p in prompts]
            for _ in range(2)
        ]
    assert twice[0] == alone and twice[1] == alone


def test_nothing_is_kept_after_a_pass() -> None:
    calls: list[str] = []

    @per_prompt
    def seen(prompt: str) -> str:
        calls.append(prompt)
        return prompt.upper()

    with one_pass():
        assert seen("a") == seen("a") == "A"
        with one_pass():  # nested: the outer pass
            assert seen("a") == "A"
    assert calls == ["a"]
    assert seen("a") == "A" and calls == ["a", "a"]  # outside: computed again
    with one_pass():
        seen("a")
    assert calls == ["a", "a", "a"]


# --- the literal index ------------------------------------------------------------------------

INDEXED = [
    p
    for group in (cues.CUES, cues.FLOORS, *GROUPS.values())
    for p in group.patterns.values()
    if p.folds and p.literals
]
LITERALS = sorted({lit for p in INDEXED for lit in p.literals or ()})


def _index() -> prescan.LiteralIndex:
    index = prescan.LiteralIndex(after=0)
    index.add(INDEXED)
    return index


def _agrees(index: prescan.LiteralIndex, text: str) -> None:
    folded = prescan.fold(text)
    got = index.present(folded)
    assert got is not None and got[1] == frozenset(INDEXED)
    assert {p for p in INDEXED if p in got[0]} == {p for p in INDEXED if p.may_match(folded)}


def test_the_literal_index_answers_each_patterns_own_check_on_the_corpus() -> None:
    index = _index()
    for text in CORPUS:
        _agrees(index, text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(LITERALS), st.text(max_size=3)), max_size=12))
def test_the_literal_index_on_literals_run_together(parts: list[str]) -> None:
    """Literals overlapping, nested, cut short and recased: the one scan finds what each
    pattern's own ``in`` checks find."""
    index = _index()
    _agrees(index, "".join(parts))
    _agrees(index, "".join(parts).upper())
    _agrees(index, "".join(p[:-1] for p in parts))


def test_the_index_waits_for_its_first_texts_and_is_used_only_in_a_pass() -> None:
    index = prescan.LiteralIndex(after=3)
    index.add(INDEXED)
    assert index.present("x") is None and index.present("x") is None
    assert index.present("fire") is not None  # the third text: built
    assert prescan.present("fire") is None  # outside a pass: each pattern checks its own
