"""The hostile-input tests' bound (``tests/deadline.py``) fails a runaway block in time, even
one that swallows every ``Exception``."""

from __future__ import annotations

import re
import time

import pytest
from deadline import deadline


def test_a_runaway_pattern_fails_the_block_at_its_deadline() -> None:
    started = time.monotonic()
    expected = r"^backtracking: still running after 1 s$"
    with pytest.raises(AssertionError, match=expected), deadline(1, "backtracking"):
        re.search(r"(a|aa)+$", "a" * 60 + "b")  # ~forever with re
    assert time.monotonic() - started < 10


def test_a_fallback_that_swallows_exceptions_cannot_hide_it() -> None:
    with pytest.raises(AssertionError, match="still running"), deadline(1, "swallowed"):
        try:
            while True:
                time.sleep(0.01)
        except Exception:  # what a reader's fallback does
            pass


def test_a_block_in_time_is_untouched_and_the_alarm_is_cleared() -> None:
    with deadline(5, "quick"):
        value = sum(range(1000))
    assert value == 499500
    time.sleep(0)  # no alarm left to fire later
