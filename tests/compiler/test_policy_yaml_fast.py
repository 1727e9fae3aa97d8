"""The libyaml fast path of the policy reader (loomc.policy.bounded_yaml) is used only where it
reads exactly as the reference PyYAML reader does: the same nodes at the same line:col, the same
data. Anything it cannot read alike goes to the reference reader, whose errors users see."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from deadline import deadline
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loomc.policy import bounded_yaml
from loomc.policy.load import load_policy_text

ROOT = Path(__file__).resolve().parents[2]
SEEDS = sorted(
    p.read_text(encoding="utf-8")
    for p in [*(ROOT / "policies").glob("*.yaml"), *(ROOT / "tests").rglob("*.yaml")]
)
FAST = bounded_yaml._FAST_LOADER
REFERENCE = bounded_yaml._BoundedLoader

pytestmark = pytest.mark.skipif(FAST is None, reason="no libyaml >= 0.2.6 here")

# What hostile or careless edits insert: YAML's indicators, quotes, escapes, breaks, unusual
# characters (which must be routed to the reference reader), numbers and keywords.
PIECES = [
    *":-?,[]{}#&*!|>'\"%@` \\.0123abcé",
    *["\n", "\r\n", "\r", "\t", "  ", "- ", ": ", ", ", "? ", "&a ", "*a", "!!str ", "---\n"],
    *["...\n", "|\n  ", ">-\n  ", "\ufeff", "\u2028", "\x85", "\x07", "0x1F", "1e3", "~", "null"],
    *["yes", "2001-12-14", "<<: *a\n", "{a: }", "[a, ]", '"\\u00e9"', "9" * 50],
]


def _nodes(node: Any) -> list[tuple[Any, ...]]:
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        start, end = n.start_mark, n.end_mark
        value = n.value if isinstance(n, yaml.ScalarNode) else None
        out.append((type(n).__name__, n.tag, value, start.line, start.column, end.line, end.column))
        stack.extend(reversed(bounded_yaml._children(n)))
    return out


def _outcome(loader: Any, text: str) -> tuple[Any, ...]:
    try:
        fast = loader is FAST
        questions = bounded_yaml._questions(text) if fast else None
        node, data = bounded_yaml._read(loader, text, fast=fast, questions=questions)
    except Exception as exc:
        return ("error", type(exc).__name__)
    return ("read", None if node is None else _nodes(node), repr(data))


def _assert_alike(text: str) -> None:
    if not bounded_yaml._usual(text):
        return  # the reference reader alone reads it
    fast = _outcome(FAST, text)
    if fast[0] == "error":
        return  # the reference reader reads it again and reports
    assert fast == _outcome(REFERENCE, text), repr(text)


@st.composite
def edited_policies(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        if draw(st.booleans()):
            text = text[:at] + draw(st.sampled_from(PIECES)) * draw(st.integers(1, 3)) + text[at:]
        else:
            text = text[:at] + text[at + draw(st.integers(1, 3)) :]
    return text


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edited_policies())
def test_edited_policies_read_alike_or_go_to_the_reference(text: str) -> None:
    _assert_alike(text)


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_yaml_fragments_read_alike_or_go_to_the_reference(text: str) -> None:
    _assert_alike(text)


def test_the_project_policies_take_the_fast_path_and_read_alike() -> None:
    fast = [t for t in SEEDS if bounded_yaml._usual(t)]
    assert len(fast) == len(SEEDS)
    for text in fast:  # the fixtures include broken policies: those stay errors
        assert _outcome(FAST, text)[0] == _outcome(REFERENCE, text)[0]
        _assert_alike(text)
    demo = (ROOT / "policies" / "demo.yaml").read_text()  # `?` in quoted regexes: still fast
    assert bounded_yaml._questions(demo) and _outcome(FAST, demo)[0] == "read"


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\nb: [1, 2\n",  # unclosed
        "a: &x [1, *x]\n",  # contains itself
        "a: " + "[" * 70 + "]" * 70 + "\n",  # deeper than 64
        "a: " + "9" * 41 + "\n",  # a number too long
        "a:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 70)) + "  " * 70 + "v: 1\n",
    ],
)
def test_errors_and_limits_are_the_reference_readers(text: str) -> None:
    assert bounded_yaml._usual(text)
    assert _outcome(FAST, text)[0] == "error" or text.count("[") > 64 or "k69" in text
    reference = REFERENCE(text)
    try:
        with pytest.raises(yaml.YAMLError) as caught:
            node = reference.get_single_node()
            bounded_yaml.expanded_size(node)
            reference.construct_document(node)
    finally:
        reference.dispose()
    source, diags = load_policy_text(text, "p.yaml")
    assert source is None and len(diags) == 1
    mark = caught.value.problem_mark  # type: ignore[attr-defined]
    assert (diags[0].span.line, diags[0].span.column) == (mark.line + 1, mark.column + 1)


# The single pattern `_usual` was first written as; it compiled in ~15 ms at every start, so the
# characters are now checked apart from the shapes. The two must agree on every text.
_ONE_PATTERN = (
    "[^\n\r\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
    "|\r(?!\n)|^%|(?:^|[\\s\\[\\]{},:])!|:[ \r\n]*[,}\\]]|[^\n]\\Z"
)
_EDGES = [
    *"\x00\x1f\x7f\x80\x9f\xa0\u2027\u2028\u2029\u202a\ud7ff\ud800\udfff\ue000",
    *"\ufefe\ufeff\ufffe\uff00\ufffd\uffff\U00010000\U0010ffff\x85\u3000\u00e9",
]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES + _EDGES) | st.text(min_size=1, max_size=3), max_size=30).map(
        "".join
    )
)
def test_the_usual_characters_are_those_of_the_one_pattern(text: str) -> None:
    import re

    assert bounded_yaml._usual(text) is (re.search(_ONE_PATTERN, text, re.MULTILINE) is None)


def test_the_usual_characters_at_each_range_edge() -> None:
    import re

    for ch in _EDGES:
        for text in (f"a: {ch}\n", f"{ch}\n", f"a: '{ch}'\n"):
            expected = re.search(_ONE_PATTERN, text, re.MULTILINE) is None
            assert bounded_yaml._usual(text) is expected, repr(ch)


def _old_questions(text: str) -> list[int]:
    """``_questions`` as it was before 2026-12-06: each ``?`` looked back to its line's start
    and matched the comment pattern there again (quadratic on a long line of them)."""
    out = []
    at = text.find("?")
    while at != -1:
        line_start = text.rfind("\n", 0, at) + 1
        if not bounded_yaml._COMMENT_LINE.match(text, line_start):
            out.append(at)
        at = text.find("?", at + 1)
    return out


@settings(max_examples=1_000)
@given(st.lists(st.sampled_from(["?", "? ", " ", "  #", "#", "\n", "\r\n", "\r", "a", "'"])))
def test_the_questions_are_found_as_before(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert bounded_yaml._questions(text) == _old_questions(text)


def test_every_yaml_file_of_the_repo_has_the_same_questions() -> None:
    tops = [d for d in ROOT.iterdir() if d.is_dir() and not d.name.startswith(".")]
    paths = sorted(p for top in tops for p in top.rglob("*.y*ml"))
    assert len(paths) >= len(SEEDS)
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert bounded_yaml._questions(text) == _old_questions(text), path


def test_a_long_line_of_questions_is_read_in_seconds() -> None:
    """Before: 40,000 spaces and 40,000 ``?`` took ~1 s, so 1,000,000 characters ~2.5 min."""
    text = " " * 500_000 + "?" * 500_000 + "\n"
    with deadline(30, "looking for question marks"):  # the reader's fallback cannot swallow it
        load_policy_text(text, "p.yaml")


@pytest.mark.parametrize("text", ["|#\n", "a: |#c\n  b\n", "a: >-#\n  b\n", "a: |2#\n    b\n"])
def test_a_comment_straight_after_a_block_header_is_the_reference_readers(text: str) -> None:
    """libyaml reads ``|#x`` as a header and a comment, PyYAML (and the spec: a comment needs a
    space before it) as an error; Hypothesis found ``'|#\\n'`` read by the fast path."""
    assert _outcome(REFERENCE, text)[0] == "error"
    assert not bounded_yaml._usual(text)
    with pytest.raises(yaml.YAMLError):
        bounded_yaml.compose_and_construct(text)
