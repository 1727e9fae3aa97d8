"""A dataset error names `file:line:col`, the column that of the bad value: a property over any
JSON row and any spacing, and the messages a suite author sees."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loomc.eval.dataset import DatasetError, parse_dataset
from loomc.eval.positions import column_of

_SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
_SPACING = st.sampled_from([(",", ":"), (", ", ": "), (" ,  ", " :\t")])


def _paths(
    value: Any, prefix: tuple[str | int, ...] = ()
) -> list[tuple[tuple[str | int, ...], Any]]:
    """Every path into ``value`` with the value found there."""
    found = [(prefix, value)]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


@settings(max_examples=300, deadline=None)
@given(
    row=st.dictionaries(st.text(max_size=6), _VALUES, max_size=5),
    spacing=_SPACING,
    indent=st.integers(0, 3),
    ascii_only=st.booleans(),
)
def test_the_column_points_at_the_value_the_path_names(
    row: dict[str, Any], spacing: tuple[str, str], indent: int, ascii_only: bool
) -> None:
    line = " " * indent + json.dumps(row, separators=spacing, ensure_ascii=ascii_only)
    for path, value in _paths(row):
        column = column_of(line, path)
        assert column is not None, path
        decoded, _ = json.JSONDecoder().raw_decode(line, column - 1)
        assert decoded == value, (path, line)


@given(
    line=st.text(max_size=40), path=st.lists(st.text(max_size=3) | st.integers(-2, 5), max_size=3)
)
def test_any_text_and_any_path_give_a_column_or_none_never_an_error(
    line: str, path: list[str | int]
) -> None:
    column = column_of(line, path)
    assert column is None or 1 <= column <= len(line)


def test_a_missing_path_is_none() -> None:
    line = '{"id": "a", "checks": [{"type": "x"}]}'
    assert column_of(line, ("prompt",)) is None
    assert column_of(line, ("checks", 1)) is None
    assert column_of(line, ("id", 0)) is None  # a string holds no members
    assert column_of(line, ("checks", True)) is None  # JSON has no boolean index
    assert column_of(line, ("checks", 0, "type")) == line.index('"x"') + 1


def test_a_key_given_twice_points_at_the_value_json_keeps() -> None:
    line = '{"id": 1, "id": 2}'
    assert json.loads(line)["id"] == 2
    assert column_of(line, ("id",)) == line.index("2") + 1


def _problems(text: str) -> list[str]:
    with pytest.raises(DatasetError) as caught:
        parse_dataset(text, "d.jsonl")
    return caught.value.messages


def test_each_problem_names_the_column_of_its_value() -> None:
    rows = [
        '{"prompt": "no id"}',
        '  {"id": "b", "prompt": "x", "rubric": 5, '
        '"checks": [{"type": "contains", "value": "a"}, {"type": "nope"}]}',
        '{"id": "c", "prompt": "x"}',
        '{"id": "c", "prompt": "again", "expectedEscalation": "yes"}',
        '{"id": "c", "prompt": "x",, }',
        '   {"id": "e", "prompt": "x",, }',
    ]
    col = [row.index for row in rows]  # 0-based offsets; a column is one more
    messages = _problems("\n".join(rows) + "\n")
    nope = '{"type": "nope"}'
    valid = "contains, contains-any, equals, icontains, json-valid, not-contains, regex"
    yes = '"yes"'
    bad_name = "invalid JSON: Expecting property name enclosed in double quotes"
    assert messages == [
        "d.jsonl:1:1: 'id' must be a non-empty string",
        f"d.jsonl:2:{col[1]('5') + 1}: 'rubric' must be a string",
        f"d.jsonl:2:{col[1](nope) + 1}: checks[1]: unknown check type 'nope' (valid: {valid})",
        f"d.jsonl:4:{col[3](yes) + 1}: 'expectedEscalation' must be true or false",
        f"d.jsonl:5:{col[4](',,') + 2}: {bad_name}",
        f"d.jsonl:6:{col[5](',,') + 2}: {bad_name}",
    ]


def test_a_duplicate_id_points_at_the_second_id() -> None:
    rows = ['{"id": "c", "prompt": "x"}', '{"prompt": "y",   "id": "c"}']
    second = rows[1].index('"c"') + 1
    assert _problems("\n".join(rows)) == [
        f"d.jsonl:2:{second}: duplicate id 'c' (first defined on line 1)"
    ]


def test_a_json_array_is_told_apart_from_jsonl() -> None:
    assert _problems('[{"id": "a", "prompt": "x"}]\n') == [
        "d.jsonl:1:1: expected a JSON object, got list (a dataset is JSONL: one JSON object per line)"
    ]
