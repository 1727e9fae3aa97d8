"""A wall-clock bound on a block of test code, for the hostile-input tests.

Why one helper: a pattern or a loop that backtracks on hostile text runs for minutes or hours,
and a test of it must fail instead. ``re`` checks for signals while it matches, so SIGALRM
interrupts a runaway pattern. What the alarm raises is not an ``Exception``, so an ``except
Exception`` fallback in the code under test (the YAML reader has one) cannot swallow it, and
it is turned into a fresh ``AssertionError`` outside the interrupted frame, whose traceback
pytest can always format (one raised inside a list search once crashed its formatter).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


class Expired(BaseException):
    """The block's time is up (raised from the alarm, inside whatever the block was doing)."""


@contextmanager
def deadline(seconds: int, what: str) -> Iterator[None]:
    """Fail with "``what``: still running after ``seconds`` s" when the block runs past it."""

    def expire(signum: int, frame: object) -> None:
        raise Expired

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    except Expired:
        raise AssertionError(f"{what}: still running after {seconds} s") from None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
