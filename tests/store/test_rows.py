"""The store's row helpers that serve13 made cheaper write what the plain forms wrote."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from loomc.store import StoredRun
from loomc.store.base import period, run_rows, today

values = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8)
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)


@given(st.floats(min_value=0, max_value=2**34, allow_nan=False))
def test_a_period_is_the_utc_day_of_its_time(at: float) -> None:
    """The day's text is kept between calls: for any time (one after another in any order),
    it is what ``datetime`` writes for that time's UTC day."""
    assert period(at) == dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%d")


def test_today_is_the_current_utc_day() -> None:
    before = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    got = today()
    after = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    assert got in (before, after)


@given(result=st.dictionaries(st.text(max_size=6), values, max_size=5), events=st.lists(values))
def test_rows_hold_what_json_dumps_wrote(result: dict[str, Any], events: list[Any]) -> None:
    """One shared encoder writes each row's JSON byte for byte as ``json.dumps`` with the
    store's options did (the stored contents never change)."""
    run = StoredRun("r1", 1.5, "general", "lean", None, "serve", "completed", 1, 2, None, None, 3,
                    "h", result, events)  # fmt: skip
    rows, rows_events = run_rows([None, run])
    assert rows[0][-1] == json.dumps(result, default=str, separators=(",", ":"))
    assert rows_events == [
        ("r1", i, json.dumps(e, default=str, separators=(",", ":"))) for i, e in enumerate(events)
    ]
