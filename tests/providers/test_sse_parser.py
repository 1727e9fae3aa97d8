"""The SSE parser read by read, and the streamed-frame JSON shortcut, against their references.

``SSEParser`` is fed one network read's lines at a time: how the lines are grouped must never
change the events (only when they are handed on). ``openai_compat._json`` skips
``json.loads``'s Python frames for the common frame: it must give what ``json.loads`` gives, or
raise what it raises, for any text.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from loomc.providers.body import LineSplitter
from loomc.providers.openai_compat import _json
from loomc.providers.sse import SSEEvent, SSEParser

LINES = st.lists(
    st.one_of(
        st.just(""),
        st.sampled_from(["data: [DONE]", ": keep-alive", "event: payment", "id: 7", "data"]),
        st.builds(lambda s: "data: " + s, st.text(max_size=12)),
        st.builds(lambda s: "data:" + s, st.text(max_size=12)),
        st.text(max_size=16),
    ),
    max_size=30,
)


def _reference(lines: list[str]) -> list[SSEEvent]:
    """The parser as it was before it took a read at a time (a line at a time, no shortcut)."""
    out: list[SSEEvent] = []
    data: list[str] = []
    event = ""
    last_id: str | None = None
    for line in lines:
        if not line:
            if data:
                out.append(SSEEvent("\n".join(data), event or "message", last_id))
            data, event = [], ""
            continue
        if line.startswith(":"):
            continue
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
        elif name == "id":
            last_id = value
    if data:
        out.append(SSEEvent("\n".join(data), event or "message", last_id, terminated=False))
    return out


def _one_by_one(lines: list[str]) -> list[SSEEvent]:
    parser = SSEParser()
    out = [event for line in lines for event in parser.feed([line])]
    return out + parser.end()


def _clean(lines: list[str]) -> list[str]:
    """Lines as a body's splitter gives them: no line endings inside."""
    splitter = LineSplitter()
    got = splitter.feed("\n".join(lines) + "\n")
    return got + splitter.end()


@given(LINES, st.lists(st.integers(min_value=0, max_value=30), max_size=6))
def test_the_grouping_of_lines_never_changes_the_events(raw: list[str], cuts: list[int]) -> None:
    lines = _clean(raw)
    bounds = sorted({min(c, len(lines)) for c in cuts} | {0, len(lines)})
    parser = SSEParser()
    batched: list[SSEEvent] = []
    for a, b in itertools.pairwise(bounds):
        batched += parser.feed(lines[a:b])
    assert batched + parser.end() == _one_by_one(lines) == _reference(lines)


def test_the_whatwg_rules_still_hold() -> None:
    lines = [
        ": comment",
        "event: payment",
        "id: 1",
        "data: {",
        "data:}",
        "",
        "",
        "data: x",
        "unknown: y",
        "",
        "data: last",
    ]
    assert _one_by_one(lines) == [
        SSEEvent("{\n}", "payment", "1"),
        SSEEvent("x", "message", "1"),
        SSEEvent("last", "message", "1", terminated=False),
    ]


def _outcome(fn: Any, text: str) -> tuple[str, Any]:
    try:
        return "ok", fn(text)
    except json.JSONDecodeError as exc:
        return "error", (exc.msg, exc.pos)


JSONISH = st.one_of(
    st.text(max_size=40),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
        max_leaves=8,
    ).map(json.dumps),
).flatmap(lambda s: st.sampled_from([s, " " + s, s + " ", s + "x", s[:-1], "\ufeff" + s, s + "\n"]))


@given(JSONISH)
def test_the_json_shortcut_is_json_loads(text: str) -> None:
    assert _outcome(_json, text) == _outcome(json.loads, text)
