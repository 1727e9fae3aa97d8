"""Small text helpers shared by every stage: well-formed provider text, did-you-mean hints,
JSON objects in model replies."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any


def well_formed(text: str) -> str:
    """``text`` with lone surrogates (a provider's JSON ``"\\ud800"``) replaced by U+FFFD, so
    it can be encoded, journaled and printed; other text is returned as it is."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """``did you mean 'drafter'?`` for the closest known name, or None."""
    import difflib  # only when a name is unknown: its import compiles regexes

    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f"did you mean {matches[0]!r}?" if matches else None


MAX_JSON_DEPTH = 32
"""The deepest JSON a model reply may nest and still be read (verdicts and plans are flat)."""
MAX_JSON_STARTS = 1_000
"""How many ``{`` of one reply are tried as the start of an object."""

_DECODER = json.JSONDecoder()
_SURROGATE = re.compile("[\ud800-\udfff]")


def json_objects(text: str) -> Iterator[dict[str, Any]]:
    """Each JSON object that starts at a ``{`` of ``text``, in reading order, nested ones
    included (trailing prose ignored). Shared by the judge's verdict and the conductor's plan.

    A model writes the reply, so the work is bounded: once an object decodes, the objects inside
    it are taken from the decoded value, not decoded again (a reply of nested objects costs one
    pass, not one per brace); an object nested past ``MAX_JSON_DEPTH`` (or past the decoder's
    recursion limit) is skipped whole, since every later walk of it would recurse too; and at
    most ``MAX_JSON_STARTS`` failed starts are tried."""
    index = text.find("{")
    failed = 0
    while index != -1 and failed < MAX_JSON_STARTS:
        try:
            value, end = _DECODER.raw_decode(text, index)
        except (ValueError, RecursionError):
            failed += 1
            index = text.find("{", index + 1)
            continue
        if isinstance(value, dict) and json_depth(value) <= MAX_JSON_DEPTH:
            yield from _dicts(value)
        index = text.find("{", end)


def _dicts(value: object) -> Iterator[dict[str, Any]]:
    """``value`` and every object inside it, in reading (pre-)order, without recursion."""
    stack: list[object] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))


def json_depth(value: object) -> int:
    """How deep ``value`` nests (a scalar is 0), without recursion."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return deepest
