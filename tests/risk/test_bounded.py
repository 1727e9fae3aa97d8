"""Hostile prompt text: the profilers' patterns stay linear in the prompt's length.

``loomc.risk.bounded`` cuts whitespace runs to ``MAX_RUN`` characters before the patterns read a
prompt, and two code-shape patterns (``loomc.risk.codehazards``) start once per run of name
characters instead of at every position in it. Both must leave every decision on ordinary text
as it was; the tests below hold them to that and to finishing on the shapes that took minutes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from deadline import deadline
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.policy.models import RiskSettings
from loomc.risk.bounded import MAX_RUN, bounded
from loomc.risk.codehazards import _CODE_SOURCES, _HAZARD_SOURCES
from loomc.risk.factory import make_profiler

ROUTING = Path(__file__).resolve().parents[2] / "evals" / "routing"

# The two alternatives of codehazards' "present" family as they were written before (each tried
# at every position of a run of name characters: quadratic in the run), and as they are now.
BEFORE = {
    "call": r"[\w.]+\([^()\n]{0,200}\)\s*;",
    "assignment": r"\$\{\w+|\$\(\w+|\b[A-Za-z_][\w.]*(?:\[[^\]\n]{0,40}\])?\s*(?:=|\+=|-=)\s*"
    r"(?:['\"\[{(]|[\w.]+\()",
}
AFTER = {
    "call": r"(?<![\w.])[\w.]+\([^()\n]{0,200}\)\s*;",
    "assignment": r"\$\{\w+|\$\(\w+|(?<![\w.])(?>[\w.]*?\b[A-Za-z_][\w.]*)(?:\[[^\]\n]{0,40}\])?\s*"
    r"(?:=|\+=|-=)\s*(?:['\"\[{(]|[\w.]+\()",
}
FLAGS = re.IGNORECASE | re.MULTILINE


def test_the_shipped_family_holds_the_rewritten_alternatives() -> None:
    present = _CODE_SOURCES["present"]
    for source in AFTER.values():
        assert f"(?:{source})" in present
    for source in BEFORE.values():
        assert f"(?:{source})" not in present


@settings(max_examples=400)
@given(st.text(alphabet="ab_1.Z([]=+-'\";$ {\n", max_size=60))
def test_the_rewritten_patterns_match_where_the_old_ones_did(text: str) -> None:
    for name, old in BEFORE.items():
        was = re.compile(old, FLAGS).search(text) is not None
        assert (re.compile(AFTER[name], FLAGS).search(text) is not None) == was, name


# Two alternatives bounded at 400 characters (2026-12-06): unbounded, every "select" of a long
# run of words (and every "{" of a long run of braces) rescanned the rest of the run, so
# "select " * 30,000 took ~54 s. They match as before wherever the span is under 400
# characters, which holds for every prompt of evals/ (the test after the next).
UNBOUNDED = {
    "select list": r"\bselect\s+[\w*,\s]+\s+from\b",
    "triple-stash": r"\{\{\{[^}]+\}\}\}",
}
BOUNDED = {
    "select list": r"\bselect\s+[\w*,\s]{1,400}\s+from\b",
    "triple-stash": r"\{\{\{[^}]{1,400}\}\}\}",
}
_SQLISH = st.lists(
    st.sampled_from(
        ["select", "SELECT", "from", " ", "  ", "a", "b_1", ",", "*", "{", "}", "\n", "."]
    ),
    max_size=40,
).map("".join)


def test_the_shipped_families_hold_the_bounded_alternatives() -> None:
    assert "select\\s+[\\w*,\\s]{1,400}\\s+from" in _CODE_SOURCES["present"]
    assert "select\\s+[\\w*,\\s]+\\s+from" not in _CODE_SOURCES["present"]
    assert BOUNDED["triple-stash"] in _HAZARD_SOURCES["markup-sink"]
    assert UNBOUNDED["triple-stash"] not in _HAZARD_SOURCES["markup-sink"]


@settings(max_examples=400)
@given(_SQLISH)
def test_the_bounded_alternatives_match_where_the_unbounded_did(text: str) -> None:
    for name, old in UNBOUNDED.items():
        was = re.compile(old, FLAGS).search(text) is not None
        assert (re.compile(BOUNDED[name], FLAGS).search(text) is not None) == was, name


def test_every_prompt_of_evals_is_read_alike_by_the_bounded_alternatives() -> None:
    evals = ROUTING.parent
    for path in sorted(evals.rglob("*.jsonl")):
        for line in path.read_text("utf-8").splitlines():
            prompt = str(json.loads(line).get("prompt") or "") if line.strip() else ""
            for name, old in UNBOUNDED.items():
                was = re.compile(old, FLAGS).search(prompt) is not None
                now = re.compile(BOUNDED[name], FLAGS).search(prompt) is not None
                assert now == was, (path.name, name)


_PIECES = st.tuples(
    st.sampled_from(["a", " ", "\n", "\t", "b.", "\u00a0", " \n"]), st.integers(1, 150)
)


@given(st.lists(_PIECES, max_size=8).map(lambda ps: "".join(piece * n for piece, n in ps)))
def test_bounded_cuts_only_long_whitespace_runs(text: str) -> None:
    out = bounded(text)
    assert bounded(out) == out
    assert all(len(run) <= MAX_RUN for run in re.findall(r"\s+", out))
    assert re.sub(r"\s", "", out) == re.sub(r"\s", "", text)  # no other character moves
    if all(len(run) <= MAX_RUN for run in re.findall(r"\s+", text)):
        assert out is text
    for run_in, run_out in zip(re.findall(r"\s+", text), re.findall(r"\s+", out), strict=True):
        assert run_out == run_in[:MAX_RUN]  # a run keeps its first characters (newlines first)


def test_no_prompt_the_routers_were_measured_on_has_a_longer_run() -> None:
    for path in sorted(ROUTING.glob("*.jsonl")):
        for line in path.read_text("utf-8").splitlines():
            if line:
                prompt = json.loads(line)["prompt"]
                assert bounded(prompt) is prompt, (path.name, json.loads(line)["id"])


HOSTILE = {
    "spaces": " " * 200_000,
    "newlines": "\n" * 200_000,
    "a run of one letter": "a" * 200_000,
    "dotted names": "a." * 100_000,
    "indented blank lines": "x\n" + "    \n" * 40_000 + "y",
    "select words": "SELECT " * 30_000,
    "open braces": "{{{" + "{" * 200_000,
    # the context block (v19) takes fences and code lines apart from the prose around them
    "unclosed fences": "Tidy this:\n" + "```\nx = 1\n" * 25_000,
    "code and prose lines": "Rename these, it is a demo.\n" + "x = f(y);\nwords here\n" * 10_000,
}


@pytest.mark.parametrize("profiler", ["semantic", "keywords"])
def test_hostile_prompts_are_profiled_in_seconds_not_hours(profiler: str) -> None:
    """Before: 40,000 spaces took ~40 s of one pattern and 100,000 ``a.`` pairs hours; a
    quadratic pattern on these 200,000 characters cannot finish inside the bound."""
    opts = {"release": "v22", "backend": "numpy"} if profiler == "semantic" else {}
    p = make_profiler(RiskSettings(profiler=profiler, options=opts))
    p.profile("warm up")
    for name, prompt in HOSTILE.items():
        with deadline(30, name):  # a quadratic pattern raises here instead of running for hours
            p.profile(prompt)
