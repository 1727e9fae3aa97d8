"""The literal prescan (``loomc.risk.prescan``) never skips a pattern that would match: the cue
families, the floors, the keyword module's patterns, the keyword rules and the signal families
(tasks, code hazards, exposure, purpose), on generated text
that matches them, case folds included; its fold is checked against ``re`` on every code point;
the generated table is the one the patterns derive today."""

from __future__ import annotations

import re
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loomc.risk import (
    alarms,
    codehazards,
    cues,
    exposure,
    keywords,
    people,
    purpose,
    safety,
    tasks,
)
from loomc.risk.keywords import (
    DEFAULT_ESCALATE_TERMS,
    DEFAULT_RESEARCH_TERMS,
    DEFAULT_SIGNALS,
    compile_terms,
    prescanned_terms,
)
from loomc.risk.literals import LITERALS
from loomc.risk.prescan import FOLD, LETTERS, Prescanned, derive, fixed_patterns, fold
from loomc.risk.reference import _RESEARCH_RE, _RESEARCH_WORDS, _SIGNAL_RES, REFERENCE_SIGNALS

KEPT = [chr(i) for i in range(128)] + list(LETTERS)


def test_fold_maps_every_character_re_ignorecase_matches_to_a_kept_one() -> None:
    """For every code point ``c`` and every character ``a`` a case-insensitive literal keeps
    (as written in a pattern, or upper-cased): ``re`` matching ``a`` to ``c`` means ``fold(c)``
    is ``a`` lowercased. Candidates come from ``re`` itself (a class of all kept characters)
    and from Python's own case mappings; each is then matched literal by literal."""
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    kept_class = re.compile("[" + "".join(re.escape(a) for a in KEPT) + "]", re.IGNORECASE)
    candidates = {m.group() for m in kept_class.finditer(every)}
    kept = set(KEPT)
    candidates |= {
        c for c in every if {c.lower(), c.upper(), c.casefold()} & kept or c.translate(FOLD) != c
    }
    literals = [
        (p, re.compile(re.escape(p), re.IGNORECASE))
        for a in KEPT
        for p in {a, a.upper()}
        if len(p) == 1
    ]
    mismatches = {
        c: p for c in candidates for p, rx in literals if rx.fullmatch(c) and fold(c) != p.lower()
    }
    assert mismatches == {}
    assert all(len(fold(c)) == 1 for c in candidates)


def test_the_table_is_what_the_patterns_derive_today() -> None:
    """``loomc/risk/literals.py`` is current (else: ``python -m loomc.risk.prescan``), and
    every fixed pattern has literals (none is compiled for every prompt) but two signal
    families no literal run can stand for (a quoted span; code's shapes), searched always."""
    patterns = fixed_patterns()
    signals = len(FIXED) - len(cues.CUE_NAMES) - len(cues.FLOOR_NAMES) - 4
    assert len(patterns) == len(cues.CUE_NAMES) + len(cues.FLOOR_NAMES) + 4 + signals
    always = {tasks.TASKS.patterns["quoted"].source, codehazards.CODE.patterns["present"].source}
    for flags, source in patterns:
        derived = derive(source, flags)
        assert (derived is None) == (source in always), source
        assert LITERALS.get((flags, source)) == derived, source


def test_an_edited_pattern_is_compiled_for_every_text() -> None:
    edited = Prescanned(r"\bnot in the table\b", re.IGNORECASE)
    assert edited.literals is None
    assert edited.may_match("anything") and not edited.is_compiled
    assert edited.search("Not In The Table") is not None
    assert Prescanned("x*", 0, ()).literals is None  # no literal given: always compiled


def test_derive() -> None:
    assert derive(r"\bspell\w*|how many (?:letters|words)") == ("how many ", "spell")
    assert derive(r"cop(?:y|ies)\b|\bx") == ("cop", "x")
    assert derive(r"\w+|spell") is None  # an alternative without a literal
    assert derive(r"(?:a|)b") == ("b",)
    assert derive(r"ab?c") == ("a",)
    assert derive(r"Über\w*|ſtop|(?i:LOUD)x", re.IGNORECASE) == ("top", "x", "über")
    assert derive(r"[Üü]ber\w*", re.IGNORECASE) == ("ber",)
    assert derive(r"x{0,3}y+") == ("y",)


FIXED = [
    *(cues.CUES.patterns[n] for n in cues.CUE_NAMES),
    *(cues.FLOORS.patterns[n] for n in cues.FLOOR_NAMES),
    *(v for v in vars(keywords).values() if isinstance(v, Prescanned)),
    *(
        p
        for group in (
            tasks.TASKS,
            codehazards.CODE,
            codehazards.HAZARDS,
            exposure.FAMILIES,
            purpose.DOMAINS,
            purpose.FAMILIES,
            people.PATTERNS,
            people.WIDE_PATTERNS,
            people.TRACKING_PATTERNS,
            alarms.PATTERNS,
            safety.PATTERNS,
        )
        for p in group.patterns.values()
    ),
]
_SWAPS = {"i": "İıI", "s": "ſS", "k": "KK", "e": "É", "u": "Ü", "ü": "Ü", "é": "É", "ß": "ẞ"}


def _recased(draw: st.DrawFn, text: str) -> str:
    """``text`` with some characters swapped for others ``re.IGNORECASE`` matches to them."""
    out = []
    for ch in text:
        swaps = _SWAPS.get(ch.lower(), ch.upper())
        out.append(draw(st.sampled_from([ch, ch, *swaps])) if swaps else ch)
    return "".join(out)


@st.composite
def _matching_text(draw: st.DrawFn, rx: re.Pattern[str]) -> str:
    core = draw(st.from_regex(rx, fullmatch=False))
    if rx.flags & re.IGNORECASE:
        core = _recased(draw, core)
    return core


@pytest.mark.parametrize("pattern", FIXED, ids=lambda p: p.source[:24])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_text_a_pattern_matches_is_never_skipped(
    pattern: Prescanned, data: st.DataObject
) -> None:
    rx = re.compile(pattern.source, pattern.flags)
    text = data.draw(_matching_text(rx))
    scanned = fold(text) if pattern.folds else text
    if rx.search(text) is not None:
        assert pattern.may_match(scanned), text
        assert pattern.search(text) is not None


_TERMS = sorted(
    {t for ts in DEFAULT_SIGNALS.values() for t in ts}
    | set(DEFAULT_RESEARCH_TERMS)
    | set(DEFAULT_ESCALATE_TERMS)
)
_TERM_TEXT = st.lists(
    st.one_of(
        st.sampled_from(_TERMS).map(lambda t: t.rstrip("*")),
        st.sampled_from(_TERMS).map(lambda t: t.rstrip("*")[:-1] + "İ"),
        st.text(max_size=6),
        st.sampled_from([" ", "-", "s", "ing", "_", "é", "x"]),
    ),
    max_size=10,
).map("".join)


@settings(max_examples=300)
@given(
    st.lists(
        st.one_of(st.sampled_from(_TERMS), st.text(min_size=1, max_size=6).map(lambda t: t + "*")),
        min_size=1,
        max_size=5,
    ),
    _TERM_TEXT,
)
def test_a_rule_is_skipped_only_where_its_terms_cannot_match(terms: list[str], text: str) -> None:
    """Policy terms are arbitrary text: the rule's prescan keeps every text its pattern
    matches, in the lowercased prompt as the profiler scans it."""
    lowered = text.lower()
    rx, pre = compile_terms(terms), prescanned_terms(terms)
    assert (rx is None) == (pre is None)
    if rx is not None and pre is not None and rx.search(lowered):
        assert pre.may_match(lowered)
        assert [m.group(0) for m in pre.compiled.finditer(lowered)] == [
            m.group(0) for m in rx.finditer(lowered)
        ]


_REFERENCE_TEXT = st.lists(
    st.one_of(
        st.sampled_from([w for _, ws in REFERENCE_SIGNALS for w in ws] + list(_RESEARCH_WORDS)),
        st.sampled_from([" ", "x", "_", "-", "é", "S", "\n"]),
        st.text(max_size=5),
    ),
    max_size=8,
).map("".join)


@settings(max_examples=300)
@given(_REFERENCE_TEXT)
def test_the_reference_rules_find_what_their_patterns_find(text: str) -> None:
    """The reference profiler's patterns, compiled late behind their words' prescan."""
    lowered = text.lower()
    for _, pattern in (*_SIGNAL_RES, ("research", _RESEARCH_RE)):
        plain = re.compile(pattern.source, pattern.flags)
        assert (pattern.search(lowered) is None) == (plain.search(lowered) is None)
