"""Where a value sits in one line of JSON text, so a dataset error names `file:line:col`.

Why a second pass over the text: ``json.loads`` keeps no positions, and a dataset author fixing a
long JSONL line needs the column of the bad value, not just its line. The walk runs only for a
line that already has a problem (it reuses the stdlib decoder to skip each value, so it costs
one more decode of that line), and it never raises: any path it cannot follow yields None and
the caller falls back to the start of the row.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\n\r"


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in _WHITESPACE:
        index += 1
    return index


def _members(text: str, index: int) -> list[tuple[str | int, int]]:
    """``(key or list index, offset of its value)`` of the object or array opening at ``index``;
    a key given twice keeps its last offset, as ``json.loads`` keeps its last value."""
    opener = text[index]
    closer = "}" if opener == "{" else "]"
    found: list[tuple[str | int, int]] = []
    index = _skip(text, index + 1)
    if index < len(text) and text[index] == closer:
        return found
    position = 0
    while index < len(text):
        key: str | int = position
        if opener == "{":
            key, index = _DECODER.raw_decode(text, index)
            if not isinstance(key, str):
                raise ValueError("an object key must be a string")
            index = _skip(text, index)
            index = _skip(text, index + 1)  # past the ':'
        found.append((key, index))
        _, index = _DECODER.raw_decode(text, index)
        index = _skip(text, index)
        if index >= len(text) or text[index] == closer:
            break
        index = _skip(text, index + 1)  # past the ','
        position += 1
    return found


def column_of(line: str, path: Sequence[str | int] = ()) -> int | None:
    """The 1-based column in ``line`` where the value at ``path`` starts (``()``: the row itself),
    or None where the line does not hold that path (or is not JSON)."""
    try:
        index = _skip(line, 0)
        for step in path:
            if index >= len(line) or line[index] not in "{[":
                return None
            offsets = dict(_members(line, index))
            if step not in offsets or isinstance(step, bool):
                return None
            index = offsets[step]
    except (ValueError, IndexError, RecursionError):
        return None
    return index + 1 if index < len(line) else None
